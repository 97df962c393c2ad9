"""The ``payemu state`` subcommands on the command line's parser: only argparse here, so
building the parser (every ``payemu`` command) does not load the state file's readers;
:mod:`emulator.state.migrate` runs them."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def add_commands(commands: Any) -> None:
    """``payemu state migrate OLD NEW`` on the ``payemu`` parser's subcommands."""
    state = commands.add_parser("state", help="convert a --state file of the old format")
    actions = state.add_subparsers(dest="action", required=True, metavar="ACTION")
    move = actions.add_parser(
        "migrate",
        help="convert a state file of the old (pickle) format into the current one",
        description="Read OLD (a --state file of payemu before the typed format) without running anything it"
        " holds, and write its tenants to NEW in the current format. OLD is left as it was.",
    )
    move.add_argument("old", metavar="OLD", type=Path, help="the state file of the old format (read only)")
    move.add_argument("new", metavar="NEW", type=Path, help="the file to write (must not exist yet)")
