"""The one request pipeline every documented operation goes through.

For each request: route → API key → parameters → body (size, media type, JSON, schema,
case-insensitive enums) → handler → response checked against the schema → journal. A
handler receives a :class:`Call` and returns a :class:`Reply` or raises
:class:`~emulator.http.errors.ApiError`; it never builds an error body or a Response itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.http import errors, leniency, projection
from emulator.http.openapi import OpenApi, Operation, Parameter
from emulator.payments import tenant_settings
from emulator.payments.clock import isoformat
from emulator.safeparse import TooComplex, check_json_depth

if TYPE_CHECKING:
    from emulator.payments.tenants import Tenant
    from emulator.runtime import Runtime

log = logging.getLogger("payemu")
JSON_MEDIA = "application/json"
_JSON_TYPES = ("application/json", "text/json")


@dataclass
class Reply:
    """What a handler answers. ``body`` None means no content."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    error: bool = False  # built by emulator.http.errors (an ApiError)


@dataclass
class Call:
    """Everything a handler may use: the tenant of the key, the validated input."""

    runtime: Runtime
    tenant: Tenant
    operation: Operation
    body: Any
    path: dict[str, Any]
    query: dict[str, Any]
    headers: Headers
    request: Request
    attempts: list[dict[str, Any]] = field(default_factory=list)
    note: dict[str, Any] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        """``http://host:port`` as the client addressed us (for Location headers, links)."""
        return str(self.request.base_url).rstrip("/")


Handler = Callable[[Call], Awaitable[Reply]]


CLIENT_GONE = "client-disconnected"  # the journal's fault for a client that left mid-request


