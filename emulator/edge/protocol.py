"""The ``http`` argument of ``uvicorn.Config``: the guarded protocol
(:class:`emulator.edge.guarded.GuardedProtocol`) with one server's limits.

Kept apart from the protocol so that a missing httptools is told in one line
(:class:`MissingParser`) before anything imports uvicorn's httptools protocol.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from emulator.domain.config import ConfigError
from emulator.edge import connections

if TYPE_CHECKING:
    from emulator.domain.config import Settings


HEAD_WEIGHT_FACTOR = 4  # a head being received may weigh this many times max_head_bytes as held
WAITING_HEADS_FACTOR = 8  # and one connection's heads waiting for their answers, together


class MissingParser(ConfigError):
    """httptools is not installed: payemu's guards are built on its parser."""


def require_parser() -> None:
    """Raise :class:`MissingParser` when httptools is not installed."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        raise MissingParser(
            "the httptools package is missing (pip install httptools): payemu's HTTP guards need it"
        ) from None


def http_protocol(settings: Settings) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with the guards and limits of ``settings``: a subclass
    of :class:`~emulator.edge.guarded.GuardedProtocol` for one server, its connection cap and
    bytes in flight shared by its connections; :class:`MissingParser` without httptools."""
    require_parser()
    from emulator.edge.guarded import GuardedProtocol

    limits = {
        "max_head": settings.max_head_bytes,
        "max_head_weight": HEAD_WEIGHT_FACTOR * settings.max_head_bytes,
        "max_waiting_heads": WAITING_HEADS_FACTOR * settings.max_head_bytes,
        "max_url": settings.max_url_bytes,
        "max_body": settings.max_body_bytes,
        "head_timeout": settings.head_timeout_seconds,
        "request_timeout": settings.request_timeout_seconds,
        "write_timeout": settings.write_timeout_seconds,
        "first_due": min(settings.head_timeout_seconds, settings.request_timeout_seconds),
        "cap": connections.ConnectionCap(settings.max_connections or connections.default_cap()),
        "flight": connections.InFlight(connections.IN_FLIGHT_BYTES),
    }
    return type(GuardedProtocol.__name__, (GuardedProtocol,), {"limits": limits})
