"""``payemu serve --replay FILE [--replay-strict]``: answer from a HAR recording.

A request matches a recorded one when method, path, query and body are the same after
masking (JSON compared as values); repeats get the recorded answers in order. An
unmatched request goes to the simulation with a journal note, or under
``--replay-strict`` gets a 404 naming the nearest recorded request."""

from __future__ import annotations

import base64
import json
from collections import deque
from collections.abc import Iterator
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from starlette.requests import ClientDisconnect, Request
from starlette.types import Message, Receive, Scope, Send

from emulator.contract.wire import JSON_MEDIA, dumps, read_body
from emulator.domain import errors
from emulator.domain.masking import mask_query, mask_text
from emulator.domain.records import dataclass
from emulator.endpoints.pipeline import NOTES
from emulator.proxy import har
from emulator.proxy.forward import LOCAL_PREFIXES, NOT_RETURNED, Matcher, send_answer
from emulator.stores.journal import Entry

if TYPE_CHECKING:
    from emulator.app.application import App

NO_MATCH_STATUS = 404
REPLAY_HEADER = "X-Payemu-Replay"
_SHOWN_DIFFERENCES = 6
Key = tuple[str, str, tuple[tuple[str, str], ...], str]


def canonical_query(query: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(parse_qsl(mask_query(query), keep_blank_values=True)))


