"""Instructions per request, counted by valgrind's cachegrind: the figure docs/performance.md
gives ("Counting instructions"), as one command.

    python -m tests.benchmarks.instructions [--paths charge] [--through protocol|app]
                                            [--requests 1000] [--base 200]

For each path, the in-process harness (:mod:`tests.benchmarks.inprocess`, ``--untimed``)
runs twice under cachegrind, once with ``--base`` requests and once with ``--base`` plus
``--requests``; the difference divided by ``--requests`` leaves out start-up and the
warm-up. Instructions do not move with the machine's load, so the figure compares two
versions of the code on a busy machine, where times cannot. The two runs of a path go
side by side (one process each). Needs valgrind (apt-get install valgrind); not part of
the test suite.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.benchmarks.run import PATHS

_TOTAL = re.compile(r"I\s+refs:\s+([\d,]+)")


def _command(path: str, through: str, requests: int) -> list[str]:
    return [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
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
    runs = [
        subprocess.Popen(_command(path, through, count), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for count in (base, base + requests)
    ]
    totals = []
    for run in runs:
        _, err = run.communicate()
        if run.returncode != 0:
            raise RuntimeError(f"the harness failed under cachegrind:\n{err.decode(errors='replace')[-2000:]}")
        totals.append(_total(err.decode(errors="replace")))
    return (totals[1] - totals[0]) // requests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", nargs="+", default=["charge"], choices=list(PATHS))
    parser.add_argument("--through", choices=["protocol", "app"], default="protocol")
    parser.add_argument("--requests", type=int, default=1000, help="requests counted (beyond --base)")
    parser.add_argument("--base", type=int, default=200, help="requests of the run subtracted")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is missing: apt-get install valgrind", file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parents[2]
    for path in args.paths:
        count = per_request(path, args.through, args.requests, args.base, root)
        print(f"{path:<14}{count:>10,} instructions per request (through the {args.through})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
