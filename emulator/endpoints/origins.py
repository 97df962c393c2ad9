"""The one place that decides where a payment page may send its result (``returnUrl``,
``origin``).

URLs are parsed as a browser parses them (WHATWG, the ``ada-url`` parser), never by
:mod:`urllib.parse`, which reads ``http://evil.example\\@127.0.0.1/x`` as another host.
Allowed: loopback hosts and the configured origins, over http(s), without credentials."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from emulator.domain.config import is_loopback

if TYPE_CHECKING:
    import ada_url

SCHEMES = ("http:", "https:")
NOT_ALLOWED = (
    "The returnUrl given is not an http(s) URL of an allowed origin (loopback or --return-origin); "
    "the result is only posted to the opening window."
)


def parse(raw: str) -> ada_url.URL | None:
    """``raw`` as an absolute http(s) URL with a host and no credentials, else None."""
    import ada_url  # when a payment page first asks (not at start-up)

    try:
        url = ada_url.URL(raw)
    except ValueError:
        return None
    if url.protocol not in SCHEMES or not url.hostname or url.username or url.password:
        return None
    return url


def origin_of(raw: str) -> str | None:
    """The origin a browser gives ``raw``, or None."""
    url = parse(raw)
    return None if url is None else str(url.origin)


def canonical_origin(text: str) -> str | None:
    """A configured origin as browsers serialize it; None when it is more than an origin."""
    url = parse(text.strip())
    if url is None or url.pathname not in ("", "/") or url.search or url.hash:
        return None
    return str(url.origin)


@lru_cache(maxsize=8)
def _configured(configured: tuple[str, ...]) -> frozenset[str]:
    return frozenset(origin for origin in map(canonical_origin, configured) if origin is not None)


def allowed(origin: str | None, configured: tuple[str, ...] = ()) -> bool:
    if origin is None:
        return False
    if origin in _configured(configured):
        return True
    url = parse(origin)
    return url is not None and is_loopback(url.hostname)


def return_url(raw: str | None, configured: tuple[str, ...] = ()) -> tuple[str, str | None]:
    """(URL to redirect to, warning): the browser's serialization of ``raw`` if allowed."""
    if not raw:
        return "", None
    url = parse(raw)
    if url is not None and allowed(str(url.origin), configured):
        return str(url.href), None
    return "", NOT_ALLOWED


def message_origin(asked: str | None, redirect: str, configured: tuple[str, ...] = ()) -> str:
    """Where the page posts its result: ``asked`` when allowed, else the redirect's origin."""
    for candidate in (asked, redirect):
        origin = origin_of(candidate) if candidate else None
        if origin is not None and allowed(origin, configured):
            return origin
    return ""
