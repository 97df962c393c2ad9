"""The one way the tests start a real payemu server, in a thread or in a process of its own.

- :func:`in_thread`: payemu's own launcher (:mod:`emulator.edge.server`: uvicorn with
  payemu's protocol and guards, as ``payemu serve`` runs it) in a daemon thread of the test
  process, on a free loopback port. It serves a new payemu app of ``settings`` by default,
  or any ASGI app (a proxy, an app that fails on purpose); with ``card_form=True`` the
  eWallet card form too, on a second free port. A payemu app's responses are checked
  against the schema when it stops. :func:`server_and_tenant` makes a module's fixtures of it.
- :class:`PayemuProcess`: ``payemu serve`` (or ``payemu proxy``) as a child process, for the
  tests that signal, kill or measure a real process; its output goes to a file, never to a
  pipe nobody reads.
- :func:`payemu`: a payemu command run to its end (one that must refuse to start, say).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulator.app.build import create_app
from emulator.domain.config import Settings
from emulator.edge.server import Server, config_for, loopback_socket
from emulator.testing import Payemu, PayemuServer
from emulator.ui import cardform
from tests.support.paths import REPO_ROOT

HEALTH = "/_emulator/health"
START_SECONDS = 30.0
PYTHON_M_EMULATOR = (sys.executable, "-m", "emulator")


def free_port() -> int:
    """A loopback port nothing listens on (as the kernel hands it out)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- in this process -----------------------------------------------------------------------
class ThreadServer(PayemuServer):
    """A payemu served in a thread of the test process: the plugin's server (``base_url``,
    ``tenant()``, ``app``) with the ``port`` it listens on, uvicorn's ``server`` (its
    connections, for the edge's tests) and, when the card form is served, ``form_port``."""

    port: int
    form_port: int | None
    server: Server

    @property
    def url(self) -> str:
        """The base URL (as :class:`PayemuProcess` names it)."""
        return self.base_url


@contextlib.contextmanager
def in_thread(
    settings: Settings | None = None,
    *,
    app: Any = None,
    card_form: bool = False,
    log_level: str = "warning",
    check_schema: bool = True,
    keep_alive: float | None = None,
) -> Iterator[ThreadServer]:
    """Serve ``app`` (by default a new payemu app of ``settings``, told the port it listens
    on) on a free loopback port until the block ends; the card form on another free port
    when ``card_form``; uvicorn's keep-alive time ``keep_alive`` when given. Afterwards, fail
    if any response a payemu app sent broke the schema."""
    sock = loopback_socket()
    sockets = [sock]
    port = int(sock.getsockname()[1])
    settings = dataclasses.replace(settings or Settings(), port=port)
    served = app if app is not None else create_app(settings)
    outer = served
    form_port = None
    if card_form:
        form = loopback_socket()
        sockets.append(form)
        form_port = int(form.getsockname()[1])
        outer = cardform.PortSplit(served, cardform.app, form_port)
    config = config_for(outer, settings, log_level=log_level)
    if keep_alive is not None:
        config.timeout_keep_alive = keep_alive  # type: ignore[assignment]
    server = Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, name="payemu-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(timeout=10)
            for each in sockets:
                each.close()
            raise RuntimeError("the payemu server did not start")
        time.sleep(0.002)
    running = ThreadServer(f"http://127.0.0.1:{port}", settings.seed is not None, served)
    running.port, running.form_port, running.server = port, form_port, server
    try:
        yield running
    finally:
        running.stop()  # the shared connection pool
        server.should_exit = True
        thread.join(timeout=10)
    runtime = getattr(getattr(served, "state", None), "runtime", None)
    if check_schema and runtime is not None:
        assert not runtime.violations, "responses broke the schema:\n" + "\n".join(runtime.violations)


