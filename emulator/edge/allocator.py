"""The one setting ``payemu serve`` makes to the C allocator: blocks of 128 KiB and more
are always mapped on their own, so a large body, journal page or document goes back to the
system when freed.

glibc raises that threshold each time it frees such a block, after which large blocks come
from the heap, where a small object allocated after them keeps the heap from shrinking:
the process's memory then depended on the order things happened to be freed in, not on
what it holds. Elsewhere than glibc (musl, macOS) nothing is changed.
"""

from __future__ import annotations

import ctypes
import sys

M_MMAP_THRESHOLD = -3  # glibc's <malloc.h>
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value, kept fixed


def map_large_blocks() -> bool:
    """Fix the allocator's threshold for mapping a block on its own at
    :data:`MMAP_THRESHOLD_BYTES`; whether the allocator took it (False off glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
