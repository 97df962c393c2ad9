"""The one way payemu runs under uvicorn.

The ``payemu serve`` command, the pytest plugin (:mod:`emulator.testing`) and the test
suite all start servers here, so every one of them runs the same HTTP stack: uvloop when
installed, uvicorn's httptools protocol with payemu's guards (:mod:`emulator.edge.protocol`), no access log, the
app's lifespan on (background tasks start and stop with it), and SIGINT/SIGTERM ending
the process with exit status 0.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import uvicorn

from emulator.edge.allocator import map_large_blocks
from emulator.edge.protocol import http_protocol

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from emulator.domain.config import Settings

START_TIMEOUT_SECONDS = 15.0


def best_loop() -> str:
    """``uvloop`` when it is installed, else asyncio's own loop."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def config_for(
    app: ASGIApp, settings: Settings, *, log_level: str | None = None, backlog: int = 2048
) -> uvicorn.Config:
    """The uvicorn configuration every payemu server uses."""
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        loop=best_loop(),
        http=http_protocol(settings),
        ws="none",  # payemu serves no WebSocket: uvicorn need not load a WebSocket library
        access_log=False,
        log_level=log_level or settings.log_level,
        lifespan="on",
        backlog=backlog,
        timeout_graceful_shutdown=math.ceil(settings.shutdown_timeout_seconds),  # hardening
    )


class Server(uvicorn.Server):
    """uvicorn's server, stopping gracefully on SIGINT and SIGTERM with exit status 0
    (uvicorn re-raises the signal after shutting down, so a CI script's ``kill`` looked
    like a crash). In a background thread no signal handler is installed at all. After a
    signal, connections still open past the graceful-shutdown timeout are cut: uvicorn
    cancels their requests, and should the process still be up shortly after (a client that
    never closes), it ends anyway with exit status 0 and a log line."""

    on_started: Callable[[], None] | None = None  # called once it listens (payemu serve --ready-file)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self.on_started is not None:
            self.on_started()

    def handle_exit(self, sig: int, frame: object) -> None:
        super().handle_exit(sig, frame)  # type: ignore[arg-type]
        _exit_anyway_after(self.config.timeout_graceful_shutdown)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


# The young generation is collected after 50,000 allocations instead of 700, and a full
# collection is considered after 100 middle ones instead of 10: a server holding 100,000
# string tokens spent its p99 in full collections (string-token p99 13-35 ms after a charge
# run, 4.6 ms with these; charge throughput unchanged).
GC_THRESHOLDS = (50_000, 20, 100)
GRACE_MARGIN_SECONDS = 2.0
_deadline_armed = threading.Event()


def _exit_anyway_after(timeout: float | None) -> None:
    if _deadline_armed.is_set() or threading.current_thread() is not threading.main_thread():
        return
    _deadline_armed.set()

    def finish() -> None:
        from emulator.state import wait_for_final_write  # the last --state save comes first

        status = wait_for_final_write()
        print(f"payemu stopped: connections still open {timeout or 0:g} s after the signal were cut", flush=True)
        os._exit(status)

    timer = threading.Timer((timeout or 0) + GRACE_MARGIN_SECONDS, finish)
    timer.daemon = True
    timer.start()


def serve_forever(
    app: ASGIApp,
    settings: Settings,
    sock: socket.socket | None = None,
    extra: Sequence[socket.socket] = (),
    on_started: Callable[[], None] | None = None,
) -> None:
    """Serve ``app`` on ``sock`` (bound by :func:`bind_socket`) or on
    ``settings.host:settings.port`` until a signal ends it; also on the ``extra`` sockets
    (the eWallet card form's listener), calling ``on_started`` once it listens; the
    collector is tuned first (:func:`tune_collector`) and large blocks are given back to the
    system when freed (:func:`map_large_blocks`)."""
    tune_collector()
    map_large_blocks()
    server = Server(config_for(app, settings))
    server.on_started = on_started
    server.run(sockets=[sock, *extra] if sock is not None else None)


def tune_collector() -> None:
    """Called once the application is built: what start-up built (schemas, compiled
    validators, catalog, scenarios) is moved out of the garbage collector's view
    (:func:`gc.freeze`), so its full collections only walk what requests created; and the
    collector runs less often (:data:`GC_THRESHOLDS`); it is turned on if start-up had turned
    it off. Nothing is collected first: the garbage start-up leaves is some 700 objects (the
    pure-Python ``datetime`` classes its C module replaces), and a full collection to free
    them cost 19 million instructions, a fortieth of the start-up."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()


def bind_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (not yet listening), so "address in use" is known
    before anything says the server is listening; raises OSError."""
    # an ASCII name goes as bytes: a str is encoded by the IDNA codec first, whose import
    # (with unicodedata and stringprep) took 2 ms of the start-up
    name = host.encode("ascii") if host.isascii() else host
    infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def loopback_socket(port: int = 0) -> socket.socket:
    """A bound (not yet listening) IPv4 loopback socket; port 0 picks a free one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


class BackgroundServer:
    """A payemu server in a daemon thread on a loopback port (``port``, or a free one), for
    tests and the pytest plugin. ``url`` is its base URL; :meth:`stop` ends it."""

    def __init__(
        self, app: ASGIApp, settings: Settings, *, log_level: str = "warning", backlog: int = 2048, port: int = 0
    ) -> None:
        began = time.perf_counter()
        self.app = app
        sock = loopback_socket(port)  # OSError when ``port`` is taken
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = Server(config_for(app, settings, log_level=log_level, backlog=backlog))
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, name="payemu-server", daemon=True
        )
        self.thread.start()
        deadline = began + START_TIMEOUT_SECONDS
        while not self.server.started:
            if not self.thread.is_alive() or time.perf_counter() > deadline:
                self.stop()
                sock.close()
                raise RuntimeError("the payemu server did not start")
            time.sleep(0.002)
        self.startup_seconds = time.perf_counter() - began

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
