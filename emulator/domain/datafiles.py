"""Reading payemu's YAML data files, checked against their JSON Schema, naming the file and
the field of every problem."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson
import yaml

from emulator.domain.didyoumean import unknown
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
    cache: ParseCache | None = None,
) -> Any:
    """The data of ``path`` once it passes ``schema``, else ``error`` listing every problem.
    With ``cache``, a file unchanged since an earlier run is not parsed again (still checked)."""
    stamp: Stamp | None = None
    if cache is not None:
        try:
            stamp = stamp_of(Path(path))
        except OSError:
            stamp = None
        kept = cache.get(Path(path), stamp) if stamp is not None else None
        if kept is not None and _validator(schema).is_valid(kept):
            return kept
    data = _parsed(path, what, error)
    try:  # jsonschema-rs judges; jsonschema (imported only then) words the problems
        if _validator(schema).is_valid(data):
            if cache is not None and stamp is not None:
                cache.put(Path(path), stamp, data)
            return data
    except ValueError:  # a value jsonschema-rs cannot take (a key that is not text)
        pass
    return _refused(path, data, schema, root, error, label)


def _parsed(path: str | Path, what: str, error: type[ValueError]) -> Any:
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
        found = (schema, jsonschema_rs.Draft7Validator(schema, validate_formats=False))
        _VALIDATORS[id(schema)] = found
    return found[1]


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


def line_of(root: Any, parts: list[Any], fallback: int) -> int:
    from emulator.domain.yamllines import line_of as found

    return found(root, parts, fallback)


def _yaml_where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f":{mark.line + 1}" if mark is not None else ""


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc)
    return " ".join(str(problem).split())


# -- a parse cache between runs --------------------------------------------------------------
# The gateway catalog is ~100 YAML files that do not change between runs; parsing them is most
# of payemu's start-up. What each file parsed to is kept as JSON in the user's cache folder,
# by path, modification time and size, and used only while all three match. It holds data
# only (JSON: nothing in it can run code), is read only up to CACHE_MAX_BYTES, and what comes
# out of it is checked again as a fresh parse is (schema, rule checks).
CACHE_MAX_BYTES = 16 * 1024 * 1024
# one folder per installation (a checkout, a virtual environment), so a start reads only
# the entries of its own files, however many copies of payemu the machine holds
_INSTALLATION = hashlib.sha256(str(Path(__file__).resolve().parents[1]).encode()).hexdigest()[:16]
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "payemu" / _INSTALLATION
Stamp = tuple[int, int]  # (st_mtime_ns, st_size)


class ParseCache:
    """What files parsed to in an earlier run, keyed by path and stamp; saved when changed."""

    def __init__(self, kind: str, folder: Path | None = None) -> None:
        self.path = (folder or CACHE_DIR) / f"{kind}.json"
        self._entries: dict[str, list[Any]] | None = None
        self._changed = False

    def _read(self) -> dict[str, list[Any]]:
        if self._entries is None:
            self._entries = {}
            try:
                with self.path.open("rb") as handle:
                    raw = handle.read(CACHE_MAX_BYTES + 1)
                found = orjson.loads(raw) if len(raw) <= CACHE_MAX_BYTES else None
                if isinstance(found, dict):
                    self._entries = {k: v for k, v in found.items() if isinstance(v, list) and len(v) == 3}
            except (OSError, orjson.JSONDecodeError):
                pass  # no cache yet, or not one payemu wrote: parse afresh
        return self._entries

    def get(self, file: Path, stamp: Stamp) -> Any:
        """The value kept for ``file`` at ``stamp``, or None."""
        entry = self._read().get(str(file))
        return entry[2] if entry is not None and entry[0] == stamp[0] and entry[1] == stamp[1] else None

    def put(self, file: Path, stamp: Stamp, value: Any) -> None:
        """Keep ``value`` for ``file`` at ``stamp`` if JSON gives it back unchanged."""
        if _plain(value):
            self._read()[str(file)] = [stamp[0], stamp[1], value]
            self._changed = True

    def save(self) -> None:
        """Write the entries if any changed (a folder that cannot be written: no cache)."""
        if not self._changed or self._entries is None:
            return
        # files gone since (a test's copy of the catalog, an uninstalled checkout) are forgotten
        self._entries = {name: entry for name, entry in self._entries.items() if os.path.exists(name)}
        try:
            text = json.dumps(self._entries)  # plain JSON types only: a value of another type is not kept
        except (TypeError, ValueError):
            return
        if len(text) > CACHE_MAX_BYTES:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(text, encoding="utf-8")
            partial.replace(self.path)
            self._changed = False
        except OSError:
            pass


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is made of JSON's own types (text keys; no dates, no tuples)."""
    if depth > 64:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    return value is None or isinstance(value, (str, bool, int, float))


def stamp_of(path: Path) -> Stamp:
    status = path.stat()
    return status.st_mtime_ns, status.st_size
