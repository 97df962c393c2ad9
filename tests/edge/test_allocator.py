"""The allocator setting of ``payemu serve`` (emulator/edge/allocator.py): large blocks
freed go back to the system even after glibc would have raised its threshold, so what a
request held does not stay in the process's memory for a small object's sake."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only"
)

# 64 blocks of 1 MiB, each followed by a small block from the C heap (over pymalloc's 512
# bytes) that stays: freed, the large ones are still resident unless each was mapped alone
HELD = """
import sys
from pathlib import Path

def resident_mib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

if sys.argv[1] == "fixed":
    from emulator.edge.allocator import map_large_blocks
    assert map_large_blocks()
first = b"f" * (4 << 20)
del first  # glibc raises its threshold past 4 MiB here, unless it was fixed
before = resident_mib()
large, small = [], []
for n in range(64):
    large.append(bytes([n % 256]) * (1 << 20))
    small.append(bytes([n % 256]) * 2048)
del large
print(resident_mib() - before)
"""


def _kept_mib(mode: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", HELD, mode], cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    return float(done.stdout)


def test_freed_large_blocks_leave_the_process() -> None:
    assert _kept_mib("fixed") < 8


def test_without_the_setting_they_stay() -> None:
    # what the setting changes: the same run on glibc's own rule keeps them resident
    assert _kept_mib("stock") > 48
