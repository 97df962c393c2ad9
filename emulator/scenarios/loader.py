"""Reading scenario files: YAML with line numbers, the schema check, the checks the schema
cannot express, and the build of immutable :class:`Rule` objects.

Every problem is reported as ``source:line: reason`` and all of them are collected before
:class:`ScenarioError` is raised, so one run of ``payemu scenarios check`` shows them all.
A name a rule gives must exist (:class:`Names`): its gateway in the catalog, its account in
the tenant (where there is one: the control API), its operation and result codes in the
vocabulary (the schema's); else the rule is refused with the closest name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from emulator.domain.budget import RULE
from emulator.domain.errors import field_path
from emulator.domain.records import dataclass
from emulator.domain.safeparse import TooComplex, check_yaml
from emulator.domain.vocabulary import OPERATIONS, RESULT_CODES, Operation, ResultCode
from emulator.domain.yamllines import LineMap, LineSeq, expanded_chars, expanded_size, line_loader, line_of
from emulator.scenarios import schema
from emulator.scenarios.build import build_rule
from emulator.scenarios.model import Rule, canonical
from emulator.scenarios.names import Names, catalog_names

SCENARIO_SUFFIXES = (".yaml", ".yml")
MAX_YAML_VALUES = 100_000  # after alias expansion: refuses "billion laughs" documents
MAX_YAML_CHARS = 4 * 1024 * 1024  # scalar characters after alias expansion (one long string, aliased)
VALUE_BYTES = 64  # what one parsed value holds besides its characters (a rule's weight)
NO_ACCEPTED = (Operation.TOKENIZE.value, Operation.STATUS.value)


@dataclass(frozen=True)
class Problem:
    """One problem of a scenario file: where (``source:line``) and why."""

    source: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.reason}"


class ScenarioError(ValueError):
    """Scenario files that cannot be used; ``problems`` holds every ``source:line: reason``."""

    def __init__(self, problems: Sequence[Problem | str]) -> None:
        self.details = [p for p in problems if isinstance(p, Problem)]
        self.problems = [str(p) for p in problems]
        super().__init__("\n".join(self.problems))


# -- parsing ----------------------------------------------------------------------------


def parse_rules(text: str, source: str, names: Names | None = None) -> list[Rule]:
    """The rules of one file's text: ``{"scenarios": [...]}``, a bare list, or a single
    rule (YAML or JSON), naming only ``names`` (default: the catalog's gateways). Raises
    :class:`ScenarioError` naming every problem."""
    problems: list[Problem] = []
    rules = _parse(text, source, problems, known=names or catalog_names())
    if problems:
        raise ScenarioError(problems)
    return rules


def _parse(
    text: str,
    source: str,
    problems: list[Problem],
    gateway: str | None = None,
    known: Names | None = None,
) -> list[Rule]:
    """The rules of a scenario file, or with ``gateway`` the ``triggers`` of that gateway's file,
    naming only ``known``."""
    if gateway is not None and "triggers" not in text:
        return []  # a gateway without test inputs of its own (most of the catalog): nothing to parse
    import yaml  # PyYAML: when a scenario file is first read

    try:
        # before the C loader, which would overflow the stack on deep nesting, and before the
        # line-keeping loader builds its nodes (about 350 bytes a value: a 1 MB flow list of
        # 500,000 one-letter values held 190 MiB before it was counted)
        check_yaml(text, max_values=MAX_YAML_VALUES)
    except TooComplex as exc:
        problems.append(Problem(source, exc.line, exc.reason))
        return []
    except yaml.YAMLError:
        pass  # a syntax error before any excess: the loader below stops at it and reports it
    try:
        loader = line_loader()(text)
    except yaml.YAMLError as exc:  # the reader refuses control characters before parsing
        problems.append(Problem(source, None, f"YAML syntax error: {exc}"))
        return []
    try:
        node = loader.get_single_node()
        values = expanded_size(node, {}) if node is not None else 0
        if values > MAX_YAML_VALUES:
            problems.append(Problem(source, None, f"the YAML expands to over {MAX_YAML_VALUES} values through aliases"))
            return []
        chars = expanded_chars(node, {}) if node is not None else 0
        if chars > MAX_YAML_CHARS:
            problems.append(
                Problem(source, None, f"the YAML expands to over {MAX_YAML_CHARS} characters through aliases")
            )
            return []
        document = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        reason = str(exc.problem or exc.context)
        if exc.context and exc.problem:
            where = f" at line {exc.context_mark.line + 1}" if exc.context_mark else ""
            reason += f" ({exc.context}{where})"
        problems.append(Problem(source, mark.line + 1 if mark else None, f"YAML syntax error: {reason}"))
        return []
    except yaml.YAMLError as exc:
        problems.append(Problem(source, None, f"YAML syntax error: {exc}"))
        return []
    except RecursionError:
        problems.append(Problem(source, None, "the YAML is nested too deeply"))
        return []
    finally:
        loader.dispose()
    found = [Problem(source, line, f"duplicate key {key!r}") for key, line in loader.duplicates]
    items = _rule_items(document, source, found) if gateway is None else _trigger_items(document, source, found)
    pairs = [(item, line) for item, line in items]
    rules = _rules_of(pairs, values, chars, source, found, gateway, known)
    problems += sorted(found, key=lambda p: p.line or 0)
    return rules


def _rules_of(
    pairs: list[tuple[Any, int]],
    values: int,
    chars: int,
    source: str,
    found: list[Problem],
    gateway: str | None,
    known: Names | None = None,
) -> list[Rule]:
    """The rules of a file's items (each with its line); ``values`` and ``chars``: the
    expanded document's size, which the rules weigh in equal shares."""
    rules: list[Rule] = []
    names: dict[str, int] = {}
    for item, line in pairs:
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name in names:
            at = line_of(item, ["name"], line)
            found.append(Problem(source, at, f"duplicate rule name {name!r} (first at {source}:{names[name]})"))
        elif isinstance(name, str):
            names[name] = line
        rule = _build(item, source, line, found, gateway, known)
        if rule is not None:
            rules.append(rule)
    if rules:  # each rule weighs its share of the expanded document (what its listing renders)
        share = RULE + (VALUE_BYTES * values + chars) // len(rules)
        rules = [dataclasses.replace(rule, weight=share) for rule in rules]
    return rules


RULE_KEYS = frozenset({"name", "when", "then", "sequence"})


def _rule_items(document: Any, source: str, problems: list[Problem]) -> Iterator[tuple[Any, int]]:
    if document is None:
        return
    if isinstance(document, LineMap) and "scenarios" in document:
        for key in document:
            if key != "scenarios":
                problems.append(Problem(source, document.lines[key], f"unknown key {key!r} (allowed: scenarios)"))
        document_line = document.lines["scenarios"]
        document = document["scenarios"]
        if document is None:
            return
        if not isinstance(document, LineSeq):
            problems.append(Problem(source, document_line, "scenarios: expected a list of rules"))
            return
    if isinstance(document, LineSeq):
        yield from zip(document, document.lines, strict=True)
    elif isinstance(document, LineMap) and not RULE_KEYS & set(document):
        # a mapping with none of a rule's keys is a file whose top-level key is misnamed
        for key in document:
            problems.append(
                Problem(source, document.lines[key], f"unknown top-level key {key!r} (expected 'scenarios')")
            )
    elif isinstance(document, LineMap):
        yield document, document.line
    else:
        problems.append(Problem(source, 1, f"expected a list of rules or {{scenarios: [...]}}, got {document!r}"))


def _trigger_items(document: Any, source: str, problems: list[Problem]) -> Iterator[tuple[Any, int]]:
    """The ``triggers`` of a gateway's file (its other keys are the catalog's)."""
    if not isinstance(document, LineMap) or document.get("triggers") is None:
        return
    triggers = document["triggers"]
    if not isinstance(triggers, LineSeq):
        problems.append(Problem(source, document.lines["triggers"], "triggers: expected a list of rules"))
        return
    yield from zip(triggers, triggers.lines, strict=True)


def _build(
    item: Any, source: str, line: int, problems: list[Problem], gateway: str | None = None, known: Names | None = None
) -> Rule | None:
    label = f"rule {item['name']!r}" if isinstance(item, dict) and isinstance(item.get("name"), str) else "rule"
    errors = list(schema.rule_errors(item))
    if isinstance(item, dict):
        errors += _semantic_errors(item)
    if known is not None and isinstance(item, dict) and not errors:
        errors += known.errors(item)
    if gateway is not None and isinstance(item, dict) and not errors:
        errors += _trigger_errors(item, gateway)
    found = [
        Problem(source, line_of(item, path, line), f"{label}: {f'{field_path(path, None)}: ' if path else ''}{reason}")
        for path, reason in errors
    ]
    if found or not isinstance(item, dict):
        problems += found
        return None
    if gateway is not None:  # a gateway's trigger fires on that gateway only
        item = {**item, "when": {**(item.get("when") or {}), "gateway": gateway}}
    return build_rule(item, source, line)


def _trigger_errors(rule: dict[str, Any], gateway: str) -> Iterator[tuple[list[Any], str]]:
    """A gateway's trigger fires on its own gateway only and cites the page documenting it."""
    named = (rule.get("when") or {}).get("gateway")
    if named is not None and str(named).casefold() != gateway.casefold():
        yield ["when", "gateway"], f"a trigger of {gateway} fires on {gateway} only (leave out when.gateway)"
    if not str(rule.get("origin") or "").startswith(("https://", "http://")):
        yield ["origin"], "a gateway's trigger cites its public source: origin must be a URL"


def _semantic_errors(rule: dict[str, Any]) -> Iterator[tuple[list[Any], str]]:
    """What the schema cannot say: then XOR sequence, which keys go with which result."""
    has_then, has_sequence = "then" in rule, "sequence" in rule
    if has_then and has_sequence:
        yield ["sequence"], "give either 'then' or 'sequence', not both"
    elif not has_then and not has_sequence:
        yield [], "missing key 'then' (or 'sequence')"
    when = rule.get("when")
    operations: set[str] = set()
    if isinstance(when, dict):
        amount = when.get("amount")
        bounded = isinstance(amount, dict) and _is_number(amount.get("min")) and _is_number(amount.get("max"))
        if bounded and isinstance(amount, dict) and amount["min"] > amount["max"]:
            yield ["when", "amount"], f"min {amount['min']} is above max {amount['max']}"
        wanted = when.get("operation")
        for value in wanted if isinstance(wanted, list) else [wanted]:
            if isinstance(value, str) and canonical(value, OPERATIONS):
                operations.add(canonical(value, OPERATIONS) or "")
    entries: list[tuple[list[Any], Any]] = []
    if has_then:
        entries.append((["then"], rule["then"]))
    if isinstance(rule.get("sequence"), list):
        entries += [(["sequence", i], entry) for i, entry in enumerate(rule["sequence"])]
    for path, entry in entries:
        if isinstance(entry, dict):
            yield from _then_errors(path, entry, operations)


def _then_errors(path: list[Any], then: dict[str, Any], operations: set[str]) -> Iterator[tuple[list[Any], str]]:
    code = then.get("operationResultCode")
    result = canonical(code, RESULT_CODES) if isinstance(code, str) else None
    if result is None:
        return
    if "rejectReasonCode" in then and result != ResultCode.REJECTED:
        yield [*path, "rejectReasonCode"], f"only allowed with operationResultCode Rejected, not {result}"
    if "settlesTo" in then and result != ResultCode.ACCEPTED:
        yield [*path, "settlesTo"], f"only allowed with operationResultCode Accepted, not {result}"
    if "approvedAmount" in then and result != ResultCode.SUCCESS:
        yield [*path, "approvedAmount"], f"only allowed with operationResultCode Success, not {result}"
    if "settleAfterSeconds" in then and "settlesTo" not in then:
        yield [*path, "settleAfterSeconds"], "needs settlesTo"
    if then.get("delayFromCents") and "delayMs" in then:
        yield [*path, "delayFromCents"], "takes the place of delayMs: give one or the other"
    if result == ResultCode.ACCEPTED and operations & set(NO_ACCEPTED):
        names = sorted(operations & set(NO_ACCEPTED))
        verb = "never answers" if len(names) == 1 else "never answer"
        yield [*path, "operationResultCode"], f"{' and '.join(names)} {verb} Accepted"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# -- files ------------------------------------------------------------------------------


def _clashes(groups: Iterable[list[Rule]]) -> list[Problem]:
    """Rule names used again in a later file (a file's own repeats are reported by its parse)."""
    seen: dict[str, Rule] = {}
    problems: list[Problem] = []
    for rules in groups:
        for rule in rules:
            first = seen.get(rule.name)
            if first is not None:
                reason = f"duplicate rule name {rule.name!r} (first at {first.location})"
                problems.append(Problem(rule.source, rule.line, reason))
        seen.update({rule.name: rule for rule in rules if rule.name not in seen})
    return problems


def expand_paths(paths: Iterable[str | Path], problems: list[Problem]) -> list[Path]:
    """Files in the order given; a directory contributes its ``*.yaml``/``*.yml`` files
    in name order. Missing paths become problems."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in SCENARIO_SUFFIXES and p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            problems.append(Problem(str(path), None, "no such file or directory"))
    return files


_CACHE: dict[tuple[str, int, int, Names | None], list[Rule]] = {}


def load_file(
    path: Path, problems: list[Problem], gateway: str | None = None, names: Names | None = None
) -> list[Rule]:
    """The rules of one file (cached by path, modification time and size), naming only
    ``names``; with ``gateway``, the triggers of that gateway's catalog file."""
    try:
        stat = path.stat()
        key = (str(path) + (f"#{gateway}" if gateway else ""), stat.st_mtime_ns, stat.st_size, names)
        if key in _CACHE:
            return _CACHE[key]
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(str(path), None, f"cannot read: {exc}"))
        return []
    found: list[Problem] = []
    rules = _parse(text, str(path), found, gateway, names)
    problems += found
    if not found:
        _CACHE[key] = rules
    return rules


