"""``payemu serve --access-log``: one line per request on standard output.

``127.0.0.1:53120 POST /PaymentGateway/charge 409 2.4 ms key=sand…ey``: the path's card
numbers and the API key masked, the query left out (it may carry a key). Off by default,
and then nothing of it runs."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from emulator.domain.masking import mask_text

API_KEY = b"x-api-key"


def mask_key(key: str | None) -> str:
    if not key:
        return "-"
    if len(key) < 10:
        return "…"
    return f"{key[:4]}…{key[-2:]}"


def line(scope: Scope, status: int | None, seconds: float) -> str:
    client = scope.get("client")
    where = f"{client[0]}:{client[1]}" if client else "-"
    key = next((value.decode("latin-1") for name, value in scope.get("headers", ()) if name == API_KEY), None)
    shown = "-" if status is None else str(status)  # None: closed without an answer
    path = mask_text(scope.get("path", ""))
    return f"{where} {scope.get('method', '-')} {path} {shown} {seconds * 1000:.1f} ms key={mask_key(key)}"


class AccessLog:
    """The ASGI app ``app``, writing one line to ``out`` per HTTP request."""

    def __init__(self, app: ASGIApp, out: TextIO | None = None) -> None:
        self.app = app
        self.out = out

    def __getattr__(self, name: str) -> Any:  # app.state and the like stay reachable
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        logged = _Logged(scope, send)
        try:
            await self.app(scope, receive, logged.send)
        finally:
            self._write(logged)

    def _write(self, logged: _Logged) -> None:
        out = self.out or sys.stdout
        status = logged.status[0] if logged.status else None
        out.write(line(logged.scope, status, time.perf_counter() - logged.began) + "\n")
        out.flush()


class _Logged:
    """One request's answer as the access log sees it: its status, its time."""

    def __init__(self, scope: Scope, send: Send) -> None:
        self.scope = scope
        self.began = time.perf_counter()
        self.status: list[int] = []
        self._send = send

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status.append(message["status"])
        await self._send(message)


def wrap(app: ASGIApp, out: TextIO | None = None) -> AccessLog:
    return AccessLog(app, out)
