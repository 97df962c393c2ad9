"""``payemu proxy``: forward to the real service, validate both ways, journal, record.

The upstream's answer comes back unchanged (less hop-by-hop headers); each violation of
the served document is named in ``X-Payemu-Violations``, the key's journal and the
recording. An unreachable upstream is a JSON 502, a slow one a 504."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from time import perf_counter
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.types import Receive, Scope, Send

from emulator.contract.openapi import ApiOperation, OpenApi
from emulator.contract.wire import JSON_MEDIA, dumps, read_body, read_parameter
from emulator.domain import errors
from emulator.domain.config import ConfigError
from emulator.domain.masking import mask_text
from emulator.domain.records import dataclass
from emulator.proxy import har
from emulator.stores.journal import Entry

if TYPE_CHECKING:
    from emulator.app.application import App

log = logging.getLogger("payemu.proxy")
VIOLATIONS_HEADER = "X-Payemu-Violations"
HEADER_LIMIT = 4000  # characters of the violations header; the journal has them all
MAX_UPSTREAM_BYTES = 16 * 1024 * 1024  # an upstream answer larger than this is a 502
LOCAL_PREFIXES = ("/_emulator", "/favicon.ico")
# hop-by-hop (RFC 9110 7.6.1) and what each side's server writes for itself
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}
    | {"proxy-authenticate", "proxy-authorization", "host", "content-length"}
)
NOT_RETURNED = HOP_BY_HOP | {"content-encoding", "date", "server"}
_TEMPLATE = re.compile(r"\{([^}/]+)\}")


class Matcher:
    def __init__(self, api: OpenApi) -> None:
        self.fixed: dict[tuple[str, str], ApiOperation] = {}
        self.templated: list[tuple[str, re.Pattern[str], ApiOperation]] = []
        for (method, path), op in api.operations.items():
            if "{" not in path:
                self.fixed[(method, path)] = op
            else:
                parts = _TEMPLATE.split(path)
                pattern = "".join(
                    re.escape(part) if index % 2 == 0 else f"(?P<{part}>[^/]+)" for index, part in enumerate(parts)
                )
                self.templated.append((method, re.compile(pattern + "$"), op))

    def find(self, method: str, path: str) -> tuple[ApiOperation | None, dict[str, str]]:
        op = self.fixed.get((method, path))
        if op is not None:
            return op, {}
        for candidate, pattern, templated in self.templated:
            found = pattern.match(path)
            if candidate == method and found:
                return templated, found.groupdict()
        return None, {}


def request_violations(
    op: ApiOperation | None, method: str, path_params: dict[str, str], query: str, headers: dict[str, str], body: bytes
) -> list[str]:
    """What breaks the document in a request (empty: nothing)."""
    if op is None:
        return [f"request: {method} is not a documented operation on this path"]
    found: list[str] = []
    queries = dict(parse_qsl(query, keep_blank_values=True))
    sources = {"path": path_params, "query": queries}
    for param in op.parameters:
        if param.location == "header":
            raw = headers.get(param.name.lower())
        else:
            raw = sources.get(param.location, {}).get(param.name)
        _, problems = read_parameter(param, raw)
        found += _named(f"request {param.location} parameter", problems)
    if op.body is not None and not op.raw_body:
        if not body.strip():
            if op.body_required:
                found.append("request body: a JSON body is required")
        else:
            value, problem = _json(body)
            if problem:
                found.append(f"request body: {problem}")
            elif not op.body.is_valid(value):
                found += _named("request", op.body.errors(value))
    return found


def response_violations(op: ApiOperation | None, status: int, content_type: str, body: bytes) -> list[str]:
    """What breaks the document in an answer to ``op`` (nothing for an undocumented one)."""
    if op is None:
        return []
    if status not in op.responses:
        documented = ", ".join(str(code) for code in sorted(op.responses))
        return [f"response: status {status} is not documented for {op.operation_id} (documented: {documented})"]
    validator = op.responses[status]
    if validator is None:
        return [f"response: status {status} is documented without a body"] if body.strip() else []
    if not body.strip():
        return [f"response: the {status} answer has no body; the document gives it one"]
    value, problem = _json(body)
    if problem:
        return [f"response body: {problem}"]
    found = [] if "json" in content_type.lower() else [f"response: Content-Type {content_type or 'missing'}"]
    if not validator.is_valid(value):
        found += _named(f"response {status}", validator.errors(value, root="response"))
    return found


def _named(where: str, problems: Iterable[errors.FieldErrors]) -> list[str]:
    return [
        f"{where} {field or ''}: {' '.join(messages)}".replace(" :", ":") for field, messages in errors.merge(problems)
    ]


def _json(raw: bytes) -> tuple[Any, str | None]:
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError:
        return None, "not JSON"


def violations_header(violations: list[str]) -> str:
    """The violations as one printable header value, cut past :data:`HEADER_LIMIT` characters."""
    text = "; ".join(" ".join(v.split()) for v in violations)
    text = text.encode("latin-1", "replace").decode("latin-1")
    if len(text) > HEADER_LIMIT:
        text = text[:HEADER_LIMIT] + f"… ({len(violations)} violations in all; see the journal)"
    return text


@dataclass
class Upstream:
    url: str
    timeout_seconds: float = 30.0

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")


class Proxy:
    """The ``payemu proxy`` ASGI app; ``local`` is the emulator app whose dashboard and journals it uses."""

    def __init__(self, local: App, upstream: Upstream, recorder: har.HarWriter | None = None) -> None:
        self.local = local
        self.runtime = local.state.runtime
        self.state = local.state
        self.upstream = upstream
        self.recorder = recorder
        self.matcher = Matcher(self.runtime.api)
        self.client = httpx.AsyncClient(
            timeout=upstream.timeout_seconds, follow_redirects=False, trust_env=False, headers={}
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.local(scope, receive, send)
            await self.client.aclose()
            return
        if scope["type"] != "http" or scope["path"].startswith(LOCAL_PREFIXES):
            await self.local(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            body = await read_body(request, self.runtime.settings.max_body_bytes)
        except errors.ApiError as exc:
            await send_answer(send, exc.status, [("content-type", JSON_MEDIA)], dumps(exc.body))
            return
        except ClientDisconnect:
            return
        status, headers, payload, violations, _ = await self.exchange(scope, body)
        shown = list(headers)
        if violations:
            shown.append((VIOLATIONS_HEADER, violations_header(violations)))
        await send_answer(send, status, shown, payload)

    async def exchange(
        self, scope: Scope, body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes, list[str], str | None]:
        """Forward one request; (status, headers, body, violations, fault)."""
        started, began = har.now(), perf_counter()
        method, path = scope["method"], scope["path"]
        query = scope["query_string"].decode("latin-1")
        request_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        by_name = {k.lower(): v for k, v in reversed(request_headers)}
        op, path_params = self.matcher.find(method, path)
        violations = request_violations(op, method, path_params, query, by_name, body)
        forwarded = [
            (k, v) for k, v in request_headers if k.lower() not in HOP_BY_HOP and k.lower() != "accept-encoding"
        ]
        forwarded.append(("accept-encoding", "identity"))  # the upstream's bytes, not a decoded copy
        target = self.upstream.url + path + (f"?{query}" if query else "")
        fault: str | None = None
        try:
            upstream = await self._send(method, target, forwarded, body)
        except httpx.TimeoutException:
            fault = "upstream-timeout"
            error = errors.ApiError(
                504, [("upstream", [f"{self.upstream.url} did not answer within {self.upstream.timeout_seconds:g} s."])]
            )
        except httpx.HTTPError as exc:
            fault = "upstream-unreachable"
            error = errors.ApiError(502, [("upstream", [f"{self.upstream.url} could not be reached: {_reason(exc)}."])])
        if fault is not None:
            status, headers, payload = error.status, [("content-type", JSON_MEDIA)], dumps(error.body)
        else:
            status, payload = upstream.status, upstream.content
            headers = [(k, v) for k, v in upstream.headers.multi_items() if k.lower() not in NOT_RETURNED]
            violations += response_violations(op, status, upstream.headers.get("content-type", ""), payload)
        elapsed = (perf_counter() - began) * 1000
        key = by_name.get("x-api-key")
        violations = [_shown(v, key) for v in violations]  # a message may quote what was sent
        self._journal(key, op, method, path, query, status, elapsed, body, payload, violations, fault)
        if self.recorder is not None:
            self._record(
                har.entry(
                    started=started,
                    elapsed_ms=elapsed,
                    method=method,
                    url=target,
                    request_headers=request_headers,
                    request_body=body,
                    status=status,
                    response_headers=headers,
                    response_body=payload,
                    secrets=[key or "", self.runtime.settings.admin_key or ""],
                    violations=violations,
                )
            )
        return status, headers, payload, violations, fault

    def _record(self, item: dict[str, Any]) -> None:
        """Append to the recording; a failure to write is logged, not answered."""
        assert self.recorder is not None
        try:
            self.recorder.append(item)
        except OSError as exc:
            log.error("cannot write the recording %s: %s", self.recorder.path, exc.strerror or exc)

    async def _send(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> Fetched:
        request = self.client.build_request(method, url, headers=headers, content=body or None)
        return await fetch(self.client, request, raw=True)

    def _journal(
        self,
        key: str | None,
        op: ApiOperation | None,
        method: str,
        path: str,
        query: str,
        status: int,
        elapsed_ms: float,
        body: bytes,
        payload: bytes,
        violations: list[str],
        fault: str | None,
    ) -> None:
        tenant = self.runtime.tenants.get(key)
        if tenant is None:
            return  # no key (or one the registry refuses): no journal to write to
        record = Entry(
            time=tenant.now(),
            method=method,
            path=path,
            query=query,
            operation_id=op.operation_id if op else None,
            interface_version=self.runtime.api.interface_version,
            status=status,
            latency_ms=elapsed_ms,
            request=_value(body),
            response=_value(payload),
            attempts=[],
            fault=fault,
            warnings=[f"violation: {v}" for v in violations] or None,
        )
        tenant.journal.record(record, len(body) + len(payload) + 512)


class AnswerTooLarge(httpx.HTTPError): ...


@dataclass
class Fetched:
    status: int
    headers: httpx.Headers
    content: bytes


async def fetch(
    client: httpx.AsyncClient, request: httpx.Request, *, raw: bool = False, limit: int = MAX_UPSTREAM_BYTES
) -> Fetched:
    """Send ``request`` and read at most ``limit`` bytes of its answer (``raw``: not decoded)."""
    response = await client.send(request, stream=True)
    try:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_raw() if raw else response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise AnswerTooLarge(f"its answer is larger than {limit} bytes")
            chunks.append(chunk)
    finally:
        await response.aclose()
    return Fetched(response.status_code, response.headers, b"".join(chunks))


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text.rstrip(".")


def _shown(violation: str, key: str | None) -> str:
    """A violation as shown: card numbers masked, the API key struck out."""
    text = mask_text(violation)
    return text.replace(key, har.REDACTED) if key else text


def _value(raw: bytes) -> Any:
    """A body as the journal keeps it (its JSON value, else its text), masked."""
    if not raw:
        return None
    text = har.masked_text(raw.decode("utf-8", "replace"))
    value, problem = _json(text.encode())
    return text if problem else value


async def send_answer(send: Send, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
    """An answer to the ASGI ``send`` with its Content-Length (none where no body may be)."""
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1", "replace")) for k, v in headers]
    if status >= 200 and status not in (204, 304):
        raw.append((b"content-length", str(len(payload)).encode()))
    else:
        payload = b""
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


def check_url(url: str, option: str = "--upstream") -> str:
    """``url`` as an upstream base (no trailing slash), or ConfigError naming ``option``."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{option} {url!r} is not an http(s) URL such as https://sandbox.example.com")
    return url.strip().rstrip("/")
