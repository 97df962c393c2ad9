"""``payemu serve`` in a process of its own, for the tests that signal, stop or measure a
real server: a free port, the command, the wait for its health answer, and what it printed."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A loopback port nothing listens on (as the kernel hands it out)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(port: int, *options: str, **popen: Any) -> subprocess.Popen[Any]:
    """``python -m emulator serve --port PORT OPTIONS`` from the repository, started, not
    yet waited for. Its output is piped (stderr into stdout unless ``popen`` says else)."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.STDOUT)
    popen.setdefault("cwd", ROOT)
    return subprocess.Popen([sys.executable, "-m", "emulator", "serve", "--port", str(port), *options], **popen)


def wait_for_health(base: str, process: subprocess.Popen[Any], timeout: float = 30) -> None:
    """Return once ``base``'s health endpoint answers 200; fail if the server exits or
    does not answer within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(base + "/_emulator/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert process.poll() is None, f"payemu serve exited: {process.communicate()}"
        assert time.monotonic() < deadline, "payemu serve did not start"
        time.sleep(0.05)


def wait_until_up(base: str, proc: subprocess.Popen[str], timeout: float = 15.0) -> None:
    """Return once ``base`` serves its document; fail if the server exits first or does not
    answer within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.stdout.read() if proc.stdout else ''}")
        try:
            httpx.get(base + "/swagger/1.0/swagger.json", timeout=0.5)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError("server did not come up")


def output_of(process: subprocess.Popen[Any]) -> str:
    """Everything the server printed; killed first if it is still running."""
    if process.poll() is None:
        process.kill()
    out, _ = process.communicate(timeout=30)
    return out.decode() if isinstance(out, bytes) else out or ""
