"""The dashboard's list of scenario rules, grouped by file (paths relative to the working
directory), built-ins last and folded, each rule as ``when → then`` (card numbers masked)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emulator.domain.datafiles import GATEWAYS_DIR, data_path
from emulator.domain.masking import mask

if TYPE_CHECKING:
    from emulator.tenants.runtime import Runtime

BUILTIN_NAME = "built-in test cards and amounts"
RUNTIME = "runtime"  # rules added through POST /_emulator/scenarios (Rule.location)


def shown_path(source: str, cwd: Path | None = None) -> str:
    """A rule file's path as shown: relative to ``cwd``, else its last two parts."""
    if source == RUNTIME:
        return "added at run time (control API)"
    path = Path(source)
    if not path.is_absolute():
        return source
    base = (cwd or Path.cwd()).resolve()
    try:
        return str(path.resolve().relative_to(base))
    except ValueError:
        return os.path.join("…", *path.parts[-2:])


def _value_text(key: str, value: Any) -> str:
    if isinstance(value, Mapping):
        low, high = value.get("min"), value.get("max")
        return f"{_plain(low) if low is not None else '…'} to {_plain(high) if high is not None else '…'}"
    if isinstance(value, list):
        return " or ".join(_plain(v) for v in value)
    return _plain(value)


def _plain(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def when_text(when: Mapping[str, Any]) -> str:
    """``{amount: 9010, operation: [Charge, PreAuth]}`` → ``amount 9010.00, operation Charge or PreAuth``."""
    return ", ".join(f"{key} {_value_text(key, value)}" for key, value in when.items()) or "any operation"


def rule_row(rule: Any) -> dict[str, Any]:
    data = mask(rule.to_json())
    return {
        "name": data.get("name"),
        "line": None if str(rule.source) == RUNTIME else getattr(rule, "line", None),
        "description": data.get("description"),
        "when": when_text(data.get("when") or {}),
        "then": mask(rule.outcome_text()),
    }


def groups(rules: Iterable[Any], builtin: Path | None = None, cwd: Path | None = None) -> list[dict[str, Any]]:
    """The rules by source file, in the order the book consults them."""
    builtin = (builtin or data_path("default-scenarios.yaml")).resolve()
    found: dict[str, dict[str, Any]] = {}
    for rule in rules:
        source = str(rule.source)
        if source not in found:
            path = Path(source).resolve()
            own = source != RUNTIME and path.parent == GATEWAYS_DIR.resolve()  # a gateway's own triggers
            is_builtin = source != RUNTIME and (path == builtin or own)
            found[source] = {
                "file": f"{path.stem}'s own test inputs"
                if own
                else BUILTIN_NAME
                if is_builtin
                else shown_path(source, cwd),
                "builtin": is_builtin,
                "rules": [],
            }
        found[source]["rules"].append(rule_row(rule))
    return sorted(found.values(), key=lambda g: g["builtin"])


def view(runtime: Runtime, tenant: Any) -> list[dict[str, Any]]:
    return groups(runtime.scenarios.rules(tenant))
