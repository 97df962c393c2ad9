"""Exchanges as HAR 1.2 (the format browser devtools read), masked as the journal is, and
read back for ``serve --replay``.

Masking follows the journal's rules (:mod:`emulator.domain.masking`); secret headers are
``[redacted]`` and the client's API key is struck from every text. A body masking leaves
unchanged is kept byte for byte, so a replay answers exactly what the upstream sent."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from emulator.domain.masking import mask, mask_query, mask_text, references
from emulator.domain.release import __version__

HAR_VERSION = "1.2"
CREATOR = {"name": "payemu", "version": __version__}
SECRET_HEADERS = frozenset({"x-api-key", "x-admin-key", "authorization", "proxy-authorization", "cookie", "set-cookie"})
REDACTED = "[redacted]"
_HEAD = b'{"log":{"version":"1.2","creator":' + json.dumps(CREATOR).encode() + b',"pages":[],"entries":[\n'
_TAIL = b"\n]}}\n"
MAX_HAR_BYTES = 64 * 1024 * 1024  # a recording larger than this is refused by the reader


class HarError(ValueError):
    """A file that is not a HAR recording payemu can use."""


def masked_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` as the journal would show it (unchanged JSON stays byte for byte)."""
    try:
        value = json.loads(text)
    except ValueError:
        shown = mask_text(text)
    else:
        keep = references(value)  # gateway references stay, as in the journal
        hidden = mask(value, keep=keep)
        if hidden == value and mask_text(text, keep) == text:
            shown = text
        else:  # the text masked again: a card number used as a property name too
            shown = mask_text(json.dumps(hidden, ensure_ascii=False, separators=(",", ":")), keep)
    for secret in secrets:
        if secret:
            shown = shown.replace(secret, REDACTED)
    return shown


def masked_headers(headers: Iterable[tuple[str, str]], secrets: Iterable[str] = ()) -> list[dict[str, str]]:
    out = []
    for name, value in headers:
        shown = REDACTED if name.lower() in SECRET_HEADERS else masked_text(value, secrets)
        out.append({"name": name, "value": shown})
    return out


def _query_list(query: str) -> list[dict[str, str]]:
    from urllib.parse import parse_qsl

    return [{"name": name, "value": value} for name, value in parse_qsl(query, keep_blank_values=True)]


def entry(
    *,
    started: datetime,
    elapsed_ms: float,
    method: str,
    url: str,
    request_headers: Iterable[tuple[str, str]],
    request_body: bytes,
    status: int,
    response_headers: Iterable[tuple[str, str]],
    response_body: bytes,
    secrets: Iterable[str] = (),
    violations: Iterable[str] = (),
) -> dict[str, Any]:
    """One exchange as a masked HAR entry; ``violations`` go in ``_payemuViolations``."""
    secrets = [s for s in secrets if s]
    parts = urlsplit(url)
    query = masked_text(mask_query(parts.query), secrets)
    shown_url = parts._replace(path=mask_text(parts.path), query=query).geturl()
    request_headers = list(request_headers)
    response_headers = list(response_headers)
    request_type = _header(request_headers, "content-type")
    response_type = _header(response_headers, "content-type")
    request_text = masked_text(request_body.decode("utf-8", "replace"), secrets) if request_body else ""
    response_text = masked_text(response_body.decode("utf-8", "replace"), secrets)
    request: dict[str, Any] = {
        "method": method,
        "url": shown_url,
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": masked_headers(request_headers, secrets),
        "queryString": _query_list(query),
        "headersSize": -1,
        "bodySize": len(request_body),
    }
    if request_body:
        request["postData"] = {"mimeType": request_type or "application/octet-stream", "text": request_text}
    found = {
        "startedDateTime": started.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "time": round(elapsed_ms, 3),
        "request": request,
        "response": {
            "status": status,
            "statusText": _reason(status),
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": masked_headers(response_headers, secrets),
            "content": {"size": len(response_body), "mimeType": response_type or "", "text": response_text},
            "redirectURL": _header(response_headers, "location") or "",
            "headersSize": -1,
            "bodySize": len(response_body),
        },
        "cache": {},
        "timings": {"send": 0, "wait": round(elapsed_ms, 3), "receive": 0},
    }
    shown = [masked_text(v, secrets) for v in violations]
    if shown:
        found["_payemuViolations"] = shown
    return found


def _header(headers: Iterable[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name), None)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


class HarWriter:
    """Appends entries to a HAR file that stays complete after every write."""

    # Each entry is one ``pwrite`` over the closing ``]}}`` (``,`` + entry + closing): a proxy
    # killed at any moment leaves a file every HAR reader opens, and nothing is held in
    # memory. Rewriting and renaming per entry would be quadratic; a JSON-lines sidecar would
    # need a conversion a killed proxy never runs.

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.count = 0
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                os.pwrite(fd, _HEAD + _TAIL, 0)
                self._end = len(_HEAD)
            else:
                self.count = len(read_entries(self.path))  # refuses what payemu did not write
                tail = os.pread(fd, len(_TAIL), size - len(_TAIL))
                if tail != _TAIL:
                    raise HarError(f"{self.path}: not a recording payemu wrote; choose another --record file")
                self._end = size - len(_TAIL)
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd

    def append(self, item: Mapping[str, Any]) -> None:
        text = json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode()
        with self._lock:
            if self._fd is None:
                raise HarError(f"{self.path}: the recording is closed")
            data = (b",\n" if self.count else b"") + text + _TAIL
            written = os.pwrite(self._fd, data, self._end)
            if written != len(data):
                raise OSError(f"{self.path}: short write ({written} of {len(data)} bytes)")
            self._end += len(data) - len(_TAIL)
            self.count += 1

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def read_entries(path: str | Path, max_bytes: int = MAX_HAR_BYTES) -> list[dict[str, Any]]:
    """The entries of a HAR 1.x file (payemu's or a browser's), else a :class:`HarError`."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise HarError(f"{path}: {size} bytes, more than the {max_bytes} a recording may have")
        document = json.loads(path.read_bytes())
    except OSError as exc:
        raise HarError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise HarError(f"{path}: not JSON ({exc})") from None
    log = document.get("log") if isinstance(document, dict) else None
    if not isinstance(log, dict) or not isinstance(log.get("entries"), list):
        raise HarError(f"{path}: not a HAR file (no log.entries)")
    if not str(log.get("version", "")).startswith("1."):
        raise HarError(f"{path}: HAR version {log.get('version')!r}; 1.2 is read")
    entries: list[dict[str, Any]] = log["entries"]
    for number, item in enumerate(entries, 1):
        if not (
            isinstance(item, dict) and isinstance(item.get("request"), dict) and isinstance(item.get("response"), dict)
        ):
            raise HarError(f"{path}: entry {number} has no request and response")
    return entries


def now() -> datetime:
    return datetime.now(UTC)
