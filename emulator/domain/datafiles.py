"""Reading payemu's YAML data files, checked against their JSON Schema, naming the file and
the field of every problem."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emulator.domain.errors import field_path

if TYPE_CHECKING:
    import yaml

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
REPOSITORY = DATA_DIR.parents[1]  # the source checkout (README generators only)


def data_path(name: str) -> Path:
    return DATA_DIR / name


GATEWAYS_DIR = DATA_DIR / "gateways"  # one file per simulated gateway


def gateway_files(folder: Path = GATEWAYS_DIR) -> list[Path]:
    """The gateway files of ``folder`` (``<Name>.yaml``), by name regardless of case;
    payemu's own folder is listed once (its files do not change while payemu runs)."""
    if folder == GATEWAYS_DIR:
        return list(_own_gateway_files())
    return _listed(folder)


@cache
def _own_gateway_files() -> tuple[Path, ...]:
    return tuple(_listed(GATEWAYS_DIR))


def _listed(folder: Path) -> list[Path]:
    try:  # iterdir makes each path without parsing it again (half the time of folder / name)
        files = [path for path in folder.iterdir() if path.name.endswith(".yaml")]
    except OSError:
        return []
    return sorted(files, key=lambda path: path.name.casefold())


# PyYAML is imported when a YAML file is first read (a start with no config file and no
# scenario files of the user's reads none)
@cache
def safe_loader() -> type:
    """libyaml's safe loader, refusing integers Python will not convert with their line."""
    import yaml

    from emulator.domain.safeparse import bound_ints

    class SafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        """libyaml's safe loader, refusing integers Python will not convert with their line."""

    bound_ints(SafeLoader)
    return SafeLoader


Labeller = Callable[[Any, list[Any]], str]


def parse_yaml(text: str) -> Any:
    """YAML text to Python values (:class:`TooComplex` before a document too large or too deep)."""
    import yaml

    from emulator.domain.safeparse import check_yaml

    check_yaml(text)
    return yaml.load(text, Loader=safe_loader())


def load_checked(
    path: str | Path,
    schema: dict[str, Any],
    what: str,
    root: str,
    error: type[ValueError],
    label: Labeller | None = None,
) -> Any:
    """The data of ``path`` once it passes ``schema``, else ``error`` listing every problem."""
    data = _parsed(path, what, error)
    try:  # jsonschema-rs judges; jsonschema (imported only then) words the problems
        if _validator(schema).is_valid(data):
            return data
    except ValueError:  # a value jsonschema-rs cannot take (a key that is not text)
        pass
    return _refused(path, data, schema, root, error, label)


def _parsed(path: str | Path, what: str, error: type[ValueError]) -> Any:
    import yaml

    from emulator.domain.safeparse import TooComplex

    try:
        return parse_yaml(Path(path).read_text(encoding="utf-8"))
    except TooComplex as exc:
        raise error(f"{path}:{exc.line or 1}: cannot read the {what}: {exc.reason}") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{path}: cannot read the {what}: {exc}") from exc
    except OSError as exc:
        raise error(f"{path}: cannot read the {what}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise error(f"{path}{_yaml_where(exc)}: cannot read the {what}: not valid YAML: {_yaml_problem(exc)}") from exc


def _refused(
    path: str | Path, data: Any, schema: dict[str, Any], root: str, error: type[ValueError], label: Labeller | None
) -> Any:
    """``data`` if it passes after all, else ``error`` naming every problem with its line."""
    from jsonschema import Draft7Validator

    lines = _lines(path)
    problems = []
    for found in Draft7Validator(schema).iter_errors(data):
        parts = list(found.absolute_path)
        where = field_path(parts, root)
        prefix = label(data, parts) if label else ""
        for extra, message in _worded(found):
            at = f":{line_of(lines, parts + extra, 1)}" if lines is not None else ""
            problems.append(f"{path}{at}: {prefix + ': ' if prefix else ''}{where}: {message}")
    if problems:
        raise error("\n".join(problems))
    return data


def _worded(found: Any) -> list[tuple[list[Any], str]]:
    """(path below the error's, message) of one jsonschema error: an unknown key or value
    named with the allowed ones and the closest ("did you mean"), else jsonschema's words."""
    from emulator.domain.didyoumean import unknown

    if found.validator == "additionalProperties" and isinstance(found.instance, dict):
        allowed = list(found.schema.get("properties", {}))
        return [([key], unknown("key", str(key), allowed)) for key in found.instance if key not in allowed]
    if found.validator == "enum" and isinstance(found.instance, str):
        choices = [str(choice) for choice in found.validator_value]
        return [([], unknown("value", found.instance, choices))]
    return [([], found.message)]


_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}  # by the schema's id: (schema, compiled)


def _validator(schema: dict[str, Any]) -> Any:
    """The compiled validator of ``schema``, compiled once (a catalog reads ~100 files against one)."""
    found = _VALIDATORS.get(id(schema))
    if found is None or found[0] is not schema:
        import jsonschema_rs

        found = (schema, jsonschema_rs.Draft7Validator(schema, validate_formats=False))
        _VALIDATORS[id(schema)] = found
    return found[1]


def _lines(path: str | Path) -> Any:
    """The file read by the line-keeping loader, only to name a problem's line."""
    import yaml

    from emulator.domain.yamllines import line_loader

    try:
        loader = line_loader()(Path(path).read_text(encoding="utf-8"))
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return None


def line_of(root: Any, parts: list[Any], fallback: int) -> int:
    from emulator.domain.yamllines import line_of as found

    return found(root, parts, fallback)


def _yaml_where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f":{mark.line + 1}" if mark is not None else ""


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc)
    return " ".join(str(problem).split())
