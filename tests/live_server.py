"""A real uvicorn server on a free loopback port, in a background thread, for the tests
that need real sockets (concurrency, dropped connections)."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from starlette.applications import Starlette


class LiveServer:
    def __init__(self, app: Starlette) -> None:
        self.app = app
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(app, lifespan="off", access_log=False, log_level="warning", backlog=512)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                self.stop()
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.005)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
