"""Load a published OpenAPI 3.0 document and compile, once, what each operation needs.

The document becomes draft-7 JSON Schema (``nullable`` as a ``null`` type, references in
a ``definitions`` table); nothing here walks a schema per request."""

from __future__ import annotations

import json
import re
from dataclasses import field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from emulator.contract.validation import Compiled, SchemaCompiler
from emulator.domain.datafiles import data_path
from emulator.domain.records import dataclass
from emulator.domain.safeparse import check_yaml

DEFAULT_SCHEMA = data_path("openapi.json")
HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
_DROP_KEYS = {"nullable", "discriminator", "xml", "externalDocs", "example", "deprecated"}
_LOOSE_FORMATS = {"int32", "int64", "double", "float", "byte", "binary", "password", "uuid"}


OPENAPI_MAX_DEPTH = 256


def default_schema_path() -> Path:
    """The bundled document (source tree first, then the installed copy)."""
    return DEFAULT_SCHEMA


def load_document(path: str | Path) -> dict[str, Any]:
    raw = Path(path).read_bytes()
    if str(path).endswith(".json"):
        try:
            document = orjson.loads(raw)  # half the standard library's time
        except orjson.JSONDecodeError:  # what orjson refuses (NaN, huge integers) as json reads it
            document = json.loads(raw.decode("utf-8"))
    else:
        text = raw.decode("utf-8")
        check_yaml(text, max_depth=OPENAPI_MAX_DEPTH)  # raises a ValueError naming the line
        import yaml  # PyYAML: when a YAML document is first read

        document = yaml.safe_load(text)
    if not isinstance(document, dict) or "paths" not in document:
        raise ValueError(f"{path}: not an OpenAPI document (no 'paths')")
    if not str(document.get("openapi", "")).startswith("3.0"):
        raise ValueError(f"{path}: only OpenAPI 3.0 documents are supported")
    return document


def to_json_schema(node: Any) -> Any:
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref = node["$ref"]
        prefix = "#/components/schemas/"
        if ref.startswith(prefix):
            ref = "#/definitions/" + ref[len(prefix) :]
        return {"$ref": ref}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP_KEYS:
            continue
        if key == "format" and value in _LOOSE_FORMATS:
            continue
        if key == "properties":
            required = set(node.get("required", ()))
            out[key] = {
                name: _nullable_reference(sub) if name not in required else to_json_schema(sub)
                for name, sub in value.items()
            }
        elif key in ("items", "not", "additionalProperties") and isinstance(value, dict):
            out[key] = to_json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [to_json_schema(sub) for sub in value]
        else:
            out[key] = value
    if node.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        elif "type" not in out and not out:
            return {}
        else:
            return {"anyOf": [{"type": "null"}, out]}
    return out


def _nullable_reference(node: Any) -> Any:
    """An optional bare ``$ref`` takes null too, as the real service binds it."""
    converted = to_json_schema(node)
    if isinstance(node, dict) and "$ref" in node:
        return {"anyOf": [{"type": "null"}, converted]}
    return converted


@dataclass
class Parameter:
    """One parameter of an operation: where it goes, whether it is required, its schema compiled."""

    name: str
    location: str  # path | query | header
    required: bool
    kind: str  # the JSON type the text is read as
    validator: Compiled


@dataclass
class ApiOperation:
    """One operation of a loaded document, its request and response schemas compiled."""

    operation_id: str
    method: str
    path: str
    parameters: list[Parameter]
    body: Compiled | None
    body_required: bool
    responses: dict[int, Compiled | None]  # None: no content
    secured: bool
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    api: OpenApi | None = field(repr=False, default=None)  # the document it belongs to
    # how answers are shaped, per (status, error): emulator.contract.shaping
    plans: dict[tuple[int, bool], Any] = field(repr=False, compare=False, default_factory=dict)

    @cached_property
    def raw_body(self) -> bool:
        """The handler reads the body's text itself (``x-payemu-raw-body``, e.g. YAML)."""
        return bool(self.raw.get("x-payemu-raw-body"))