def canonical_body(text: str) -> str:
    """A body as compared: masked, JSON as its value."""
    if not text.strip():
        return ""
    shown = har.masked_text(text)
    try:
        return json.dumps(json.loads(shown), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        return shown


@dataclass
class Recorded:
    number: int  # its place in the file, from 1
    key: Key
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    used: bool = field(default=False)

    @property
    def label(self) -> str:
        method, path, query, _ = self.key
        shown = "&".join(f"{k}={v}" for k, v in query)
        return f"entry {self.number}: {method} {path}{'?' + shown if shown else ''}"


def _recorded(number: int, item: dict[str, Any]) -> Recorded:
    request, response = item["request"], item["response"]
    parts = urlsplit(str(request.get("url", "")))
    text = str((request.get("postData") or {}).get("text") or "")
    method = str(request.get("method", "GET")).upper()
    key = (method, mask_text(parts.path), canonical_query(parts.query), canonical_body(text))
    content = response.get("content") or {}
    body_text = str(content.get("text") or "")
    body = base64.b64decode(body_text) if content.get("encoding") == "base64" else body_text.encode()
    headers = [
        (str(h.get("name")), str(h.get("value")))
        for h in response.get("headers") or []
        if str(h.get("name", "")).lower() not in NOT_RETURNED and h.get("value") != har.REDACTED
    ]
    return Recorded(number, key, int(response.get("status") or 0), headers, body)


class Recording:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.entries = [_recorded(n, item) for n, item in enumerate(har.read_entries(self.path), 1)]
        self.queues: dict[Key, deque[Recorded]] = {}
        for recorded in self.entries:
            if recorded.status >= 100:
                self.queues.setdefault(recorded.key, deque()).append(recorded)

    def take(self, key: Key) -> Recorded | None:
        queue = self.queues.get(key)
        if not queue:
            return None
        found = queue.popleft()
        found.used = True
        return found

    def nearest(self, key: Key) -> tuple[Recorded | None, list[str]]:
        """The recorded request closest to ``key`` and how ``key`` differs from it."""
        best: tuple[int, Recorded, list[str]] | None = None
        for recorded in self.entries:
            found = differences(recorded.key, key)
            if not found and recorded.used:
                found = ["its recorded answers were all used by earlier identical requests"]
            score = _weight(recorded.key, key) + len(found)
            if best is None or score < best[0]:
                best = (score, recorded, found)
        return (best[1], best[2]) if best else (None, [])


def _weight(recorded: Key, sent: Key) -> int:
    return (100 if recorded[0] != sent[0] else 0) + (50 if recorded[1] != sent[1] else 0)


def differences(recorded: Key, sent: Key) -> list[str]:
    found: list[str] = []
    if recorded[0] != sent[0]:
        found.append(f"method {sent[0]} sent, {recorded[0]} recorded")
    if recorded[1] != sent[1]:
        found.append(f"path {sent[1]} sent, {recorded[1]} recorded")
    found += _compare("query", dict(recorded[2]), dict(sent[2]))
    found += _compare("body", _flat(recorded[3]), _flat(sent[3]))
    return found


def _compare(where: str, recorded: dict[str, str], sent: dict[str, str]) -> list[str]:
    found = []
    for name in sorted(set(recorded) | set(sent)):
        if name not in sent:
            found.append(f"{where} {name}: recorded {recorded[name]}, not sent")
        elif name not in recorded:
            found.append(f"{where} {name}: sent {sent[name]}, not recorded")
        elif recorded[name] != sent[name]:
            found.append(f"{where} {name}: {sent[name]} sent, {recorded[name]} recorded")
    return found


def _flat(text: str) -> dict[str, str]:
    """A body's leaves by dotted path (a body that is not JSON is one leaf)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {"(text)": text}
    return dict(_leaves(value, ""))


def _leaves(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    else:
        yield path or "(body)", json.dumps(value, ensure_ascii=False)


class Replay:
    """The emulator app with a recording in front."""

    def __init__(self, app: App, recording: Recording, strict: bool = False) -> None:
        self.app = app
        self.state = app.state
        self.runtime = app.state.runtime
        self.recording = recording
        self.strict = strict
        self.name = recording.path.name
        self.matcher = Matcher(self.runtime.api)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(LOCAL_PREFIXES):
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(Request(scope, receive), self.runtime.settings.max_body_bytes)
        except errors.ApiError as exc:
            await send_answer(send, exc.status, [("content-type", JSON_MEDIA)], dumps(exc.body))
            return
        except ClientDisconnect:
            return
        query = scope["query_string"].decode("latin-1")
        key: Key = (
            scope["method"],
            mask_text(scope["path"]),
            canonical_query(query),
            canonical_body(body.decode("utf-8", "replace")),
        )
        found = self.recording.take(key)
        if found is not None:
            self._journal(scope, query, found.status, body, found.body, f"replayed: {self.name} {found.label}")
            headers = [*found.headers, (REPLAY_HEADER, f"{self.name} entry {found.number}")]
            await send_answer(send, found.status, headers, found.body)
            return
        if self.strict:
            await self._near_miss(scope, query, key, body, send)
            return
        scope = {**scope, NOTES: [f"replay: not in {self.name}; answered by the simulation"]}
        await self.app(scope, _again(body, receive), send)

    async def _near_miss(self, scope: Scope, query: str, key: Key, body: bytes, send: Send) -> None:
        nearest, found = self.recording.nearest(key)
        message = f"No request recorded in {self.name} matches {key[0]} {key[1]}."
        if nearest is None:
            message += " The recording is empty."
        else:
            shown = "; ".join(found[:_SHOWN_DIFFERENCES])
            more = len(found) - _SHOWN_DIFFERENCES
            message += f" Nearest: {nearest.label}; {shown}{f'; and {more} more' if more > 0 else ''}."
        error = errors.ApiError(NO_MATCH_STATUS, [("replay", [message])])
        payload = dumps(error.body)
        self._journal(scope, query, error.status, body, payload, f"replay: {message}")
        await send_answer(send, error.status, [("content-type", JSON_MEDIA), (REPLAY_HEADER, "no-match")], payload)

    def _journal(self, scope: Scope, query: str, status: int, body: bytes, payload: bytes, note: str) -> None:
        headers = dict(reversed(scope["headers"]))
        key = headers.get(b"x-api-key")
        tenant = self.runtime.tenants.get(key.decode("latin-1") if key else None)
        if tenant is None:
            return
        op, _ = self.matcher.find(scope["method"], scope["path"])
        record = Entry(
            time=tenant.now(),
            method=scope["method"],
            path=scope["path"],
            query=query,
            operation_id=op.operation_id if op else None,
            interface_version=self.runtime.api.interface_version,
            status=status,
            latency_ms=0.0,
            request=_value(body),
            response=_value(payload),
            attempts=[],
            fault=None,
            warnings=[note],
        )
        tenant.journal.record(record, len(body) + len(payload) + 512)


def _value(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def _again(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands over the body already read, then the client's own."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again
