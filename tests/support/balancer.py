"""Run deploy/haproxy.cfg for real on one machine: payemu instances as processes on free
loopback ports and HAProxy in front of them. Used by tests/system/test_scaleout.py and the scaling
benchmark (tests/benchmarks/scaleout.py).

The HAProxy configuration is deploy/haproxy.cfg itself, with only the addresses replaced:
the ``bind`` line, the stats socket and the ``server`` lines (in their place, keeping the
backend's ``default-server`` health-check settings and every routing rule).
"""

from __future__ import annotations

import csv
import io
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.support.paths import REPO_ROOT
from tests.support.servers import PayemuProcess, free_port

ROOT = REPO_ROOT
HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"
START_SECONDS = 30.0


def render(source: str, bind: str, servers: dict[str, str], stats_socket: Path) -> str:
    """deploy/haproxy.cfg with its addresses replaced: ``bind``, the stats socket and the
    ``server`` lines (``name`` → ``host:port``); everything else kept as it is."""
    out: list[str] = []
    seen = {"bind": 0, "stats socket": 0, "server": 0}
    for line in source.splitlines():
        words = line.split()
        indent = line[: len(line) - len(line.lstrip())]
        if words[:1] == ["bind"]:
            seen["bind"] += 1
            out.append(f"{indent}bind {bind}")
        elif words[:2] == ["stats", "socket"]:
            seen["stats socket"] += 1
            out.append(f"{indent}stats socket {stats_socket} {' '.join(words[3:])}")
        elif words[:1] == ["server"]:
            if seen["server"] == 0:
                out += [f"{indent}server {name} {address}" for name, address in servers.items()]
            seen["server"] += 1
        else:
            out.append(line)
    if seen["bind"] != 1 or seen["stats socket"] != 1 or seen["server"] < 1:
        raise ValueError(f"{HAPROXY_CFG} no longer has one bind, one stats socket and server lines: {seen}")
    return "\n".join(out) + "\n"


@dataclass
class Instance:
    """One ``payemu serve --any-key --state FILE --admin-key KEY`` process (no ``--state``
    when ``state`` is None), started and restarted on the same port."""

    name: str
    state: Path | None
    admin_key: str
    port: int = field(default_factory=free_port)
    extra: list[str] = field(default_factory=list)
    process: PayemuProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        options = ["--any-key", *(["--state", str(self.state)] if self.state else []), "--admin-key", self.admin_key]
        self.process = PayemuProcess(
            "serve", *options, "--log-level", "warning", *self.extra, port=self.port, up_within=START_SECONDS
        )

    def stop(self) -> int:
        """SIGTERM (a graceful stop); returns the exit status."""
        if self.process is None:
            return 0
        try:
            status, _ = self.process.stop(signal.SIGTERM, timeout=20)
        except subprocess.TimeoutExpired:
            status = -signal.SIGKILL
        self.process.close()
        self.process = None
        return status

    def admin(self) -> httpx.Client:
        """A client of this instance directly, with the admin key."""
        return httpx.Client(base_url=self.url, headers={"X-Admin-Key": self.admin_key}, timeout=30)


class Haproxy:
    """HAProxy running deploy/haproxy.cfg in front of ``instances``."""

    def __init__(self, instances: list[Instance], workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.socket = workdir / "haproxy.sock"
        self.config = workdir / "haproxy.cfg"
        servers = {i.name: f"127.0.0.1:{i.port}" for i in instances}
        self.config.write_text(render(HAPROXY_CFG.read_text(), f"127.0.0.1:{self.port}", servers, self.socket))
        self.log = workdir / "haproxy.log"
        self._log = self.log.open("ab")
        haproxy = shutil.which("haproxy") or "haproxy"
        self.process = subprocess.Popen([haproxy, "-db", "-f", str(self.config)], stdout=self._log, stderr=self._log)
        wait_until_healthy(self.url + "/_emulator/health", self.process, self.log)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGUSR1)  # a soft stop: connections finish
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()

    def command(self, line: str) -> str:
        """One command on HAProxy's runtime API (the stats socket)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(self.socket))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def server_stats(self, column: str) -> dict[str, str]:
        """Server name → one column of HAProxy's ``show stat`` (``status``: ``UP``,
        ``DOWN``, ...; ``scur``: requests at the server now)."""
        text = self.command("show stat").lstrip("# ")
        rows = csv.DictReader(io.StringIO(text))
        return {row["svname"]: row[column] for row in rows if row["pxname"] == "payemu" and row["type"] == "2"}

    def server_status(self) -> dict[str, str]:
        """Server name → ``UP``, ``DOWN``, ... as HAProxy's health checks see it."""
        return self.server_stats("status")

    def wait_for(self, name: str, status: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while self.server_status().get(name, "").split()[0:1] != [status]:
            if time.monotonic() > deadline:
                raise AssertionError(f"HAProxy did not see {name} {status}: {self.server_status()}")
            time.sleep(0.1)


def wait_until_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args} exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"{process.args} did not answer {url} within {START_SECONDS:g} s:\n{log.read_text()}")