class OpenApi:
    """One loaded document: its operations, keyed by (METHOD, path template)."""

    def __init__(self, document: dict[str, Any], source: str = "<memory>", is_default: bool = False) -> None:
        self.document = document
        self.source = source
        self.is_default = is_default  # payemu's own 1.0.11.6 document
        self.own = is_default  # written by payemu (also the control API's): answers are not trimmed to it
        self.version = str(document.get("info", {}).get("version", ""))
        self.description = str(document.get("info", {}).get("description", ""))
        definitions = {
            name: to_json_schema(schema) for name, schema in document.get("components", {}).get("schemas", {}).items()
        }
        self.compiler = SchemaCompiler(definitions)
        # the endpoints built for this document when a tenant is served it (emulator.endpoints.versions):
        # kept here, so they go with the document (they refer to it through their operations)
        self.endpoints: dict[tuple[str, str], Any] = {}
        global_security = document.get("security", [])
        self.operations: dict[tuple[str, str], ApiOperation] = {}
        for path, item in document["paths"].items():
            shared = item.get("parameters", [])
            for method in HTTP_METHODS:
                if method in item:
                    op = self._operation(path, method, item[method], shared, global_security)
                    self.operations[(op.method, op.path)] = op

    @cached_property
    def interface_version(self) -> str:
        """The code version the document describes (``1.0.9.36``), else its info version."""
        found = re.search(r"Code Version (\d+(?:\.\d+)*)", self.description)
        return found.group(1) if found else self.version

    @classmethod
    def load(cls, path: str | Path | None = None) -> OpenApi:
        path = Path(path) if path else default_schema_path()
        is_default = path.resolve() == default_schema_path().resolve()
        return cls(load_document(path), source=str(path), is_default=is_default)

    def find(self, method: str, path: str) -> ApiOperation | None:
        return self.operations.get((method.upper(), path))

    def by_id(self) -> dict[str, ApiOperation]:
        return {op.operation_id: op for op in self.operations.values()}

    def _operation(
        self,
        path: str,
        method: str,
        spec: dict[str, Any],
        shared: list[dict[str, Any]],
        global_security: list[Any],
    ) -> ApiOperation:
        parameters = [self._parameter(p) for p in [*shared, *spec.get("parameters", [])]]
        body = None
        body_required = False
        request_body = spec.get("requestBody")
        if request_body:
            schema = _json_content_schema(request_body)
            body = self.compiler.compile(to_json_schema(schema)) if schema is not None else None
            body_required = bool(request_body.get("required"))
        responses: dict[int, Compiled | None] = {}
        for code, response in spec.get("responses", {}).items():
            if not str(code).isdigit():
                continue
            schema = _json_content_schema(response)
            responses[int(code)] = self.compiler.compile(to_json_schema(schema)) if schema is not None else None
        security = spec.get("security", global_security)
        operation_id = spec.get("operationId") or f"{method.upper()} {path}"
        return ApiOperation(
            operation_id=operation_id,
            method=method.upper(),
            path=path,
            parameters=parameters,
            body=body,
            body_required=body_required,
            responses=responses,
            secured=bool(security) and any(bool(s) for s in security),
            raw=spec,
            api=self,
        )

    def _parameter(self, spec: dict[str, Any]) -> Parameter:
        if "$ref" in spec:
            name = spec["$ref"].rsplit("/", 1)[-1]
            spec = self.document["components"]["parameters"][name]
        schema = to_json_schema(spec.get("schema", {}))
        kind = schema.get("type", "string") if isinstance(schema, dict) else "string"
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        return Parameter(
            name=spec["name"],
            location=spec["in"],
            required=bool(spec.get("required")) or spec["in"] == "path",
            kind=kind,
            validator=self.compiler.compile(schema),
        )


def _json_content_schema(holder: dict[str, Any]) -> Any:
    content = holder.get("content") or {}
    for media_type, media in content.items():
        if "json" in media_type or media_type == "*/*":
            return media.get("schema", {})
    return None
