"""What keeps the pages safe when payemu is reachable by others (docs/security.md).

Every page sends a strict Content-Security-Policy. The payment page, which the merchant's
front end embeds, names the allowed origins in ``frame-ancestors``, which browsers obey in
place of ``X-Frame-Options: DENY``. Where a result may go: :mod:`emulator.endpoints.origins`."""

from __future__ import annotations

LOOPBACK_SOURCES = (
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
)


def headers(embeddable: bool, configured: tuple[str, ...] = ()) -> dict[str, str]:
    """The security headers of a page; ``embeddable`` for the payment page."""
    ancestors = " ".join(("'self'", *LOOPBACK_SOURCES, *configured)) if embeddable else "'none'"
    policy = (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; "
        f"frame-ancestors {ancestors}"
    )
    return {
        "Cache-Control": "no-store",
        "Content-Security-Policy": policy,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }
