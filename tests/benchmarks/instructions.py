"""Instructions per request, counted by valgrind's cachegrind: the figure docs/performance.md
gives ("Counting instructions"), as one command.

    python -m tests.benchmarks.instructions [--paths charge] [--through protocol|app]
                                            [--requests 1000] [--base 200]
    python -m tests.benchmarks.instructions --startup

For each path, the in-process harness (:mod:`tests.benchmarks.inprocess`, ``--untimed``)
runs twice under cachegrind, once with ``--base`` requests and once with ``--base`` plus
``--requests``; the difference divided by ``--requests`` leaves out start-up and the
warm-up. Instructions do not move with the machine's load, so the figure compares two
versions of the code on a busy machine, where times cannot. The two runs of a path go
side by side (one process each), with the bytecode compiled first and one hash seed, so
that a count of the same code comes out the same.

``--startup`` counts instead what ``payemu serve`` executes from its launch to its first
answer (``GET /Utils/apiKey``) and its stop on SIGTERM, after one start without valgrind,
and then the same for the bare Starlette app the timed benchmark compares with.

Needs valgrind (apt-get install valgrind); not part of the test suite.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.benchmarks.run import BARE, KEY, PATHS, SERVER_ENV, free_port, start, stop

_TOTAL = re.compile(r"I\s+refs:\s+([\d,]+)")
CACHEGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]


# The counted runs keep the bytecode cache, compiled before they start (two runs starting
# together would otherwise race to compile what changed, one of them paying for it), and
# hash strings with one seed: two counts of the same code then differ by a few instructions.
COUNTED_ENV = {**SERVER_ENV, "PYTHONHASHSEED": "0"}


def compile_first(cwd: Path) -> None:
    """Compile payemu's and the harness's modules into the bytecode cache."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "emulator", "tests"], cwd=cwd, env=SERVER_ENV, check=True)


def _command(path: str, through: str, requests: int) -> list[str]:
    return [
        *CACHEGRIND,
        sys.executable,
        "-m",
        "tests.benchmarks.inprocess",
        "--through",
        through,
        "--paths",
        path,
        "--untimed",
        "--requests",
        str(requests),
    ]


def _total(output: str) -> int:
    found = _TOTAL.search(output)
    if found is None:
        raise RuntimeError(f"cachegrind printed no instruction total:\n{output[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_request(path: str, through: str, requests: int, base: int, cwd: Path) -> int:
    """Instructions one request of ``path`` executes (see the module doc)."""
    compile_first(cwd)
    runs = [
        subprocess.Popen(
            _command(path, through, count), cwd=cwd, env=COUNTED_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for count in (base, base + requests)
    ]
    totals = []
    for run in runs:
        _, err = run.communicate()
        if run.returncode != 0:
            raise RuntimeError(f"the harness failed under cachegrind:\n{err.decode(errors='replace')[-2000:]}")
        totals.append(_total(err.decode(errors="replace")))
    return (totals[1] - totals[0]) // requests


def startup(cwd: Path, timeout: float = 600.0, argv: list[str] | None = None) -> int:
    """Instructions ``payemu serve`` (or ``argv``, less its port) executes from its launch
    to its first answer and its stop (see the module doc)."""
    argv = [*(argv or [sys.executable, "-m", "emulator", "serve", "--log-level", "warning"]), "--port"]
    port = free_port()
    compile_first(cwd)
    stop(start([*argv, str(port)], f"http://127.0.0.1:{port}", "/Utils/apiKey", cwd)[0])  # and the OS's file cache
    port = free_port()
    counted = subprocess.Popen(
        [*CACHEGRIND, *argv, str(port)], cwd=cwd, env=COUNTED_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + timeout
    while True:
        if counted.poll() is not None or time.monotonic() > deadline:
            counted.kill()
            raise RuntimeError("payemu serve did not answer under cachegrind")
        try:
            answer = httpx.get(f"http://127.0.0.1:{port}/Utils/apiKey", headers={"X-Api-Key": KEY}, timeout=30)
        except httpx.TransportError:
            time.sleep(0.2)
            continue
        if answer.status_code == 200:
            break
    counted.send_signal(signal.SIGTERM)
    _, err = counted.communicate(timeout=timeout)
    return _total(err.decode(errors="replace"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", nargs="+", default=["charge"], choices=list(PATHS))
    parser.add_argument("--through", choices=["protocol", "app"], default="protocol")
    parser.add_argument("--requests", type=int, default=1000, help="requests counted (beyond --base)")
    parser.add_argument("--base", type=int, default=200, help="requests of the run subtracted")
    parser.add_argument("--startup", action="store_true", help="count payemu serve's start to its first answer")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is missing: apt-get install valgrind", file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parents[2]
    if args.startup:
        print(f"payemu serve: {startup(root):,} instructions from launch to its first answer and its stop")
        print(f"bare Starlette on uvicorn: {startup(root, argv=BARE):,} (the yardstick of tests.benchmarks.run)")
        return 0
    for path in args.paths:
        count = per_request(path, args.through, args.requests, args.base, root)
        print(f"{path:<14}{count:>10,} instructions per request (through the {args.through})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
