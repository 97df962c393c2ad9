"""Which published version of the interface serves a request.

A tenant may be served another document than the server's (``PUT /_emulator/interface``),
so one server answers an old client's tests and a new client's side by side. A document
is checked before use; what is wrong is one line (:class:`DocumentError`)."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from emulator.contract.openapi import HTTP_METHODS, OpenApi, default_schema_path
from emulator.contract.wire import error_response
from emulator.domain import budget as weights
from emulator.domain import errors
from emulator.domain.safeparse import MAX_TEXT_CHARS, TooComplex, check_json_depth, check_yaml
from emulator.endpoints.pipeline import Endpoint, Handler
from emulator.endpoints.routing import Responder

if TYPE_CHECKING:
    from emulator.tenants.runtime import Runtime
    from emulator.tenants.tenants import Tenant

# What payemu cannot run without: the five payment operations (every published version has them).
REQUIRED_OPERATIONS = (
    ("POST", "/PaymentGateway/charge"),
    ("POST", "/PaymentGateway/authorize"),
    ("PUT", "/PaymentGateway/capture"),
    ("DELETE", "/PaymentGateway/void"),
    ("PUT", "/PaymentGateway/refund"),
)
_COMPONENTS = "#/components/schemas/"


class DocumentError(ValueError): ...


def problem(document: Any) -> str | None:
    if not isinstance(document, dict):
        return "not an OpenAPI document (the top level is not an object)"
    version = document.get("openapi")
    if version is None:
        hint = " (a Swagger 2.0 document)" if "swagger" in document else ""
        return f"not an OpenAPI 3.0 document: it has no 'openapi' field{hint}"
    if not str(version).startswith("3.0"):
        return f"OpenAPI {version} is not supported; payemu reads OpenAPI 3.0 documents"
    paths = document.get("paths")
    if not isinstance(paths, dict) or not paths:
        return "the document has no paths"
    present = {
        (method.upper(), path)
        for path, item in paths.items()
        if isinstance(item, dict)
        for method in item
        if method in HTTP_METHODS
    }
    missing = [f"{m} {p}" for m, p in REQUIRED_OPERATIONS if (m, p) not in present]
    if missing:
        return f"operations payemu needs are missing: {', '.join(missing)}"
    schemas = (document.get("components") or {}).get("schemas") or {}
    undefined = sorted({ref for ref in _references(document) if ref not in schemas})
    if undefined:
        return f"references to undefined components: {', '.join(undefined[:5])}"
    return None


def _references(node: Any) -> Iterator[str]:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith(_COMPONENTS):
                yield ref[len(_COMPONENTS) :]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def from_document(document: Any, source: str, afford: Callable[[int], None] | None = None) -> OpenApi:
    """An :class:`OpenApi` for a checked document, its validators compiled now; with
    ``afford``, it is called with the document's :func:`weight` before the validators are
    built (it raises to refuse them)."""
    found = problem(document)
    if found:
        raise DocumentError(found)
    try:
        api = OpenApi(document, source=source)
    except Exception as exc:  # any malformed part: one line, never a traceback
        raise _unusable(exc) from None
    if afford is not None:
        afford(weight(api))
    try:
        api.compiler.warm()
    except Exception as exc:
        raise _unusable(exc) from None
    return api


def _unusable(exc: Exception) -> DocumentError:
    return DocumentError(f"the document cannot be used: {type(exc).__name__}: {exc}".splitlines()[0])


def weight(api: OpenApi) -> int:
    """What ``api`` holds once its validators are built, in bytes, measured without building
    them (:data:`~emulator.domain.budget.INTERFACE_PER_VALUE`): the parsed document and its
    converted definitions, and each validator's copy of what it reaches through ``$ref``."""
    return weights.INTERFACE_PER_BYTE * weights.weigh(api.document) + weights.INTERFACE_PER_VALUE * (
        api.compiler.footprint()
    )


