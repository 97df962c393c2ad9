"""The gateway table of docs/test-cards.md, generated from the catalog so the two never disagree.

``python -m emulator.catalog.docs_table`` prints it; ``--write-docs [PATH]`` replaces the
part of the page between ``<!-- gateways:start -->`` and ``<!-- gateways:end -->``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from emulator.catalog.catalog import LEVEL_NOTES, Catalog, GatewaySpec
from emulator.catalog.loader import load_catalog
from emulator.catalog.schema import LEVELS
from emulator.domain.datafiles import REPOSITORY
from emulator.domain.vocabulary import OPERATIONS

START = "<!-- gateways:start -->"
END = "<!-- gateways:end -->"
PAGE = REPOSITORY / "docs" / "test-cards.md"  # the docs page holding the table
_HEADER = (
    "| gateway | level | credentials (optional in italics) | tokenizes | network tokens | authorization lasts "
    "| not supported | notes |\n"
    "|---|---|---|---|---|---|---|---|"
)


def _notes(gateway: GatewaySpec) -> str:
    if gateway.always:
        return f"mock: always {'approves' if gateway.always == 'Success' else 'declines'}"
    needs = gateway.needs()
    return f"needs {' and '.join(needs)}" if needs else "—"


def _row(gateway: GatewaySpec) -> str:
    credentials = [f"`{name}`" for name in gateway.credentials]
    if gateway.listed and not credentials:
        credentials = ["any names"]
    credentials += [f"*`{name}`*" for name in gateway.optional_credentials]
    if gateway.invented_credentials and credentials:
        credentials[-1] += " (names invented by payemu: not in the public record)"
    unsupported = [op for op in OPERATIONS if op in gateway.unsupported]
    cells = [
        f"`{gateway.name}`",
        gateway.level,
        ", ".join(credentials) or "none",
        "yes" if gateway.tokenizes else "no",
        "yes" if gateway.supports_network_token else "no",
        f"{gateway.authorization_days} days",
        ", ".join(unsupported) or "—",
        _notes(gateway),
    ]
    return "| " + " | ".join(cells) + " |"


def by_level(catalog: Catalog) -> list[tuple[str, str, list[GatewaySpec]]]:
    """The gateways at each level, most known first: (level, what it means, gateways)."""
    return [(level, LEVEL_NOTES[level], [g for g in catalog if g.level == level]) for level in LEVELS]


def markdown(catalog: Catalog) -> str:
    """The gateways by level, then one row per gateway."""
    levels = ["| level | what payemu knows | gateways |", "|---|---|---|"]
    for level, note, gateways in by_level(catalog):
        names = ", ".join(f"`{g.name}`" for g in gateways)
        levels.append(f"| {level} ({len(gateways)}) | {note} | {names} |")
    return "\n".join([*levels, "", _HEADER, *(_row(gateway) for gateway in catalog)])


def replace_block(text: str, table: str) -> str:
    """``text`` with the block between the markers replaced by ``table``."""
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"the page has no {START} … {END} block")
    return pattern.sub(lambda _: f"{START}\n{table}\n{END}", text, count=1)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    table = markdown(load_catalog())
    if args[:1] in (["--write-docs"], ["--write-readme"]):
        path = Path(args[1]) if len(args) > 1 else PAGE
        path.write_text(replace_block(path.read_text(encoding="utf-8"), table), encoding="utf-8")
        return 0
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
