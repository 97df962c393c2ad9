"""The one request pipeline every documented operation goes through.

For each request: route → API key → parameters → body (size, media type, JSON, schema,
case-insensitive enums) → handler → response checked against the schema → journal. A
handler receives a :class:`Call` and returns a :class:`Reply` or raises
:class:`~emulator.domain.errors.ApiError`; it never builds an error body or a Response itself.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import field
from functools import lru_cache
from time import perf_counter
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.types import Receive, Scope, Send

from emulator.contract import dotnet_binder as binder
from emulator.contract import leniency
from emulator.contract import shaping as projection
from emulator.contract.openapi import ApiOperation
from emulator.contract.wire import (
    ABORT,
    JSON_MEDIA_BYTES,
    dumps,
    is_json_media,
    messages,
    parse_json,
    read_parameter,
    receive_body,
)
from emulator.domain import errors
from emulator.domain.model import DropConnection
from emulator.domain.records import dataclass
from emulator.endpoints.deferred import OnFirstCall
from emulator.stores import tenant_settings
from emulator.stores.journal import Entry

if TYPE_CHECKING:
    from emulator.tenants.runtime import Runtime
    from emulator.tenants.tenants import Tenant

log = logging.getLogger("payemu")


@dataclass(slots=True)
class Reply:
    """What a handler answers. ``body`` None means no content."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    error: bool = False  # built by emulator.domain.errors (an ApiError)


class Call:
    """Everything a handler may use: the tenant of the key, the validated input, and the
    request as Starlette's :class:`~starlette.requests.Request` (made when first asked for)."""

    __slots__ = ("_request", "attempts", "body", "operation", "path", "query", "runtime", "scope", "tenant")

    def __init__(
        self,
        runtime: Runtime,
        tenant: Tenant,
        operation: ApiOperation,
        body: Any,
        path: dict[str, Any],
        query: dict[str, Any],
        scope: Scope,
        request: Request | Receive,
    ) -> None:
        self.runtime = runtime
        self.tenant = tenant
        self.operation = operation
        self.body = body
        self.path = path
        self.query = query
        self.scope = scope
        self._request = request  # the Request, or until made the ASGI receive to make it with
        self.attempts: list[Any] = []  # JSON objects, or records with to_json (journal)

    @property
    def request(self) -> Request:
        request = self._request
        if not isinstance(request, Request):
            request = self._request = Request(self.scope, request)
        return request

    @property
    def headers(self) -> Headers:
        return self.request.headers

    @property
    def base_url(self) -> str:
        """``http://host:port`` as the client addressed us (for Location headers, links):
        the Host header as sent when it is a plain host, else as Starlette reads it."""
        scope = self.scope
        host = None
        for name, value in scope["headers"]:  # a loop: a generator cost more than the search
            if name == b"host":
                host = value
                break
        if host:
            found = _plain_base(scope.get("scheme", "http"), host, scope.get("root_path", ""))
            if found is not None:
                return found
        return str(self.request.base_url).rstrip("/")


_PLAIN_HOST = r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?"  # compiled by re when first used


@lru_cache(maxsize=256)
def _plain_base(scheme: str, host: bytes, root_path: str) -> str | None:
    """``scheme://host/root`` for a plain Host header (name or address, and a port), else None."""
    text = host.decode("latin-1")
    return f"{scheme}://{text}{root_path}".rstrip("/") if re.fullmatch(_PLAIN_HOST, text) else None


Handler = Callable[[Call], Awaitable[Reply]]
TenantOf = Callable[[Request], "Tenant | None"]


ENTRY_OVERHEAD = 512  # bytes an entry (and each of its attempts) holds beyond the bodies
CLIENT_GONE = "client-disconnected"  # the journal's fault for a client that left mid-request
_tuple_new = tuple.__new__  # a named tuple made from all its values, without its own __new__
NOTES = "payemu.notes"  # scope key: notes a wrapper (emulator.proxy.replay) adds to the journal's warnings