def load_checked(path: str | Path) -> OpenApi:
    """The document at ``path``, size and nesting checked before any parser builds it."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_TEXT_CHARS:
            raise DocumentError(f"{path}: larger than {MAX_TEXT_CHARS} bytes")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DocumentError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise DocumentError(f"{path}: cannot be read (not UTF-8 text)") from None
    import yaml  # PyYAML: when a document is first read

    try:
        if path.suffix.lower() == ".json":
            check_json_depth(text.encode("utf-8"))
            document = json.loads(text)
        else:
            check_yaml(text)
            document = yaml.safe_load(text)
    except TooComplex as exc:
        raise DocumentError(f"{path}: refused before parsing: {exc}") from None
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DocumentError(f"{path}: not JSON or YAML ({first})") from None
    if path.resolve() == default_schema_path().resolve():
        return OpenApi.load(path)
    try:
        return from_document(document, str(path))
    except DocumentError as exc:
        raise DocumentError(f"{path}: {exc}") from None


# -- handlers for another document's operation ids ---------------------------------------
@cache
def _default_ids() -> dict[tuple[str, str], str]:
    document = json.loads(default_schema_path().read_text(encoding="utf-8"))
    return {
        (method.upper(), path): op["operationId"]
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in HTTP_METHODS and "operationId" in op
    }


def handlers_for(api: OpenApi, handlers: dict[str, Handler]) -> dict[str, Handler]:
    """``handlers`` keyed by ``api``'s operation ids, by method and path in payemu's own document."""
    if api.is_default:
        return handlers
    table = dict(handlers)
    for (method, path), op in api.operations.items():
        own = _default_ids().get((method, path))
        if own in handlers:
            table[op.operation_id] = handlers[own]
    return table


# -- per-tenant choice -------------------------------------------------------------------
def choose(runtime: Runtime, tenant: Tenant, api: OpenApi | None, weight: int = 0) -> None:
    """Serve ``tenant`` with ``api`` (None: the server's document again), charging its
    ``weight`` in bytes to the tenant's budget in place of the last one's (a 507 when it
    does not fit once journal entries and finished transactions made what room they can)."""
    budget = tenant.budget
    before = runtime.interface_weights.pop(tenant, 0)
    budget.release(before)
    if api is not None and api is not runtime.api:
        if not budget.make_room(weight):
            budget.charge(before)
            runtime.interface_weights[tenant] = before
            raise budget.refusal("body", weight, "This interface document, compiled,")
        budget.charge(weight)
        runtime.interface_weights[tenant] = weight
    # The old document and its operations refer to each other and the collector runs seldom
    # (emulator.edge.server), so a collection runs here: without it each swap kept ~0.1 MB.
    replaced = runtime.interfaces.get(tenant)
    if api is None or api is runtime.api:
        runtime.interfaces.pop(tenant, None)
    else:
        runtime.interfaces[tenant] = api
    if replaced is not None and replaced is not api:
        replaced.endpoints.clear()
        gc.collect()  # a control call, seldom made: a few ms here, not memory held


def served_by(runtime: Runtime, tenant: Tenant | None) -> OpenApi:
    if runtime.interfaces and tenant is not None:
        return runtime.interfaces.get(tenant, runtime.api)
    return runtime.api


def endpoint_for(endpoint: Endpoint, scope: Scope) -> Endpoint | Responder:
    """The endpoint for the request of ``scope``: ``endpoint`` unless the tenant is served
    another document. The router's chooser: asked only while some tenant is
    (``runtime.interfaces``, :class:`emulator.endpoints.routing.Operations`)."""
    runtime = endpoint.runtime
    api = served_by(runtime, runtime.tenants.get(Headers(scope=scope).get("x-api-key")))
    if api is runtime.api:
        return endpoint
    table = api.endpoints  # held by the document: they go when it goes (no table keyed by it)
    key = (endpoint.operation.method, endpoint.operation.path)
    found: Endpoint | Responder | None = table.get(key)
    if found is None:
        op = api.find(*key)
        found = table[key] = Endpoint(runtime, op, endpoint.handler, endpoint.journal) if op else _absent(api)
    return found


def _absent(api: OpenApi) -> Responder:
    version = api.interface_version  # (not the document: nothing here keeps it alive)

    async def answer(request: Request) -> Response:
        message = f"No resource at {request.method} {request.url.path} in interface {version}."
        return error_response(errors.not_found("path", message))

    return answer


def describe(runtime: Runtime, tenant: Tenant) -> dict[str, Any]:
    api = served_by(runtime, tenant)
    return {
        "interfaceVersion": api.interface_version,
        "source": api.source,
        "operations": len(api.operations),
        "serverDefault": api is runtime.api,
    }
