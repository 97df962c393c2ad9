"""Peak memory under the probes of what clients can make payemu hold beyond its edge
(docs/reference/limits.md), each on a fresh server.

    python -m tests.benchmarks.held [--only journal,accounts,interface] [--checkout DIR]

Printed per probe: the peak RSS (VmHWM) against the 384 MiB ceiling, the budget the control
API reports, and the answers by status. ``--checkout`` serves another checkout of payemu.
Never part of the suite.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tests.support.paths import REPO_ROOT
from tests.support.probes import PROBES, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(PROBES), help="probes to run, comma-separated")
    parser.add_argument("--checkout", type=Path, default=REPO_ROOT, help="serve this checkout of payemu")
    args = parser.parse_args()
    for name in args.only.split(","):
        print(run(name, PROBES[name](), args.checkout).line(), flush=True)


if __name__ == "__main__":
    main()
