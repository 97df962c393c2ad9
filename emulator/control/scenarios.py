"""Control: the effective scenario rules, runtime rules per tenant, reloading the files.

Runtime rules are checked exactly like files, and more: a gateway a rule names must be in
the catalog and an account it names must be one of the tenant's. Each batch goes in front
of the tenant's earlier runtime rules, which come before every file rule."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from emulator.domain import errors
from emulator.domain.datafiles import parse_yaml
from emulator.domain.safeparse import check_yaml
from emulator.endpoints import admin
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.scenarios import Problem, ScenarioError, parse_rules
from emulator.scenarios.loader import MAX_YAML_VALUES
from emulator.scenarios.model import RUNTIME_SOURCE
from emulator.scenarios.names import Names

ACCEPTED_MEDIA = (
    "application/json",
    "text/json",
    "application/yaml",
    "application/x-yaml",
    "text/yaml",
    "text/x-yaml",
    "text/plain",
)
# "rule 'name': then.operationResultCode: reason" (the path is optional)
_RULE_PROBLEM = re.compile(
    r"^rule (?P<quote>['\"])(?P<name>.*?)(?P=quote): (?:(?P<path>[A-Za-z_]\w*(?:\[\d+\]|\.[A-Za-z_]\w*)*): )?"
    r"(?P<reason>.*)$",
    re.DOTALL,
)


def problem_entries(details: Iterable[Problem], text: str) -> list[errors.FieldErrors]:
    """Each problem of a runtime body as a 400 entry (``fieldName``: the rule's path, or ``body``)."""
    names = _rule_names(text)
    several_lines = "\n" in text.strip()
    entries: list[errors.FieldErrors] = []
    for problem in details:
        where = f"line {problem.line}: " if several_lines and problem.line else ""
        found = _RULE_PROBLEM.match(problem.reason)
        if found and found["name"] in names:
            field = f"scenarios[{names.index(found['name'])}]"
            if found["path"]:
                field += "." + found["path"]
            entries.append((field, [where + found["reason"]]))
        else:
            entries.append(("body", [where + problem.reason]))
    return entries


def _rule_names(text: str) -> list[Any]:
    import yaml  # PyYAML: when a YAML document is first read

    try:
        check_yaml(text, max_values=MAX_YAML_VALUES)  # as the rules were: never built past it
        document = parse_yaml(text)
    except (yaml.YAMLError, ValueError, RecursionError):
        return []
    if isinstance(document, dict) and "scenarios" in document:
        document = document["scenarios"]
    if isinstance(document, dict):
        document = [document]
    if not isinstance(document, list):
        return []
    return [item.get("name") if isinstance(item, dict) else None for item in document]


PAGE_SIZE = 200  # rules per page by default
PAGE_BYTES = 4 * 1024 * 1024  # rule weight per page (a rule's expanded YAML, emulator.scenarios.loader)


async def list_rules(call: Call) -> Reply:
    """One page in matching order, bounded by ``pageSize`` and :data:`PAGE_BYTES`; ``next`` for ``after``."""
    rules = call.runtime.scenarios.rules(call.tenant)
    size = call.query.get("pageSize") or PAGE_SIZE
    after = call.query.get("after")
    start = 0
    if after:
        if not after.isdigit() or int(after) > len(rules):
            raise errors.invalid("after", "Not a cursor of this listing (the rules may have changed); start again.")
        start = int(after)
    end, weight = start, 0
    while end < len(rules) and end - start < size and (end == start or weight + rules[end].weight <= PAGE_BYTES):
        weight += rules[end].weight
        end += 1
    cursor = str(end) if end < len(rules) else None
    return Reply(200, {"rules": [rule.to_json() for rule in rules[start:end]], "next": cursor})


async def add_rules(call: Call) -> Reply:
    content_type = call.headers.get("content-type", "")
    media = content_type.split(";", 1)[0].strip().lower()
    if media not in ACCEPTED_MEDIA:
        raise errors.ApiError(
            415,
            [("Content-Type", [f"Expected application/json or application/yaml, got {content_type or 'none'}."])],
        )
    text: str = call.body or ""
    if not text.strip():
        raise errors.invalid("body", "A body is required: a scenario file, a list of rules or one rule.")
    try:
        names = Names(tuple(call.runtime.catalog.names()), tuple(call.tenant.accounts))
        added = parse_rules(text, RUNTIME_SOURCE, names)
    except ScenarioError as exc:
        raise errors.invalid_many(problem_entries(exc.details, text)) from None
    try:
        call.tenant.rules.add(added)
    except ValueError as exc:
        raise errors.invalid("body", str(exc)) from None
    return Reply(201, {"rules": [rule.to_json() for rule in added]})


async def remove_all(call: Call) -> Reply:
    return Reply(200, {"removed": call.tenant.rules.clear()})


async def remove_one(call: Call) -> Reply:
    name = call.path["name"]
    if not call.tenant.rules.remove(name):
        raise errors.not_found("name", f"No runtime rule named '{name}' (file rules are changed in their files).")
    return Reply(200, {"removed": [name]})


async def reload(call: Call) -> Reply:
    admin.require(call.runtime.settings, call.headers)
    book = call.runtime.scenarios
    try:
        count = book.reload()
    except ScenarioError as exc:
        raise errors.invalid_many([("scenarios", list(exc.problems))]) from None
    return Reply(200, {"status": "reloaded", "rules": count})


HANDLERS: dict[str, Handler] = {
    "ControlListScenarios": list_rules,
    "ControlAddScenarios": add_rules,
    "ControlRemoveScenarios": remove_all,
    "ControlRemoveScenario": remove_one,
    "ControlReloadScenarios": reload,
}