class DropConnection(Exception):
    """Raised by a handler to close the connection without an answer (a simulated
    network fault). ``journal_status`` is what the journal records instead of a status."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def dumps(body: Any) -> bytes:
    try:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    except UnicodeEncodeError:
        # a lone surrogate (e.g. from a YAML escape) has no UTF-8 form: send it \u-escaped
        return json.dumps(body, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    if body is None:
        return Response(status_code=status, headers=headers)
    return Response(dumps(body), status_code=status, headers=headers, media_type=JSON_MEDIA)


def error_response(error: errors.ApiError) -> Response:
    return json_response(error.status, error.body, error.headers)


# -- reading the request ----------------------------------------------------------------
_SURROGATE = re.compile("[\ud800-\udfff]")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"the number {text[:40]} is too large")
    return number


def _has_lone_surrogate(value: Any) -> bool:
    """True when a string (or key) of ``value`` holds half of a UTF-16 surrogate pair, which
    ``\\ud800`` escapes produce and which no UTF-8 text can carry."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def parse_json(raw: bytes) -> Any:
    try:
        # strict UTF-8 first: json.loads(bytes) would let raw surrogates (ED A0 80) through
        text = raw.decode("utf-8")
        check_json_depth(raw)
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        if (b"\\ud" in raw or b"\\uD" in raw) and _has_lone_surrogate(value):
            raise errors.invalid("body", "The JSON body holds a \\u escape of a lone surrogate (not Unicode text).")
        return value
    except UnicodeDecodeError:
        raise errors.invalid("body", "The request body is not valid UTF-8.") from None
    except TooComplex as exc:
        raise errors.invalid("body", f"The JSON body is nested too deeply: {exc}.") from None
    except RecursionError:
        raise errors.invalid("body", "The JSON body is nested too deeply.") from None
    except json.JSONDecodeError as exc:
        raise errors.invalid(
            "body", f"The request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}."
        ) from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python's guard against huge integers
            raise errors.invalid("body", "The JSON body holds a number of more than 4300 digits.") from None
        raise errors.invalid("body", f"The request body is not valid JSON: {exc}.") from None


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise errors.too_large(limit)
        except ValueError:
            raise errors.invalid("Content-Length", "The Content-Length header is not a number.") from None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise errors.too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _is_json_media(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media in _JSON_TYPES or (media.startswith("application/") and media.endswith("+json"))


def _read_parameter(param: Parameter, raw: str | None) -> tuple[Any, list[errors.FieldErrors]]:
    label = param.name[:1].upper() + param.name[1:]
    if raw is None or (raw == "" and param.location != "query"):
        if param.required:
            return None, [(param.name, [f"The {label} field is required."])]
        return None, []
    value: Any = raw
    try:
        if param.kind == "integer":
            value = int(raw)
        elif param.kind == "number":
            value = _finite_float(raw)
        elif param.kind == "boolean":
            lowered = raw.lower()
            if lowered not in ("true", "false"):
                raise ValueError
            value = lowered == "true"
    except ValueError:
        kind = {"integer": "a whole number", "number": "a number", "boolean": "true or false"}
        return None, [(param.name, [f"The field {label} must be {kind[param.kind]}."])]
    value = param.validator.normalize(value)
    if not param.validator.is_valid(value):
        return None, param.validator.errors(value, root=param.name)
    return value, []


# -- the endpoint --------------------------------------------------------------------
class Endpoint:
    """One documented operation bound to its handler."""

    def __init__(self, runtime: Runtime, operation: Operation, handler: Handler, journal: bool = True) -> None:
        self.runtime = runtime
        self.operation = operation
        self.handler = handler
        self.journal = journal  # False for the control API: the journal records the public API

    async def __call__(self, request: Request) -> Response:
        started = time.perf_counter()
        op = self.operation
        tenant: Tenant | None = None
        call: Call | None = None
        body: Any = None
        warnings: list[str] = []  # leniencies used to read the request (emulator.http.leniency)
        try:
            if op.secured:
                tenant = self.runtime.authenticate(request.headers.get("x-api-key"))
            else:
                tenant = self.runtime.tenants.get(request.headers.get("x-api-key"))
            path_values, query_values = self._parameters(request)
            body = await self._body(request, tenant, warnings)
            call = Call(
                runtime=self.runtime,
                tenant=tenant,  # type: ignore[arg-type]
                operation=op,
                body=body,
                path=path_values,
                query=query_values,
                headers=request.headers,
                request=request,
            )
            reply = await self.handler(call)
        except errors.ApiError as exc:
            reply = Reply(exc.status, exc.body, exc.headers, error=True)
        except DropConnection as exc:
            if tenant is not None and self.journal:
                self._journal(tenant, request, body, None, call, started, dropped=exc.reason)
            return await _drop(request, exc)
        except ClientDisconnect:  # the client went (or was timed out) before its body ended
            if tenant is not None and self.journal:
                self._journal(tenant, request, body, None, call, started, dropped=CLIENT_GONE)
            return _NoResponse()
        except Exception:
            log.exception("payemu bug while answering %s %s", op.method, op.path)
            reply = Reply(500, errors.internal("payemu hit an internal error; see its log.").body, error=True)
        reply = self._checked(reply)
        if warnings:
            reply.headers = {**reply.headers, leniency.WARNINGS_HEADER: "; ".join(warnings)}
        if tenant is not None and self.journal:
            self._journal(tenant, request, body, reply, call, started, warnings=warnings)
        return json_response(reply.status, reply.body, reply.headers)

    def _parameters(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        path_values: dict[str, Any] = {}
        query_values: dict[str, Any] = {}
        problems: list[errors.FieldErrors] = []
        for param in self.operation.parameters:
            if param.location == "path":
                raw = request.path_params.get(param.name)
            elif param.location == "query":
                raw = request.query_params.get(param.name)
            elif param.location == "header":
                raw = request.headers.get(param.name)
            else:
                continue
            value, found = _read_parameter(param, raw)
            problems.extend(found)
            if not found:
                (path_values if param.location == "path" else query_values)[param.name] = value
        if problems:
            raise errors.invalid_many(problems)
        return path_values, query_values

    async def _body(self, request: Request, tenant: Tenant | None, warnings: list[str]) -> Any:
        op = self.operation
        if op.raw.get("x-payemu-raw-body"):
            # The handler reads the text itself (e.g. YAML); it checks the media type.
            try:
                return (await read_body(request, self.runtime.settings.max_body_bytes)).decode()
            except UnicodeDecodeError:
                raise errors.invalid("body", "The request body is not valid UTF-8.") from None
        if op.body is None:
            return None
        raw = await read_body(request, self.runtime.settings.max_body_bytes)
        if not raw.strip():
            if op.body_required:
                raise errors.invalid("body", "A JSON request body is required.")
            return None
        content_type = request.headers.get("content-type", "")
        if not _is_json_media(content_type):
            raise errors.unsupported_media_type(content_type)
        value = op.body.normalize(parse_json(raw))
        # the control API is payemu's own: always strict
        strict = not self.journal or tenant_settings.strict(self.runtime, tenant)
        value = leniency.read(op.body, value, strict, warnings)
        if not op.body.is_valid(value):
            problems = leniency.forgiven(value, op.body.errors(value))
            if problems:
                raise errors.invalid_many(problems)
        return value

    def _checked(self, reply: Reply) -> Reply:
        """A response that breaks the schema is a payemu bug: logged, counted, and
        answered as a 500 naming the violation."""
        op = self.operation
        problem: str | None = None
        if reply.status == 501:  # a pending operation (see emulator.pending)
            return reply
        # the body as the operation's document declares it (see emulator.http.projection)
        reply.body, declared = projection.shape(op, reply.status, reply.body, reply.error)
        if declared is None:
            return reply
        if declared not in op.responses:
            problem = f"status {reply.status} is not documented"
        else:
            validator = op.responses[declared]
            if validator is None:
                if reply.body is not None:
                    problem = f"status {reply.status} is documented without a body"
            elif not validator.is_valid(reply.body):
                details = "; ".join(
                    f"{name}: {' '.join(msgs)}" for name, msgs in validator.errors(reply.body, root="response")
                )
                problem = f"the {reply.status} body breaks the schema: {details}"
        if problem is None:
            return reply
        source = op.api.source if op.api else self.runtime.api.source
        message = f"payemu bug: the response to {op.operation_id} broke {source}: {problem}"
        log.error(message)
        self.runtime.violations.append(message)
        return Reply(500, errors.internal(message).body)

    def _journal(
        self,
        tenant: Tenant,
        request: Request,
        body: Any,
        reply: Reply | None,
        call: Call | None,
        started: float,
        dropped: str | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        entry: dict[str, Any] = {
            "time": isoformat(tenant.now()),
            "method": request.method,
            "path": request.scope["path"],
            "query": request.scope["query_string"].decode("latin-1"),
            "operationId": self.operation.operation_id,
            "interfaceVersion": self.operation.api.interface_version if self.operation.api else None,
            "status": reply.status if reply else None,
            "latencyMs": round((time.perf_counter() - started) * 1000, 3),
            "request": body,  # the journal masks entries before anything reads them
            "response": reply.body if reply else None,
            "attempts": call.attempts if call else [],
        }
        if dropped:
            entry["fault"] = dropped
        if warnings:
            entry["warnings"] = list(warnings)
        tenant.journal.record(entry)


async def _drop(request: Request, exc: DropConnection) -> Response:
    """Close the client's connection without answering. Under uvicorn the transport is
    aborted; in-process (ASGI transport) the exception reaches the client instead."""
    cycle = getattr(request.receive, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        raise exc
    transport.abort()
    await asyncio.sleep(0)
    return _NoResponse()


class _NoResponse(Response):
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        return None


Responder = Callable[[Request], Awaitable[Response]]
Chooser = Callable[[Endpoint, Request], Responder]


def build_routes(
    runtime: Runtime,
    api: OpenApi,
    handlers: dict[str, Handler],
    fallback: Handler,
    journal: bool = True,
    chooser: Chooser | None = None,
) -> list[Route]:
    """One Starlette route per path, dispatching on the method, so a wrong method gets
    a 405 listing exactly the methods of that path. ``journal=False``: requests are not
    recorded in the tenant's journal (the control API). ``chooser`` may answer a request
    with another endpoint (a tenant served another version: emulator.http.versions)."""
    by_path: dict[str, dict[str, Endpoint]] = {}
    for op in api.operations.values():
        handler = handlers.get(op.operation_id, fallback)
        by_path.setdefault(op.path, {})[op.method] = Endpoint(runtime, op, handler, journal)
    return [_route(path, methods, chooser) for path, methods in by_path.items()]


def _route(path: str, endpoints: dict[str, Endpoint], chooser: Chooser | None = None) -> Route:
    async def dispatch(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        if chooser is not None:
            return await chooser(endpoints[method], request)(request)
        return await endpoints[method](request)

    methods: Sequence[str] = list(endpoints)
    return Route(path, dispatch, methods=methods, name=path)
