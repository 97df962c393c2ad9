"""The one place that decides where a payment page may send its result: ``returnUrl``
(the redirect after paying) and ``origin`` (the ``postMessage`` target).

URLs are parsed the way a browser parses them, by the WHATWG URL Standard (the
``ada-url`` parser, the one Node.js uses), never by :mod:`urllib.parse`: a browser reads
``http://evil.example\\@127.0.0.1/x`` as host ``evil.example`` (a backslash is a slash in
an http(s) URL) where ``urlsplit`` sees user ``evil.example\\`` at ``127.0.0.1``. What is
compared is the URL's *origin* as the browser serializes it (scheme and host in lower
case, IPv4 in dotted form, default port dropped), and what the page redirects to is the
URL as the browser would serialize it, so what was checked is what the browser follows.

Allowed origins: any loopback host (``localhost``, ``127.0.0.0/8``, ``[::1]``, any
port) and those configured (``--return-origin``, ``returnOrigins``), over http(s) only.
A URL carrying credentials (``user:pass@``) is refused outright, whatever its host: no
merchant return URL needs one, and they are the classic disguise of a foreign host.
"""

from __future__ import annotations

from functools import lru_cache

import ada_url

from emulator.config import is_loopback

SCHEMES = ("http:", "https:")
NOT_ALLOWED = (
    "The returnUrl given is not an http(s) URL of an allowed origin (loopback or --return-origin); "
    "the result is only posted to the opening window."
)


def parse(raw: str) -> ada_url.URL | None:
    """``raw`` parsed as an absolute http(s) URL with a host and no credentials, else None."""
    try:
        url = ada_url.URL(raw)
    except ValueError:
        return None
    if url.protocol not in SCHEMES or not url.hostname or url.username or url.password:
        return None
    return url


def origin_of(raw: str) -> str | None:
    """The origin (``scheme://host[:port]``) a browser gives ``raw``; None when ``raw`` is
    not an absolute http(s) URL with a host and no credentials."""
    url = parse(raw)
    return None if url is None else str(url.origin)


def canonical_origin(text: str) -> str | None:
    """A configured origin (``https://Shop.example:443``) as browsers serialize it
    (``https://shop.example``); None when ``text`` is more than an http(s) origin (a path,
    query, fragment or credentials)."""
    url = parse(text.strip())
    if url is None or url.pathname not in ("", "/") or url.search or url.hash:
        return None
    return str(url.origin)


@lru_cache(maxsize=8)
def _configured(configured: tuple[str, ...]) -> frozenset[str]:
    return frozenset(origin for origin in map(canonical_origin, configured) if origin is not None)


def allowed(origin: str | None, configured: tuple[str, ...] = ()) -> bool:
    """Whether a serialized ``origin`` (from :func:`origin_of`) may receive a result."""
    if origin is None:
        return False
    if origin in _configured(configured):
        return True
    url = parse(origin)
    return url is not None and is_loopback(url.hostname)


def return_url(raw: str | None, configured: tuple[str, ...] = ()) -> tuple[str, str | None]:
    """(URL to redirect to after paying, warning): the browser's own serialization of
    ``raw`` when its origin is allowed; ``""`` and a warning otherwise."""
    if not raw:
        return "", None
    url = parse(raw)
    if url is not None and allowed(str(url.origin), configured):
        return str(url.href), None
    return "", NOT_ALLOWED


def message_origin(asked: str | None, redirect: str, configured: tuple[str, ...] = ()) -> str:
    """The origin the page posts its result to: the embedding page's (``asked``) when
    allowed, else the redirect's; ``""`` (the page's own origin) otherwise."""
    for candidate in (asked, redirect):
        origin = origin_of(candidate) if candidate else None
        if origin is not None and allowed(origin, configured):
            return origin
    return ""
