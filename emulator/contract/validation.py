"""Compiled JSON Schema validation with messages a person understands.

``is_valid`` runs on jsonschema-rs (the hot path); jsonschema words the ``errors``, and is
imported only then: it takes a tenth of a second to import. ``normalize`` rewrites enum
values and property names to their canonical case, as the real service reads them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from emulator.domain.errors import FieldErrors, field_path
from emulator.domain.safeparse import short

if TYPE_CHECKING:
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import ValidationError

Normalizer = Callable[[Any], Any]
_TYPE_WORDS = {
    "string": "a string",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "object": "a JSON object",
    "array": "a JSON array",
    "null": "null",
}
_ENUM_LIST_LIMIT = 25
_KEY = json.JSONEncoder(sort_keys=True)  # json.dumps(schema, sort_keys=True), the encoder made once


def _identity(value: Any) -> Any:
    return value


_DEFINITION = "#/definitions/"


def _measure(node: Any) -> tuple[int, list[str]]:
    """How many values ``node`` holds, and the definitions its ``$ref`` values name."""
    count, names, stack = 0, [], [node]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith(_DEFINITION):  # a JSON pointer's first step
                names.append(ref[len(_DEFINITION) :].split("/", 1)[0].replace("~1", "/").replace("~0", "~"))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count, names


class Compiled:
    # a valid value is canonical already (no case to fix) when every object is closed
    # and no enum shares a field with free text: then normalizing can wait for a failure
    normalize: Normalizer
    canonical_when_valid: bool

    def __init__(self, compiler: SchemaCompiler, schema: Any) -> None:
        self._compiler = compiler
        self.schema = schema
        self._fast: jsonschema_rs.Draft7Validator | None = None
        self._slow: Draft7Validator | None = None

    def _document(self) -> Any:
        """The schema with the definitions it reaches: a validator converts the whole
        document it is given (with the full table, ``GET /Utils/apiKey``'s answer took
        1.7 ms to compile rather than 0.3 ms)."""
        if not self.schema:
            return {}
        return {"definitions": self._compiler.reached(self.schema)[1], **self.schema}

    def warm(self) -> None:
        """Build the fast validator now rather than on first use."""
        if self._fast is None:
            self._fast = jsonschema_rs.Draft7Validator(self._document(), validate_formats=True)

    def is_valid(self, value: Any) -> bool:
        fast = self._fast
        if fast is None:
            self.warm()
            fast = self._fast
        try:
            return fast.is_valid(value)  # type: ignore[union-attr]
        except ValueError:  # a value with no JSON form (a lone surrogate, a non-text key)
            return bool(self._strict().is_valid(value))

    def _strict(self) -> Draft7Validator:
        if self._slow is None:
            from jsonschema import Draft7Validator, FormatChecker  # on first use (see the module doc)

            self._slow = Draft7Validator(self._document(), format_checker=FormatChecker())
        return self._slow

    def errors(self, value: Any, root: str | None = "body") -> list[FieldErrors]:
        """Every problem with ``value``, one (field, messages) entry each."""
        found: list[FieldErrors] = []
        for error in self._strict().iter_errors(value):
            found.extend(_explain(error, root))
        if not found and not self.is_valid(value):
            found.append((root, ["The value does not match the schema."]))
        return found


class _Unprepared(Compiled):
    """A :class:`Compiled` whose ``normalize`` and ``canonical_when_valid`` are made when
    either is first read (a document's schemas are compiled when it is loaded, most of them
    never used); then it is a plain :class:`Compiled` (whose attributes are read as fast as
    any, with no ``__getattr__`` in the way)."""

    def __getattr__(self, name: str) -> Any:
        if name not in ("normalize", "canonical_when_valid"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self.normalize = self._compiler.normalizer(self.schema) or _identity
        self.canonical_when_valid = _closed(self.schema, self._compiler.definitions, set())
        self.__class__ = Compiled  # type: ignore[assignment]  # the same object, prepared
        return getattr(self, name)


def _closed(schema: Any, definitions: dict[str, Any], seen: set[str]) -> bool:
    """True when nothing valid under ``schema`` needs the normalizer."""
    if not isinstance(schema, dict):
        return True
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            return True
        seen.add(name)
        return _closed(definitions.get(name, {}), definitions, seen)
    branches = [b for key in ("allOf", "anyOf", "oneOf") for b in schema.get(key, []) if isinstance(b, dict)]
    targets = [_target(b, definitions) for b in branches]
    if any("enum" in t for t in targets) and any(_free_text(t) for t in targets):
        return False
    if "properties" in schema and schema.get("additionalProperties") is not False:
        return False
    parts = [*branches, *(schema.get("properties") or {}).values()]
    if isinstance(schema.get("items"), dict):
        parts.append(schema["items"])
    return all(_closed(part, definitions, seen) for part in parts)


def _target(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    for _ in range(8):
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            break
        found = definitions.get(ref.rsplit("/", 1)[-1])
        if not isinstance(found, dict):
            break
        schema = found
    return schema


def _free_text(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return "enum" not in schema and "$ref" not in schema and (kind is None or kind == "string")


class SchemaCompiler:
    """Compiles schemas against one table of definitions, each distinct schema once."""

    def __init__(self, definitions: dict[str, Any]) -> None:
        self.definitions = definitions
        self._cache: dict[str, Compiled] = {}
        self._refs: dict[str, tuple[int, list[str]]] = {}  # definition → (its values, the names it refers to)
        self._normalizers: dict[str, Normalizer | None] = {}

    def warm(self) -> None:
        for compiled in list(self._cache.values()):
            compiled.warm()

    def footprint(self) -> int:
        """The schema values the fast validators will hold once warmed: each validator
        compiles its own copy of every definition it reaches through ``$ref``, so a large
        definition many schemas refer to is counted once per schema that reaches it."""
        return sum(self.reached(compiled.schema)[0] for compiled in self._cache.values())

    def reached(self, schema: Any) -> tuple[int, dict[str, Any]]:
        """The definitions ``schema`` reaches through ``$ref`` (directly or through other
        definitions), and how many values the schema and they hold together."""
        count, pending = _measure(schema)
        found: dict[str, Any] = {}
        while pending:
            name = pending.pop()
            if name in found or name not in self.definitions:
                continue
            found[name] = self.definitions[name]
            if name not in self._refs:
                self._refs[name] = _measure(found[name])
            count += self._refs[name][0]
            pending.extend(self._refs[name][1])
        return count, found

    def compile(self, schema: Any) -> Compiled:
        key = _KEY.encode(schema)
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = self._cache[key] = _Unprepared(self, schema)
        return compiled

    # -- case-insensitive reading -------------------------------------------------
    def normalizer(self, schema: Any) -> Normalizer | None:
        """A function rewriting enum values and property names to canonical case, or None."""
        if not isinstance(schema, dict):
            return None
        if "$ref" in schema:
            return self._ref_normalizer(schema["$ref"].rsplit("/", 1)[-1])
        parts: list[Normalizer] = []
        for key in ("allOf", "anyOf", "oneOf"):
            for sub in schema.get(key, []):
                found = self.normalizer(sub)
                if found is not None:
                    parts.append(found)
        enum = schema.get("enum")
        if enum and all(isinstance(v, str) or v is None for v in enum):
            parts.append(_enum_normalizer(enum))
        props = schema.get("properties")
        if isinstance(props, dict):
            parts.append(self._object_normalizer(props))
        items = schema.get("items")
        if isinstance(items, dict):
            item_norm = self.normalizer(items)
            if item_norm is not None:
                parts.append(_list_normalizer(item_norm))
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]

        def chain(value: Any) -> Any:
            for part in parts:
                value = part(value)
            return value

        return chain

    def _ref_normalizer(self, name: str) -> Normalizer | None:
        if name in self._normalizers:
            found = self._normalizers[name]
            if found is not None:
                return found
            # Unknown yet (recursive reference): defer the lookup to call time.
            return lambda value: (self._normalizers.get(name) or _identity)(value)
        self._normalizers[name] = None
        result = self.normalizer(self.definitions.get(name, {}))
        self._normalizers[name] = result
        return result

    def _object_normalizer(self, props: dict[str, Any]) -> Normalizer:
        by_lower = {name.lower(): name for name in props}
        made = {name: self.normalizer(sub) for name, sub in props.items()}
        children: dict[str, Normalizer] = {name: fn for name, fn in made.items() if fn is not None}

        def normalize(value: Any) -> Any:
            if not isinstance(value, dict):
                return value
            for key in [k for k in value if k not in props]:
                canonical = by_lower.get(key.lower())
                if canonical is not None and canonical not in value:
                    value[canonical] = value.pop(key)
            for name, child in children.items():
                if name in value:
                    value[name] = child(value[name])
            return value

        return normalize


def _enum_normalizer(enum: list[Any]) -> Normalizer:
    by_lower = {v.lower(): v for v in enum if isinstance(v, str)}

    def normalize(value: Any) -> Any:
        if isinstance(value, str):
            return by_lower.get(value.lower(), value)
        return value

    return normalize


def _list_normalizer(item: Normalizer) -> Normalizer:
    def normalize(value: Any) -> Any:
        if isinstance(value, list):
            return [item(v) for v in value]
        return value

    return normalize


# -- turning jsonschema errors into ValidationErrorMessages ----------------------------
def _label(parts: list[Any], root: str | None) -> str:
    for part in reversed(parts):
        if isinstance(part, str):
            return part[:1].upper() + part[1:]
    return (root or "body")[:1].upper() + (root or "body")[1:]


def _explain(error: ValidationError, root: str | None) -> Iterator[FieldErrors]:
    path = list(error.absolute_path)
    keyword = str(error.validator)
    value: Any = error.validator_value
    instance = error.instance
    if keyword in ("anyOf", "oneOf") and error.context:
        if instance is None:
            yield field_path(path, root), [f"The field {_label(path, root)} must not be null."]
            return
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        useful = [errs for errs in branches.values() if not all(_is_null_branch(e) for e in errs)]
        if useful:
            best = max(useful, key=lambda errs: max(len(e.absolute_path) for e in errs))
            for sub in best:
                yield from _explain(sub, root)
            return
    if keyword == "required":
        for name in value:
            if isinstance(instance, dict) and name not in instance:
                label = name[:1].upper() + name[1:]
                yield field_path([*path, name], root), [f"The {label} field is required."]
        return
    if keyword == "additionalProperties" and isinstance(instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        allowed = ", ".join(known) or "none"
        for name in instance:
            if name not in known:
                yield (
                    field_path([*path, name], root),
                    [f"Unknown property '{short(name)}'. Allowed properties: {allowed}."],
                )
        return
    yield field_path(path, root), [_message(keyword, value, instance, _label(path, root))]


def _is_null_branch(error: ValidationError) -> bool:
    keyword, value = str(error.validator), error.validator_value
    return (keyword == "type" and value == "null") or (keyword == "enum" and value == [None])


def _message(keyword: str, value: Any, instance: Any, label: str) -> str:
    if keyword == "type":
        kinds = value if isinstance(value, list) else [value]
        if instance is None:
            return f"The field {label} must not be null."
        words = " or ".join(str(_TYPE_WORDS.get(k, k)) for k in kinds if k != "null")
        return f"The field {label} must be {words}."
    if keyword == "enum":
        options = [v for v in value if v is not None]
        shown = ", ".join(str(v) for v in options[:_ENUM_LIST_LIMIT])
        if len(options) > _ENUM_LIST_LIMIT:
            shown += f", … ({len(options)} values)"
        return f"The value {json.dumps(instance)} is not valid for {label}. Allowed values: {shown}."
    if keyword == "minLength":
        if value == 1:
            return f"The field {label} must not be empty."
        return f"The field {label} must be at least {value} characters long."
    if keyword == "maxLength":
        return f"The field {label} must be at most {value} characters long."
    if keyword == "pattern":
        return f"The field {label} must match the pattern '{value}'."
    if keyword == "minimum":
        return f"The field {label} must be at least {value}."
    if keyword == "maximum":
        return f"The field {label} must be at most {value}."
    if keyword == "exclusiveMinimum":
        return f"The field {label} must be greater than {value}."
    if keyword == "exclusiveMaximum":
        return f"The field {label} must be less than {value}."
    if keyword == "minItems":
        return f"The field {label} must have at least {value} item(s)."
    if keyword == "maxItems":
        return f"The field {label} must have at most {value} item(s)."
    if keyword == "format":
        return f"The field {label} must be a valid {value}."
    return f"The field {label} is not valid ({keyword})."
