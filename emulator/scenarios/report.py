"""Scenario rules for people: ``payemu scenarios check|list|table`` and the docs test-card table."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from emulator.catalog.loader import load_catalog
from emulator.domain.datafiles import REPOSITORY, gateway_files
from emulator.scenarios import triggers
from emulator.scenarios.loader import Problem, ScenarioError, expand_paths, load_files
from emulator.scenarios.model import RUNTIME_SOURCE, Rule, amount_text
from emulator.scenarios.rulebook import BUILTIN, ScenarioBook

if TYPE_CHECKING:
    from emulator.domain.config import Settings

PAGE = REPOSITORY / "docs" / "test-cards.md"  # the docs page holding the table
TABLE_START = "<!-- test-cards:start -->"
TABLE_END = "<!-- test-cards:end -->"


def check_files(paths: Sequence[str | Path]) -> list[str]:
    """Every problem of ``paths`` (files or directories) as ``file:line: reason``; rule
    names are also checked against the built-in test cards. Empty when all is well."""
    problems: list[Problem] = []
    files = expand_paths(paths, problems)
    builtin = None if any(f.resolve() == BUILTIN for f in files) else BUILTIN
    try:
        load_files(files, builtin)
    except ScenarioError as exc:
        problems += exc.details
    return [str(p) for p in problems]


def describe(settings: Settings, gateway: str | None = None) -> str:
    """The effective file rules, one line each: ``source  name  when → outcome``; with
    ``gateway``, only the rules that can fire on that gateway (its own triggers, payemu's
    conventions, the user's rules)."""
    book = ScenarioBook.load(settings)
    rules = book.file_rules
    if gateway is None:
        return describe_rules(rules)
    catalog = load_catalog()
    spec = catalog.get(gateway)
    if spec is None:
        raise ScenarioError(
            [Problem("--gateway", 0, f"unknown gateway {gateway!r} (known: {', '.join(catalog.names())})")]
        )
    return describe_rules(triggers.for_gateway(rules, spec, book.is_builtin))


def describe_rules(rules: Iterable[Rule]) -> str:
    rows = [(_display(rule), rule.name, f"{rule.when_text()} → {rule.outcome_text()}") for rule in rules]
    if not rows:
        return "(no rules)"
    widths = [max(len(row[i]) for row in rows) for i in (0, 1)]
    return "\n".join(f"{src:<{widths[0]}}  {name:<{widths[1]}}  {text}" for src, name, text in rows)


def _display(rule: Rule) -> str:
    if rule.source == RUNTIME_SOURCE:
        return RUNTIME_SOURCE
    path = Path(rule.source)
    try:
        shown = os.path.relpath(path.resolve(), Path.cwd()) if path.is_absolute() else str(path)
    except ValueError:
        shown = str(path)
    if shown.startswith(".."):
        shown = str(path)
    return f"{shown}:{rule.line}"


# -- the docs table ----------------------------------------------------------------------


def markdown_table(rules: Iterable[Rule]) -> str:
    """The test cards and test amounts of ``rules`` as Markdown tables: rules keyed on a
    card number, rules keyed on an amount, then any other rule."""
    cards, amounts, others = [], [], []
    for rule in rules:
        when = rule.data.get("when", {})
        if "cardNumber" in when and "amount" not in when:
            cards.append(_row([_cards(when["cardNumber"])], rule))
        elif "amount" in when and "cardNumber" not in when:
            amounts.append(_row([_amount(when["amount"])], rule))
        else:
            others.append(_row([f"`{rule.when_text()}`"], rule))
    parts = []
    tail = ["operations", "outcome", "reject reason", "notes", "rule"]
    for title, head, rows in (
        ("Test cards", "card number", cards),
        ("Test amounts (any card)", "amount", amounts),
        ("Other rules", "when", others),
    ):
        if rows:
            header = [head, *tail]
            lines = [f"**{title}**", "", _line(header), _line(["---"] * len(header)), *map(_line, rows)]
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _row(first: list[str], rule: Rule) -> list[str]:
    when = rule.data.get("when", {})
    operations = when.get("operation")
    ops = "any" if operations is None else ", ".join(operations if isinstance(operations, list) else [operations])
    if rule.is_sequence:
        outcome = " → ".join(o.operation_result_code for o in rule.outcomes) + ", then the last repeats"
    else:
        outcome = rule.outcomes[0].operation_result_code
    reasons = sorted({o.reject_reason_code for o in rule.outcomes if o.reject_reason_code})
    notes: list[str] = []
    if "attempt" in when:
        attempts = when["attempt"] if isinstance(when["attempt"], list) else [when["attempt"]]
        notes.append(f"attempt {', '.join(map(str, attempts))} only")
    notes += [f"{key} {when[key]} only" for key in ("currency", "gateway", "account") if key in when]
    for outcome_notes in dict.fromkeys(tuple(o.notes()) for o in rule.outcomes):
        notes += outcome_notes
    if rule.description:
        notes.append(rule.description)
    return [*first, ops, outcome, ", ".join(reasons) or "—", "; ".join(notes) or "—", f"`{rule.name}`"]


def _cards(value: str | list[str]) -> str:
    return "<br>".join(f"`{n}`" for n in (value if isinstance(value, list) else [value]))


def _amount(value: float | dict[str, float]) -> str:
    if isinstance(value, dict):
        return (
            f"`{amount_text(value.get('min', 0))}`–`{amount_text(value['max'])}`"
            if "max" in value
            else (f"≥ `{amount_text(value['min'])}`")
        )
    return f"`{amount_text(value)}`"


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def builtin_table() -> str:
    """The Markdown of the built-in test triggers: one section per gateway (its catalog file:
    requirements and its own triggers), then payemu's test cards and amounts."""
    rules = list(load_files([], BUILTIN, gateway_files()))
    mine = [rule for rule in rules if rule.match.gateway is None]
    return triggers.markdown(rules, load_catalog(), markdown_table(mine))


def readme_with_table(readme: str, table: str) -> str:
    """``readme`` with the text between the test-card markers replaced by ``table``."""
    start, end = readme.find(TABLE_START), readme.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError(f"the page has no {TABLE_START} ... {TABLE_END} markers")
    return readme[: start + len(TABLE_START)] + "\n" + table + readme[end:]


def write_readme(path: Path = PAGE) -> bool:
    """Regenerate the docs page's table; True when the file changed."""
    old = path.read_text(encoding="utf-8")
    new = readme_with_table(old, builtin_table())
    if new != old:
        path.write_text(new, encoding="utf-8")
    return new != old
