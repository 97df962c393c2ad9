"""uvicorn's ``X-Forwarded-*`` handling, run only for a request it may change.

uvicorn wraps the app in its proxy-headers middleware, which takes the client's address
and scheme from ``X-Forwarded-For`` and ``X-Forwarded-Proto`` when the peer is a trusted
proxy (``forwarded_allow_ips``) and passes every other request on unchanged. A request
carrying neither header is therefore handed to the app it wraps directly; one carrying
either goes through the middleware, which decides with uvicorn's own rules.
"""

from __future__ import annotations

from typing import Any

from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware


def unwrapped(app: Any) -> Any:
    """The app uvicorn's proxy-headers middleware wraps (``app`` itself when it is not that middleware)."""
    return app.app if isinstance(app, ProxyHeadersMiddleware) else app


def forwarding(headers: list[tuple[bytes, bytes]]) -> bool:
    """True when ``headers`` (names lowered, as uvicorn keeps them) hold one the middleware reads."""
    for name, _ in headers:  # noqa: SIM110 (a loop: any() over a generator costs more)
        if name == b"x-forwarded-for" or name == b"x-forwarded-proto":
            return True
    return False
