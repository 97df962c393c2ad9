"""The limits that keep a flood of slow clients from starving the others
(docs/http-limits-and-exposure.md).

* **Connection cap** (:class:`ConnectionCap`): at most ``max_connections`` open, by default
  the file-descriptor limit less a reserve (:func:`default_cap`). Past it, the connection
  waiting longest without a request being answered (idle, or sending a head or a body) is
  closed to make room; when all are busy, the newcomer gets a JSON ``503``.
* **Write buffer**: answers wait past :data:`WRITE_HIGH_WATER` bytes unsent; a client
  reading nothing for ``write_timeout_seconds`` is cut.
* **Bytes in flight** (:class:`InFlight`): requests still arriving, at most :data:`IN_FLIGHT_BYTES`.
"""

from __future__ import annotations

import logging
import resource
from collections.abc import Iterable
from itertools import count
from typing import Protocol, runtime_checkable

log = logging.getLogger("payemu")

WRITE_HIGH_WATER = 256 * 1024  # bytes waiting in a connection's write buffer before it pauses
WRITE_LOW_WATER = 64 * 1024  # ... and resumes
MIN_CAP = 16
IN_FLIGHT_BYTES = 64 * 1024 * 1024  # of requests arriving, held at once by the process


class InFlight:
    """The bytes of requests arriving held by one server's connections (see the module doc)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0


def default_cap(limit: int | None = None) -> int:
    """The connection cap for a file-descriptor ``limit`` (default: the process's soft
    ``RLIMIT_NOFILE``): the limit less an eighth of it, at least 64, kept for files,
    listeners, logs and the state database; never under :data:`MIN_CAP`."""
    if limit is None:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        limit = soft if soft != resource.RLIM_INFINITY else 65536
    return max(MIN_CAP, limit - max(64, limit // 8))


@runtime_checkable
class Waiting(Protocol):
    """What the cap asks of a connection (the guarded protocol answers)."""

    def waiting_since(self) -> int | None:
        """Where it stands in the order in which connections began waiting for a request
        (lower: waiting longer); None while one runs. An order, not a time: uvloop's clock
        has millisecond steps, and connections made in the same millisecond must still be
        told apart."""

    def make_room(self) -> None:
        """Close it to make room for a new connection."""


class ConnectionCap:
    """The cap shared by every connection of one server (see the module doc)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.reached = False  # logged; cleared once the count is back under 90 %
        self.waiting_order = count()  # next(...) as a connection begins waiting

    def admit(self, newcomer: object, open_connections: Iterable[object], count: int) -> bool:
        """Called as ``newcomer`` is made, ``count`` connections being open with it:
        True when it may stay (room was there, or was made by closing the longest-waiting
        idle one); False when every other connection is running a request."""
        if count <= self.limit:
            return True
        if not self.reached:
            self.reached = True
            log.warning(
                "%d connections open, the cap of %d (--max-connections; default from the file-descriptor limit): "
                "the longest-idle connections are closed to make room, and new ones refused while all are busy",
                count - 1,
                self.limit,
            )
        oldest: Waiting | None = None
        oldest_since = 0
        for connection in open_connections:
            if connection is newcomer or not isinstance(connection, Waiting):
                continue  # (a WebSocket connection, were there one, is never closed for room)
            since = connection.waiting_since()
            if since is not None and (oldest is None or since < oldest_since):
                oldest, oldest_since = connection, since
        if oldest is None:
            return False
        oldest.make_room()
        return True

    def released(self, count: int) -> None:
        """Called as a connection goes, ``count`` connections staying open."""
        if self.reached and count < self.limit * 9 // 10:
            self.reached = False
