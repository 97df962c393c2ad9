"""What a ``kill -9`` under a saturating load loses with ``--state`` (the figures in
docs/state.md), and what the durability bound costs in throughput.

    python -m tests.benchmarks.durability [--clients 2] [--seconds 30] [--checkout DIR] [--no-state]

``--clients`` keep-alive connections charge as fast as payemu answers for ``--seconds``;
then the server gets SIGKILL and the state file is read. Printed: charges acknowledged,
charges in the file, those lost, and how many of the lost were acknowledged more than
:data:`~emulator.state.gate.BOUND_SECONDS` before the kill (the promise: none), the oldest
lost one's age, and the charges answered per second. ``--no-state`` measures the same
load without a state file (the cost of ``--state``); ``--checkout`` serves another
checkout of payemu (``python -m emulator`` run there) for a before and after.
Never part of the suite.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from emulator.state.gate import BOUND_SECONDS
from tests.support.durability import run
from tests.support.paths import REPO_ROOT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--checkout", type=Path, default=REPO_ROOT, help="serve this checkout of payemu")
    parser.add_argument("--no-state", action="store_true", help="no --state: the throughput without a file")
    parser.add_argument("--bound", type=float, default=BOUND_SECONDS, help="the bound the lost writes are held to")
    args = parser.parse_args()
    seconds = min(args.seconds, 120.0)  # a load on a shared machine stays short
    out = run(args.clients, seconds, args.checkout, state=not args.no_state)
    print(f"{args.clients} clients, {seconds:g} s, {args.checkout}{'' if not args.no_state else ' (no --state)'}:")
    print(out.report(args.bound))
    sys.exit(1 if out.lost_beyond(args.bound) else 0)


if __name__ == "__main__":
    main()
