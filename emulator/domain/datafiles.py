"""Reading payemu's YAML data files, checked against their JSON Schema, naming the file and
the field of every problem."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema_rs
import yaml

from emulator.domain.errors import field_path
from emulator.domain.safeparse import TooComplex, bound_ints, check_yaml

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
REPOSITORY = DATA_DIR.parents[1]  # the source checkout (README generators only)


def data_path(name: str) -> Path:
    return DATA_DIR / name


GATEWAYS_DIR = DATA_DIR / "gateways"  # one file per simulated gateway


def gateway_files(folder: Path = GATEWAYS_DIR) -> list[Path]:
    """The gateway files of ``folder`` (``<Name>.yaml``), by name regardless of case."""
    try:
        return sorted(folder.glob("*.yaml"), key=lambda p: p.name.casefold())
    except OSError:
        return []


class SafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's safe loader, refusing integers Python will not convert with their line."""


bound_ints(SafeLoader)
Labeller = Callable[[Any, list[Any]], str]


def parse_yaml(text: str) -> Any:
    """YAML text to Python values (:class:`TooComplex` before a document too large or too deep)."""
    check_yaml(text)
    return yaml.load(text, Loader=SafeLoader)


def load_checked(
    path: str | Path,
    schema: dict[str, Any],
    what: str,
    root: str,
    error: type[ValueError],
    label: Labeller | None = None,
) -> Any:
    """The data of ``path`` once it passes ``schema``, else ``error`` listing every problem."""
    try:
        data = parse_yaml(Path(path).read_text(encoding="utf-8"))
    except TooComplex as exc:
        raise error(f"{path}:{exc.line or 1}: cannot read the {what}: {exc.reason}") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{path}: cannot read the {what}: {exc}") from exc
    except OSError as exc:
        raise error(f"{path}: cannot read the {what}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise error(f"{path}{_yaml_where(exc)}: cannot read the {what}: not valid YAML: {_yaml_problem(exc)}") from exc
    try:  # jsonschema-rs judges; jsonschema (imported only then) words the problems
        if jsonschema_rs.Draft7Validator(schema, validate_formats=False).is_valid(data):
            return data
    except ValueError:  # a value jsonschema-rs cannot take (a key that is not text)
        pass
    from jsonschema import Draft7Validator

    lines = _lines(path)
    problems = []
    for found in Draft7Validator(schema).iter_errors(data):
        parts = list(found.absolute_path)
        where = field_path(parts, root)
        prefix = label(data, parts) if label else ""
        at = f":{line_of(lines, parts + _unexpected(found), 1)}" if lines is not None else ""
        problems.append(f"{path}{at}: {prefix + ': ' if prefix else ''}{where}: {found.message}")
    if problems:
        raise error("\n".join(problems))
    return data


def _lines(path: str | Path) -> Any:
    """The file read by the line-keeping loader, only to name a problem's line."""
    from emulator.domain.yamllines import LineLoader

    try:
        loader = LineLoader(Path(path).read_text(encoding="utf-8"))
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return None


def _unexpected(found: Any) -> list[Any]:
    if found.validator != "additionalProperties" or not isinstance(found.instance, dict):
        return []
    known = found.schema.get("properties", {})
    extra = [key for key in found.instance if key not in known]
    return extra[:1]


def line_of(root: Any, parts: list[Any], fallback: int) -> int:
    from emulator.domain.yamllines import line_of as found

    return found(root, parts, fallback)


def _yaml_where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f":{mark.line + 1}" if mark is not None else ""


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc)
    return " ".join(str(problem).split())