# -- the endpoint --------------------------------------------------------------------
class Endpoint:
    """One documented operation bound to its handler."""

    def __init__(
        self,
        runtime: Runtime,
        operation: ApiOperation,
        handler: Handler,
        journal: bool = True,
        tenant_of: TenantOf | None = None,
    ) -> None:
        self.runtime = runtime
        self.operation = operation
        self.handler = handler  # as given: an OnFirstCall (emulator.api) until its first call
        self._handle: Handler = self._first_call if isinstance(handler, OnFirstCall) else handler
        self.journal = journal  # False for the control API: the journal records the public API
        self.tenant_of = tenant_of  # how a keyless operation finds a tenant (the payment page: its token)
        self.interface_version = operation.api.interface_version if operation.api else None
        # fields where the binder refuses a fraction (contract.dotnet_binder), found by the first body
        self.integers: tuple[binder.Path, ...] = ()
        self.integer_tree: binder.Tree = {}
        self.has_fraction: binder.Check | None = self._first_fraction_check if operation.body else None

    def _first_fraction_check(self, value: Any) -> bool:
        """``has_fraction`` until the first body: finds the integer fields, then checks."""
        body = self.operation.body
        assert body is not None
        self.integers = binder.integer_paths(body.schema, body._compiler.definitions)
        self.integer_tree = binder.tree(self.integers)
        self.has_fraction = binder.checker(self.integers)
        return self.has_fraction is not None and self.has_fraction(value)

    async def _first_call(self, call: Call) -> Reply:
        """``_handle`` until a deferred handler's first call: loads it, which is called from then on."""
        assert isinstance(self.handler, OnFirstCall)
        loaded: Handler = self.handler.load()
        self._handle = loaded
        return await loaded(call)

    async def respond(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The whole pipeline for one request, its answer sent as two ASGI messages; none
        when the connection is to close without an answer (a scenario's fault, or a client
        that left)."""
        started = perf_counter()
        op = self.operation
        tenant: Tenant | None = None
        call: Call | None = None
        body: Any = None
        sent: bytes | None = None  # the body's JSON text, when it is exactly ``body``
        # leniencies used to read the request (emulator.contract.leniency), after any note a
        # wrapper left in the scope (NOTES: the replay's "not in the recording")
        notes = scope.get(NOTES)
        warnings: list[str] = list(notes) if notes else []
        headers = dict(reversed(scope["headers"]))  # by name; of a repeated one the first, as Headers.get
        request: Request | Receive = receive  # a Starlette Request only for what reads one
        length = headers.get(b"content-length")
        key = headers.get(b"x-api-key")
        try:
            if op.secured:
                tenant = self.runtime.authenticate(key.decode("latin-1") if key is not None else None, headers)
            elif self.tenant_of is not None:
                request = Request(scope, receive)
                tenant = self.tenant_of(request)
            else:
                tenant = self.runtime.tenants.get(key.decode("latin-1") if key is not None else None)
            if op.parameters:
                if not isinstance(request, Request):
                    request = Request(scope, receive)
                path_values, query_values = self._parameters(request)
            else:
                path_values, query_values = {}, {}
            if op.raw_body or op.body is not None:
                limit = self.runtime.settings.max_body_bytes
                raw = await receive_body(receive, limit, length)
                body, sent = self._body(raw, headers, tenant, warnings)
            call = Call(self.runtime, tenant, op, body, path_values, query_values, scope, request)  # type: ignore[arg-type]
            reply = await self._handle(call)
        except errors.ApiError as exc:
            reply = Reply(exc.status, exc.body, exc.headers, error=True)
        except DropConnection as exc:
            if tenant is not None and self.journal:
                self._journal(tenant, scope, sent or body, None, call, started, dropped=exc.reason)
            await _drop(scope, exc)
            return
        except ClientDisconnect:  # the client went (or was timed out) before its body ended
            if tenant is not None and self.journal:
                self._journal(tenant, scope, sent or body, None, call, started, dropped=CLIENT_GONE)
            return
        except Exception:
            log.exception("payemu bug while answering %s %s", op.method, op.path)
            reply = Reply(500, errors.internal("payemu hit an internal error; see its log.").body, error=True)
        reply = self._checked(reply)
        if warnings:
            reply.headers = {**reply.headers, leniency.WARNINGS_HEADER: "; ".join(warnings)}
        payload = dumps(reply.body) if reply.body is not None else None
        if tenant is not None and self.journal:
            size = len(payload or b"") + int(length or 0)
            self._journal(tenant, scope, sent or body, reply, call, started, warnings, size, payload)
        start, body_message = messages(reply.status, reply.headers, payload, scope["method"])
        await send(start)
        await send(body_message)

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
            value, found = read_parameter(param, raw)
            problems.extend(found)
            if not found:
                (path_values if param.location == "path" else query_values)[param.name] = value
        if problems:
            raise errors.invalid_many(problems)
        return path_values, query_values

    def _body(
        self, raw: bytes, headers: dict[bytes, bytes], tenant: Tenant | None, warnings: list[str]
    ) -> tuple[Any, bytes | None]:
        """The request's body value (of its bytes, ``raw``), and its JSON text when that text
        is exactly the value (valid as sent: the journal keeps the text, and reads it back
        when first read)."""
        op = self.operation
        if op.raw_body:
            # The handler reads the text itself (e.g. YAML); it checks the media type.
            try:
                return raw.decode(), None
            except UnicodeDecodeError:
                raise errors.invalid("body", "The request body is not valid UTF-8.") from None
        assert op.body is not None
        if not raw.strip():
            if op.body_required:
                raise errors.invalid("body", "A JSON request body is required.")
            return None, None
        content_type = headers.get(b"content-type") or b""
        if content_type != JSON_MEDIA_BYTES and not is_json_media(content_type.decode("latin-1")):
            raise errors.unsupported_media_type(content_type.decode("latin-1"))
        value = parse_json(raw)
        if op.body.canonical_when_valid and op.body.is_valid(value):
            if self.has_fraction is not None and self.has_fraction(value):
                self._whole_numbers(value)
            return value, raw  # valid as sent: nothing to rewrite or forgive (the common case)
        value = self._forgiven(value, tenant, warnings)
        if self.has_fraction is not None and self.has_fraction(value):
            self._whole_numbers(value)
        return value, None

    def _whole_numbers(self, value: Any) -> None:
        """A 400 for each integer field sent with a fraction, as the binder answers it."""
        problems = binder.fractions(value, self.integers, self.integer_tree)
        if problems:
            raise errors.invalid_many(problems)

    def _forgiven(self, value: Any, tenant: Tenant | None, warnings: list[str]) -> Any:
        """A body not valid as sent: read case-insensitively and as leniently as the real
        service (each leniency noted in ``warnings``), else a 400 naming every problem."""
        op = self.operation
        assert op.body is not None
        value = op.body.normalize(value)
        # the control API is payemu's own: always strict
        strict = not self.journal or tenant_settings.strict(self.runtime, tenant)
        if op.body.is_valid(value):
            return value  # valid once enum values and property names are in canonical case
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
        if reply.status == 501:  # an operation payemu has no handler for (emulator.app.build.not_built)
            return reply
        # the body as the operation's document declares it (see emulator.contract.shaping)
        reply.body, declared, reply.status = projection.shape(op, reply.status, reply.body, reply.error)
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
        scope: Scope,
        body: Any,
        reply: Reply | None,
        call: Call | None,
        started: float,
        warnings: list[str] | None = None,
        size: int | None = None,
        payload: bytes | None = None,
        dropped: str | None = None,
    ) -> None:
        """Record the call; ``size``, the bytes of its request and answer, weighs the entry
        against the journal's byte limit (estimated from the entry when not given). The
        request and the answer may be given as their JSON text (``body`` as bytes, and
        ``payload``): the journal reads them back when it is first read, so the request
        path keeps one object where the values are trees of them."""
        op = self.operation
        attempts = call.attempts if call else []
        path = scope["path"]
        # the time its last attempt was recorded, when it made one the engine recorded (the
        # eWallet library hands its attempts on as their JSON); else the clock's
        moment = getattr(attempts[-1], "timestamp", None) if attempts else None
        # every field of Entry, in their order (its generated __new__ is a Python call a charge would pay)
        record = _tuple_new(
            Entry,
            (
                moment or tenant.now(),  # time
                scope["method"],  # method
                op.path if path == op.path else path,  # path: the document's string (one per operation)
                scope["query_string"].decode("latin-1") if scope["query_string"] else "",  # query
                op.operation_id,  # operation_id
                self.interface_version,  # interface_version
                reply.status if reply else None,  # status
                (perf_counter() - started) * 1000,  # latency_ms
                body,  # request: the journal masks entries before anything reads them
                payload if payload is not None else (reply.body if reply else None),  # response
                attempts,  # attempts
                dropped or None,  # fault
                list(warnings) if warnings else None,  # warnings
            ),
        )
        tenant.journal.record(record, None if size is None else size + ENTRY_OVERHEAD * (1 + len(attempts)))


async def _drop(scope: Scope, exc: DropConnection) -> None:
    """Close the client's connection without answering. Under payemu's server the
    connection is aborted (:data:`~emulator.contract.wire.ABORT`); in-process (ASGI
    transport) the exception reaches the client instead."""
    abort = (scope.get("extensions") or {}).get(ABORT)
    if abort is None:
        raise exc
    abort()
    await asyncio.sleep(0)
