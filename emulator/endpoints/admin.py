"""The admin key: what protects a shared or exposed payemu.

With ``--admin-key`` set, creating tenants, reloading scenario files and the dashboard
need it (``X-Admin-Key``); without one they are open, and the banner warns loudly when
payemu listens beyond loopback."""

from __future__ import annotations

from collections.abc import Mapping

from emulator.domain import errors
from emulator.domain.config import Settings, is_loopback

HEADER = "X-Admin-Key"


def allowed(settings: Settings, given: str | None) -> bool:
    """True when no admin key is set or ``given`` is it (in constant time)."""
    return settings.admits_admin(given)


def require(settings: Settings, headers: Mapping[str, str]) -> None:
    given = headers.get(HEADER.lower())
    if not allowed(settings, given):
        reason = "The X-Admin-Key header is missing." if not given else "The X-Admin-Key is not valid."
        raise errors.ApiError(401, [(HEADER, [f"{reason} This payemu is protected by an admin key."])])


def exposure_warning(settings: Settings) -> str | None:
    if settings.admin_key is not None or is_loopback(settings.host):
        return None
    line = "!" * 78
    return "\n".join(
        [
            line,
            f"!! WARNING: listening on {settings.host}, reachable from other machines, WITHOUT an admin key.",
            "!! Anyone who reaches this port can create tenants, reload scenarios and open the dashboard.",
            "!! Start with --admin-key <secret> (or adminKey in the config file) to protect them.",
            line,
        ]
    )
