"""A synchronous client for tests that send thousands of requests to one app.

Each request is one call into a started TestClient's event loop, where httpx's ASGI
transport hands it to the app: about a quarter of the TestClient's own time per request
(the TestClient crosses threads several times a request). The answers are httpx responses.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import httpx
from starlette.testclient import TestClient
from starlette.types import ASGIApp


class Sender(Protocol):
    """What the case runners send with: a TestClient or a :class:`QuickClient`."""

    def post(self, url: str, **kwargs: Any) -> httpx.Response: ...

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response: ...


class QuickClient:
    """Requests to the app of ``started`` (a TestClient inside its ``with``), with its headers."""

    def __init__(self, started: TestClient) -> None:
        self._portal = started.portal
        assert self._portal is not None, "enter the TestClient first"
        self._client: httpx.AsyncClient = self._portal.call(_async_client, started.app, dict(started.headers))

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        assert self._portal is not None
        return self._portal.call(functools.partial(self._client.request, method, url, **kwargs))

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def close(self) -> None:
        assert self._portal is not None
        self._portal.call(self._client.aclose)


async def _async_client(app: ASGIApp, headers: dict[str, str]) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver", headers=headers)
