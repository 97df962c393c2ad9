"""``payemu serve --state FILE`` as a child process, for the tests of the state file that
need a real process (signals, exit status, stderr)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.serving import free_port, wait_until_up

ROOT = Path(__file__).resolve().parents[1]


def payemu(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run ``payemu ARGS`` to the end (for commands that must not start a server)."""
    return subprocess.run(
        [sys.executable, "-m", "emulator", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


class StateServer:
    """A payemu server on a free port keeping its state in ``path``."""

    def __init__(self, path: Path, *extra: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "emulator", "serve", "--port", str(self.port), "--state", str(path), *extra],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            wait_until_up(self.base, self.proc)
        except BaseException:
            self.kill()
            raise

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, sig: int) -> tuple[int, str]:
        """Send ``sig``; the exit status and everything the server printed."""
        self.proc.send_signal(sig)
        status = self.proc.wait(timeout=30)
        return status, self.proc.stdout.read() if self.proc.stdout else ""


def leftovers(path: Path) -> list[str]:
    """Files beside the state file that are not it (temporary files, SQLite's logs)."""
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name and path.name in p.name)
