"""What keeps the pages safe when payemu is reachable by others: response headers, the
allow-list of ``returnUrl`` origins and the origin the result is posted to.

* Every page sends a Content-Security-Policy (scripts, styles and requests from payemu
  itself only), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer`` and
  ``X-Frame-Options: DENY``. The payment page is meant to be embedded by the merchant's
  front end (``payments-library.js``), so its policy's ``frame-ancestors`` names the
  allowed origins, which browsers obey in place of ``X-Frame-Options``.
* Allowed origins: payemu's own, any loopback origin (``localhost``, ``127.0.0.1``,
  ``[::1]``, any port) and those configured (``--return-origin``, ``returnOrigins``). The
  session request of interface 1.0.11.6 carries no return URL to add one from.
* ``returnUrl`` must have an allowed origin (otherwise it is ignored, with a warning on
  the page): no open redirect carries the result token elsewhere.
* ``postMessage`` targets the embedding page's origin (``?origin=``, which the library
  sends) when allowed, else the ``returnUrl``'s, else payemu's own — never ``"*"``.

Both are decided by :mod:`emulator.http.origins` (WHATWG URL parsing, origins compared as
browsers serialize them).
"""

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
