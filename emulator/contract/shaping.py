"""Answers shaped for the document that serves them.

Handlers always build the newest interface's answer; :func:`shape` fits it to the
operation's document as a client generated from that document expects it (undeclared
fields left out, errors always an array, undeclared statuses answered as the runtime
does, see :func:`_plan`). Each response schema becomes a function once."""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from typing import Any

from emulator.contract.openapi import ApiOperation, OpenApi

Shaper = Callable[[Any], Any]
_COMPONENTS = "#/components/schemas/"


def _identity(value: Any) -> Any:
    return value


def _drop_body(value: Any) -> Any:
    return None


def content_schema(response: Any) -> Any:
    if not isinstance(response, dict):
        return None
    for media_type, media in (response.get("content") or {}).items():
        if "json" in media_type or media_type == "*/*":
            return media.get("schema", {}) if isinstance(media, dict) else {}
    return None


class Projector:
    def __init__(self, api: OpenApi) -> None:
        self.schemas: dict[str, Any] = api.document.get("components", {}).get("schemas", {}) or {}
        self.strict = not api.own  # leave out what the document does not declare
        self._refs: dict[str, Shaper | None] = {}
        self._by_key: dict[str, Shaper] = {}
        self._by_id: dict[int, tuple[Any, Shaper]] = {}

    # -- schema questions ----------------------------------------------------------------
    def resolve(self, schema: Any, depth: int = 0) -> Any:
        """``schema`` with references followed, also through chains."""
        while isinstance(schema, dict) and "$ref" in schema and depth < 20:
            ref = str(schema["$ref"])
            schema = self.schemas.get(ref[len(_COMPONENTS) :]) if ref.startswith(_COMPONENTS) else None
            depth += 1
        return schema

    def admits_null(self, schema: Any) -> bool:
        if not isinstance(schema, dict):
            return True
        target = self.resolve(schema)
        if not isinstance(target, dict):
            return True
        if target.get("nullable") is True:
            return True
        kind = target.get("type")
        if isinstance(kind, list):
            return "null" in kind
        if kind is not None or "properties" in target or "items" in target:
            return False
        if "enum" in target:
            return None in target["enum"]
        for key in ("anyOf", "oneOf"):
            if key in target:
                return any(self.admits_null(branch) for branch in target[key])
        if "allOf" in target:
            return all(self.admits_null(branch) for branch in target["allOf"])
        return True  # {}: any value

    def _is_array(self, schema: Any) -> bool:
        target = self.resolve(schema)
        return isinstance(target, dict) and (target.get("type") == "array" or "items" in target)

    def _is_object(self, schema: Any) -> bool:
        target = self.resolve(schema)
        return isinstance(target, dict) and (target.get("type") == "object" or "properties" in target)

    # -- shaping functions ---------------------------------------------------------------
    def shaper(self, schema: Any) -> Shaper:
        # the document's schema objects live as long as it does: found by identity per
        # request, by content only the first time (json.dumps per answer cost ~5 µs)
        known = self._by_id.get(id(schema))
        if known is not None and known[0] is schema:
            return known[1]
        key = json.dumps(schema, sort_keys=True, default=str)
        found = self._by_key.get(key)
        if found is None:
            found = self._by_key[key] = self._build(schema)
        self._by_id[id(schema)] = (schema, found)
        return found

    def _ref(self, name: str) -> Shaper:
        if name in self._refs:
            done = self._refs[name]
            if done is not None:
                return done
            # a model that contains itself: look it up when the value arrives
            return lambda value: (self._refs.get(name) or _identity)(value)
        self._refs[name] = None
        built = self._build(self.schemas.get(name, {}))
        self._refs[name] = built
        return built

    def _build(self, schema: Any) -> Shaper:
        if not isinstance(schema, dict):
            return _identity
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self._ref(ref[len(_COMPONENTS) :]) if ref.startswith(_COMPONENTS) else _identity
        if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
            return self._build(schema["allOf"][0])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                return self._branches(schema[key])
        if isinstance(schema.get("properties"), dict):
            return self._object(schema)
        if isinstance(schema.get("items"), dict):
            item = self._build(schema["items"])
            if item is _identity:
                return _identity
            return lambda value: [item(v) for v in value] if isinstance(value, list) else value
        return _identity

    def _branches(self, branches: list[Any]) -> Shaper:
        objects = [self._build(b) for b in branches if self._is_object(b)]
        arrays = [self._build(b) for b in branches if self._is_array(b)]
        for_object = objects[0] if len(objects) == 1 else _identity
        for_array = arrays[0] if len(arrays) == 1 else _identity
        if for_object is _identity and for_array is _identity:
            return _identity

        def shape(value: Any) -> Any:
            if isinstance(value, dict):
                return for_object(value)
            if isinstance(value, list):
                return for_array(value)
            return value

        return shape

    def _object(self, schema: dict[str, Any]) -> Shaper:
        properties: dict[str, Any] = schema["properties"]
        required = set(schema.get("required", ()))
        extra = schema.get("additionalProperties")
        keep_extra = not self.strict or extra is True or isinstance(extra, dict)
        children = {name: self._build(sub) for name, sub in properties.items()}
        no_null = {name for name, sub in properties.items() if name not in required and not self.admits_null(sub)}
        if keep_extra and not no_null and all(child is _identity for child in children.values()):
            return _identity  # nothing to leave out at any depth: the value as it is

        def shape(value: Any) -> Any:
            if not isinstance(value, dict):
                return value
            out: dict[str, Any] = {}
            for name, item in value.items():
                child = children.get(name)
                if child is None:
                    if keep_extra:
                        out[name] = item
                elif item is None and name in no_null:
                    continue
                else:
                    out[name] = child(item)
            return out

        return shape

    def declares_one_object(self, schema: Any) -> bool:
        """An error body declared as one object (the 1.0.9.36 export's 400): the runtime sends an array."""
        return self._is_object(schema) and not self._is_array(schema)