def server_and_tenant(**settings: Any) -> tuple[Any, Any]:
    """Two fixtures for a test module: ``server``, a payemu in a thread with ``settings``
    for the module, and ``tenant``, a new tenant of it for each test.
    ``server, tenant = server_and_tenant(...)`` at the module's top."""

    @pytest.fixture(scope="module")
    def server() -> Iterator[ThreadServer]:
        with in_thread(Settings(**settings)) as running:
            yield running

    @pytest.fixture
    def tenant(server: ThreadServer) -> Iterator[Payemu]:
        made = server.tenant()
        yield made
        made.close()

    return server, tenant


# -- in a process of its own ---------------------------------------------------------------
class PayemuProcess:
    """``payemu ARGV`` (``serve ...`` or ``proxy ...``) started in a child process, its
    output in a file; returns once it answers.

    ``--port`` is added unless ``argv`` has one or ``port_option`` is off (the port then comes
    from the environment, ``PAYEMU_PORT``): a free port, or ``port``. With
    ``ready_file``, the process is waited for until that file appears (``argv`` or ``env``
    names it) and its ``url`` and ``port`` are read from it; otherwise until ``wait_path``
    answers with anything but a server error (None: not waited for at all). ``env`` adds to
    the environment, ``unset`` removes from it; ``executable`` replaces ``python -m emulator``
    (an installed ``payemu``)."""

    def __init__(
        self,
        *argv: str,
        port: int | None = None,
        ready_file: Path | None = None,
        wait_path: str | None = HEALTH,
        up_within: float = START_SECONDS,
        env: Mapping[str, str] | None = None,
        unset: Sequence[str] = (),
        executable: Sequence[str] = PYTHON_M_EMULATOR,
        cwd: Path = REPO_ROOT,
        port_option: bool = True,
    ) -> None:
        command = [*executable, *argv]
        if "--port" not in argv and port_option:
            port = free_port() if port is None and ready_file is None else (port or 0)
            command += ["--port", str(port)]
        self.port = port or 0
        self.url = f"http://127.0.0.1:{self.port}"
        self.ready: dict[str, Any] = {}
        handle, name = tempfile.mkstemp(prefix="payemu-", suffix=".log")
        self.log = Path(name)
        environment = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        for key in unset:
            environment.pop(key, None)
        with os.fdopen(handle, "wb") as out:
            self.process = subprocess.Popen(command, cwd=cwd, env=environment, stdout=out, stderr=subprocess.STDOUT)
        try:
            if ready_file is not None:
                self._wait_for_file(ready_file, up_within)
            elif wait_path is not None:
                self.wait_until_up(wait_path, up_within)
        except BaseException:
            self.close()
            raise

    @property
    def pid(self) -> int:
        return self.process.pid

    def _wait_for_file(self, path: Path, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            self._alive_before(deadline)
            time.sleep(0.02)
        self.ready = json.loads(path.read_text())
        self.url = str(self.ready["url"])
        self.port = int(self.ready["port"])

    def wait_until_up(self, path: str = HEALTH, timeout: float = START_SECONDS) -> None:
        """Return once ``path`` answers anything but a server error; fail, with what the
        process printed, if it exits first or does not answer within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(self.url + path, timeout=1, trust_env=False).status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            self._alive_before(deadline)
            time.sleep(0.05)

    def _alive_before(self, deadline: float) -> None:
        if self.process.poll() is not None:
            raise AssertionError(f"payemu exited early ({self.process.returncode}):\n{self.output()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"payemu did not answer in time:\n{self.output()}")

    def output(self) -> str:
        """Everything the process has printed so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> tuple[int, str]:
        """Send ``sig`` and wait for the process to end: its exit status and its output."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        status = self.process.wait(timeout=timeout)
        return status, self.output()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)

    def close(self) -> None:
        """Kill the process if it still runs and remove its output file."""
        self.kill()
        self.log.unlink(missing_ok=True)

    def __enter__(self) -> PayemuProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def payemu(*args: str, timeout: float = 60, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``payemu ARGS`` to its end (for commands that must not start a server)."""
    return subprocess.run(
        [*PYTHON_M_EMULATOR, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def peak_rss_mib(pid: int) -> float:
    """The peak RSS so far (VmHWM, from /proc: Linux only) of process ``pid``, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")
