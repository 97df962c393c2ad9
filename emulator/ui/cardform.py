"""payemu's card-entry form where the real eWallet JS library looks for it on a developer
machine: ``http://localhost:4200//pay/#/cardEntry`` (note the double slash).

``--card-form-port`` (4200; 0 picks a free port, ``--no-card-form`` turns it off) listens in
the same process; :class:`PortSplit` sends what arrives there to :func:`app`. The card goes
to the library endpoints (:mod:`emulator.ui.library`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from emulator.contract.wire import error_response
from emulator.domain import errors
from emulator.endpoints.deferred import OnFirstCall

DEFAULT_PORT = 4200
HERE = Path(__file__).resolve().parent
FILES = {
    "": (HERE / "form" / "index.html", "text/html; charset=utf-8"),
    "cardform.js": (HERE / "form" / "cardform.js", "text/javascript; charset=utf-8"),
    "payemu.css": (HERE / "static" / "payemu.css", "text/css; charset=utf-8"),
    "favicon.svg": (HERE / "static" / "favicon.svg", "image/svg+xml"),
}
# The page is embedded by (or opened from) the merchant's page, on any local origin, and
# calls payemu's library endpoints, wherever the session token's url says they are.
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self' http: https:; base-uri 'none'; object-src 'none'; frame-ancestors *"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


async def _file(request: Request) -> Response:
    found = FILES.get(request.path_params.get("name", ""))
    if found is None:
        return _missing(request, "payemu's card form has no such file")
    path, media = found
    return FileResponse(path, media_type=media, headers=HEADERS)


# The library asks the form's site for its strings, ``assets/i18n/{language}.json``, with an
# (empty) Authorization header: a CORS request, preflighted. An empty map makes it use the
# strings it bundles, in the page's language.
LANGUAGE_FILE = r"[a-z]{2}\.json"
CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, OPTIONS",
    "Access-Control-Allow-Headers": "authorization, content-type",
    "Access-Control-Max-Age": "600",
}


async def _strings(request: Request) -> Response:
    headers = {**HEADERS, **CORS}
    if request.method == "OPTIONS":
        return Response(status_code=204, headers=headers)
    if not re.fullmatch(LANGUAGE_FILE, request.path_params["name"]):
        return _missing(request, "payemu's card form has strings for two-letter languages only", headers)
    return JSONResponse({}, headers=headers)


async def _home(request: Request) -> Response:
    return RedirectResponse("/pay/")


def _missing(request: Request, message: str, headers: dict[str, str] = HEADERS) -> Response:
    """A 404 in the API's error shape (``[{"fieldName": "path", "errors": [...]}]``)."""
    response = error_response(errors.not_found("path", f"{message}: {request.method} {request.url.path}."))
    response.headers.update(headers)
    return response


async def _router_error(request: Request, exc: Exception) -> Response:
    """The router's 404 and 405 on the form's port, as the API answers them."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        allowed = [method for method in (exc.headers or {}).get("Allow", "").split(", ") if method]
        response = error_response(errors.method_not_allowed(request.method, allowed))
        response.headers.update(HEADERS)
        return response
    return _missing(request, "payemu's card form has no such page")


def app() -> Starlette:
    """The form's own little site: ``/pay/`` (the page; the library adds ``#/cardEntry``),
    its script, style and icon, and the library's ``/pay/assets/i18n/*.json``."""
    routes = [
        Route("/", _home, methods=["GET"]),
        Route("/pay/", _file, methods=["GET"]),
        Route("/pay/assets/i18n/{name}", _strings, methods=["GET", "OPTIONS"]),
        Route("/pay/{name}", _file, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={404: _router_error, 405: _router_error})


class SingleSlash:
    """Collapse repeated slashes in the path (``//pay/`` → ``/pay/``): Starlette's routes
    do not match the library's double slash."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and "//" in path:
            scope = {
                **scope,
                "path": "/" + "/".join(part for part in path.split("/") if part) + ("/" if path.endswith("/") else ""),
            }
        await self.inner(scope, receive, send)


class PortSplit:
    """One ASGI app for two listeners: requests that arrived on ``port`` go to the form's
    site, which ``make_form`` makes on the first of them; the rest (and the lifespan) to
    ``main``."""

    def __init__(self, main: ASGIApp, make_form: Callable[[], ASGIApp], port: int) -> None:
        self.main = main
        self.form = OnFirstCall(lambda: SingleSlash(make_form()))
        self.port = port
        self.state = getattr(main, "state", None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._on_form_port(scope):
            await self.form(scope, receive, send)
            return
        await self.main(scope, receive, send)

    def _on_form_port(self, scope: Scope) -> bool:
        server = scope.get("server")
        return server is not None and server[1] == self.port