def load_files(files: Sequence[Path], builtin: Path | None = None, gateways: Sequence[Path] = ()) -> list[Rule]:
    """Rules of ``files`` in order, then the built-in ones, in the order of
    ``rulebook.PRECEDENCE``: each gateway's own triggers (``gateways``: its catalog file,
    named after it), then payemu's conventions (``builtin``). Names are unique across the
    user's files; a user's rule named as a built-in one takes its place (a copy of the
    built-in file replaces it, rule by rule). A gateway a rule names is one of the
    catalog's or of ``gateways``."""
    mine, triggers, generic = load_groups(files, builtin, gateways)
    return [*mine, *(rule for rules in triggers.values() for rule in rules), *generic]


def load_groups(
    files: Sequence[Path], builtin: Path | None = None, gateways: Sequence[Path] = ()
) -> tuple[list[Rule], dict[str, list[Rule]], list[Rule]]:
    """:func:`load_files` in its three parts: the rules of ``files``, each gateway's
    triggers (by its name casefolded, in the order of ``gateways``) and payemu's
    conventions, the last two without the rules the user's files name again."""
    problems: list[Problem] = []
    names = rule_names(gateways)
    triggers: dict[str, list[Rule]] = {}
    for path in gateways:
        triggers.setdefault(path.stem.casefold(), []).extend(load_file(path, problems, path.stem))
    generic = load_file(builtin, problems, names=names) if builtin is not None else []
    groups = [load_file(path, problems, names=names) for path in files]
    problems += _clashes(groups)
    if problems:
        raise ScenarioError(problems)
    mine = [rule for rules in groups for rule in rules]
    taken = {rule.name for rule in mine}
    if taken:
        triggers = {key: [rule for rule in rules if rule.name not in taken] for key, rules in triggers.items()}
        generic = [rule for rule in generic if rule.name not in taken]
    return mine, triggers, generic


def rule_names(gateways: Sequence[Path] = ()) -> Names:
    """The gateways a rule of a scenario file may name: the catalog's and those of ``gateways``."""
    known = catalog_names()
    return Names(tuple(dict.fromkeys([*(known.gateways or ()), *(path.stem for path in gateways)])))


def load_own(path: Path, taken: Collection[str] = (), gateway: str | None = None) -> list[Rule]:
    """The rules of one of payemu's own files, its conventions or (``gateway``) that gateway's
    triggers, but those named as one of ``taken`` (the user's); :class:`ScenarioError`
    naming every problem."""
    problems: list[Problem] = []
    rules = load_file(path, problems, gateway, None if gateway else rule_names())
    if problems:
        raise ScenarioError(problems)
    return [rule for rule in rules if rule.name not in taken]
