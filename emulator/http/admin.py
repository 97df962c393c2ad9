"""The admin key: what protects a shared or exposed payemu.

With ``--admin-key`` (or ``adminKey`` in the config) set, creating tenants
(``POST /_emulator/tenants``), reloading scenario files (``POST /_emulator/scenarios/reload``)
and the dashboard need it in the ``X-Admin-Key`` header (the dashboard also takes
``?admin=``). Payment pages need no key (their signed session token is the secret),
but never list tenants. Without an admin key, those calls are open, as on a developer's
machine; :func:`exposure_warning` makes the banner say so loudly when payemu listens on
anything but loopback.
"""

from __future__ import annotations

from collections.abc import Mapping

from emulator.config import Settings, is_loopback
from emulator.http import errors

HEADER = "X-Admin-Key"


def allowed(settings: Settings, given: str | None) -> bool:
    """True when no admin key is set or ``given`` is it (compared in constant time)."""
    return settings.admits_admin(given)


def require(settings: Settings, headers: Mapping[str, str]) -> None:
    """A 401 on ``X-Admin-Key`` unless the request carries the admin key (or none is set)."""
    given = headers.get(HEADER.lower())
    if not allowed(settings, given):
        reason = "The X-Admin-Key header is missing." if not given else "The X-Admin-Key is not valid."
        raise errors.ApiError(401, [(HEADER, [f"{reason} This payemu is protected by an admin key."])])


def exposure_warning(settings: Settings) -> str | None:
    """The banner's warning when payemu is reachable from other machines without a key."""
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
