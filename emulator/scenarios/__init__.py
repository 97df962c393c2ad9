"""Scenarios: YAML rules that decide each simulated gateway attempt's outcome.

- :mod:`.model` — ``Attempt``, ``RuleOutcome``, ``Rule`` and matching;
- :mod:`.schema` — the JSON Schema of a rule;
- :mod:`.loader` — files and text → checked rules, every problem as ``file:line: reason``;
- :mod:`.book` — ``ScenarioBook``: rule order, ``decide``, ``reload``;
- :mod:`.report` — ``payemu scenarios check|list|table`` and the test-card table of docs/test-cards.md
  (imported when one of its names is first read: ``payemu serve`` does not need it).
"""

from __future__ import annotations

import importlib
from typing import Any

from emulator.domain.vocabulary import DECLINE_REASONS as REJECT_REASONS
from emulator.domain.vocabulary import DEFAULT_REJECT_REASON, FAULTS, OPERATIONS, RESULT_CODES, SETTLE_RESULTS
from emulator.scenarios.loader import Problem, ScenarioError, parse_rules
from emulator.scenarios.model import Attempt, Match, Rule, RuleOutcome
from emulator.scenarios.rulebook import BUILTIN, ScenarioBook

__all__ = [
    "BUILTIN",
    "DEFAULT_REJECT_REASON",
    "FAULTS",
    "OPERATIONS",
    "REJECT_REASONS",
    "RESULT_CODES",
    "SETTLE_RESULTS",
    "Attempt",
    "Match",
    "Problem",
    "Rule",
    "RuleOutcome",
    "ScenarioBook",
    "ScenarioError",
    "builtin_table",
    "check_files",
    "describe",
    "markdown_table",
    "parse_rules",
    "write_readme",
]

_REPORT = frozenset({"builtin_table", "check_files", "describe", "markdown_table", "write_readme"})


def __getattr__(name: str) -> Any:
    if name == "report" or name in _REPORT:
        report = importlib.import_module("emulator.scenarios.report")
        return report if name == "report" else getattr(report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