_PROJECTORS: weakref.WeakKeyDictionary[OpenApi, Projector] = weakref.WeakKeyDictionary()


def projector(api: OpenApi) -> Projector:
    found = _PROJECTORS.get(api)
    if found is None:
        found = _PROJECTORS[api] = Projector(api)
    return found


def shape(op: ApiOperation, status: int, body: Any, error: bool) -> tuple[Any, int | None, int]:
    """``body`` for ``op``'s document, the status to check it against (None: unchecked), the status to send."""
    if op.api is None:
        return body, status, status
    plans = op.plans
    plan = plans.get((status, error))
    if plan is None:
        plan = plans[(status, error)] = _plan(op, status, error)
    shaper, declared, body_only, sent = plan
    if body_only and body is not None:
        declared = None  # declared without a body (another document): sent unchecked
    return (shaper(body) if shaper is not None else body), declared, sent


Plan = tuple["Shaper | None", "int | None", bool, int]
# Answers of the runtime itself, sent whether or not an operation declares them: the key
# check's 401, the binder's 400, the HTTP server's 408/413/414/415/431, payemu's limits'
# 507, an internal error's 500, the 503 of a key whose --state save did not land.
RUNTIME_ERRORS = frozenset({400, 401, 408, 413, 414, 415, 431, 500, 503, 507})


def _plan(op: ApiOperation, status: int, error: bool) -> Plan:
    """How answers of ``status`` to ``op`` are shaped, checked and sent, worked out once."""
    # Fields the document does not declare are left out (payemu's own document keeps them,
    # so the schema check still catches an invented field); an optional non-nullable field is
    # left out rather than null. A status must be declared by the document, except the
    # runtime's own: 401, the binder's 400, 408, 413, 414, 415, 431, 507 and 500. A not-found
    # where no 404 is declared is the binder's 400, or a delete's bodiless 200 (1.0.7.15).
    api = op.api
    assert api is not None
    responses = op.raw.get("responses") or {}
    declared = responses.get(str(status))
    if declared is None:
        if error and status == 404:
            ok = responses.get("200")
            if "400" not in responses and op.method == "DELETE" and ok is not None and content_schema(ok) is None:
                return _drop_body, None, False, 200  # a delete of nothing, where 200 is all it declares
            shaper, declared_as, body_only, _ = _plan(op, 400, error)
            return shaper, declared_as, body_only, 400  # not found, where 404 is not declared
        if error and status in RUNTIME_ERRORS:
            return None, None, False, status
        return None, status, False, status  # checked: undeclared, so a violation
    schema = content_schema(declared)
    if schema is None:
        # declared without a body: the runtime's body goes out as it always did
        return None, status, not api.own, status
    tools = projector(api)
    if error:
        # an error array where the document declares one object goes out unchecked
        return None, (None if tools.declares_one_object(schema) else status), False, status
    shaper = tools.shaper(schema)
    return (None if shaper is _identity else shaper), status, False, status
