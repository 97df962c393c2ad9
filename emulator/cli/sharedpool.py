"""One HTTP connection pool for every client a test session makes (:mod:`emulator.testing`).

Building an ``httpx.Client`` on its own loads the CA bundle into a new SSL context, tens of
milliseconds each time; clients made by :class:`SharedPool` share one transport and one SSL
context, and closing them leaves the pool open for the next one. The two calls every test
makes (a tenant made, a tenant removed) go over one kept-alive standard-library connection,
a few times lighter than a general client.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

import httpx

# what a kept-alive connection the server has since closed raises on its next use
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, http.client.CannotSendRequest)


class _Unclosed(httpx.BaseTransport):
    """A transport whose ``close`` leaves the wrapped pool open for the next client."""

    def __init__(self, wrapped: httpx.HTTPTransport) -> None:
        self.wrapped = wrapped

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.wrapped.handle_request(request)

    def close(self) -> None:
        pass


KEEP_IDLE_SECONDS = 1.0


class SharedPool:
    """The transport and SSL context the clients of one session share."""

    def __init__(self) -> None:
        self.ssl_context = httpx.create_ssl_context()
        # each request goes out in two writes (head, body): without TCP_NODELAY the second
        # waits for the first one's acknowledgement
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        # a connection idle for uvicorn's keep-alive time (5 s) is being closed by the server: one
        # idle for more than a second is not reused, so a request never races that close
        limits = httpx.Limits(keepalive_expiry=KEEP_IDLE_SECONDS)
        transport = httpx.HTTPTransport(verify=self.ssl_context, socket_options=nodelay, limits=limits)
        self.transport = _Unclosed(transport)
        self._connections: dict[str, http.client.HTTPConnection] = {}
        self._lock = threading.Lock()

    def client(self, base_url: str, headers: dict[str, str] | None = None) -> httpx.Client:
        """A client on the shared pool (proxies from the environment, if any, reuse the SSL
        context)."""
        return httpx.Client(
            base_url=base_url, headers=headers, timeout=30, transport=self.transport, verify=self.ssl_context
        )

    def call(
        self, base_url: str, method: str, path: str, body: dict[str, Any] | None = None, key: str | None = None
    ) -> tuple[int, str]:
        """``method path`` at ``base_url`` (JSON ``body``, ``X-Api-Key: key``) on the kept-alive
        connection; the status and the answer's text. A connection the server closed while
        idle is opened again once."""
        parts = urlsplit(base_url)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if key is not None:
            headers["X-Api-Key"] = key
        content = json.dumps(body).encode() if body is not None else None
        with self._lock:
            for fresh in (False, True):
                connection = self._connection(base_url, parts.scheme, parts.netloc, fresh)
                try:
                    connection.request(method, parts.path.rstrip("/") + path, body=content, headers=headers)
                    answer = connection.getresponse()
                    return answer.status, answer.read().decode()
                except _STALE:
                    connection.close()
                    if fresh:
                        raise
        raise AssertionError("unreachable")

    def _connection(self, base_url: str, scheme: str, netloc: str, fresh: bool) -> http.client.HTTPConnection:
        if fresh or base_url not in self._connections:
            made: http.client.HTTPConnection
            if scheme == "https":
                made = http.client.HTTPSConnection(netloc, timeout=30, context=self.ssl_context)
            else:
                made = http.client.HTTPConnection(netloc, timeout=30)
            self._connections[base_url] = made
        return self._connections[base_url]

    def close(self) -> None:
        with self._lock:
            for connection in self._connections.values():
                connection.close()
            self._connections.clear()
        self.transport.wrapped.close()
