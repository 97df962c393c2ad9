"""``python -m emulator`` and the ``payemu`` command.

The garbage collector is off while the command's modules are imported: start-up builds
what the server keeps, and collecting through it cost a hundredth of the start-up.
``main`` turns it on again for every command but ``serve``, which turns it on once it has
frozen what it built (``emulator.edge.server.tune_collector``)."""

from __future__ import annotations

import gc


def run() -> int:
    gc.disable()
    from emulator.cli.main import main

    return main()


if __name__ == "__main__":
    raise SystemExit(run())
