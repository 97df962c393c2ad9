"""One HTTP connection pool for every client a test session makes (:mod:`emulator.testing`).

Building an ``httpx.Client`` on its own loads the CA bundle into a new SSL context, tens of
milliseconds each time; clients made by :class:`SharedPool` share one transport and one SSL
context, and closing them leaves the pool open for the next one.
"""

from __future__ import annotations

import socket

import httpx


class _Unclosed(httpx.BaseTransport):
    """A transport whose ``close`` leaves the wrapped pool open for the next client."""

    def __init__(self, wrapped: httpx.HTTPTransport) -> None:
        self.wrapped = wrapped

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.wrapped.handle_request(request)

    def close(self) -> None:
        pass


class SharedPool:
    """The transport and SSL context the clients of one session share."""

    def __init__(self) -> None:
        self.ssl_context = httpx.create_ssl_context()
        # each request goes out in two writes (head, body): without TCP_NODELAY the second
        # waits for the first one's acknowledgement
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        self.transport = _Unclosed(httpx.HTTPTransport(verify=self.ssl_context, socket_options=nodelay))
        self._clients: dict[str, httpx.Client] = {}

    def client(self, base_url: str, headers: dict[str, str] | None = None) -> httpx.Client:
        """A client on the shared pool (proxies from the environment, if any, reuse the SSL
        context)."""
        return httpx.Client(
            base_url=base_url, headers=headers, timeout=30, transport=self.transport, verify=self.ssl_context
        )

    def control(self, base_url: str) -> httpx.Client:
        """The one client without a key that creates tenants at ``base_url``."""
        if base_url not in self._clients:
            self._clients[base_url] = self.client(base_url)
        return self._clients[base_url]

    def close(self) -> None:
        self._clients.clear()
        self.transport.wrapped.close()
