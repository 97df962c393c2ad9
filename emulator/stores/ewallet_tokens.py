"""Three-part eWallet tokens (``header.body.signature``, base64url): session and result tokens.

The real JS library reads only ``body["pld"]``; payemu signs with HMAC-SHA256 under the
issuing tenant's secret, so a token cannot be forged or moved to another key. ``kid``
names the tenant's shard, so a load balancer can route a request that carries only a token."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

ALGORITHM = "HS256"
MAX_TOKEN_LENGTH = 64 * 1024  # longer text is not a token of ours; nothing is decoded


def b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _json(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True, sort_keys=True).encode("ascii")


def _signature(secret: bytes, signed: str) -> str:
    return b64encode(hmac.new(secret, signed.encode("ascii"), hashlib.sha256).digest())


def encode(body: Mapping[str, Any], kid: str, secret: bytes) -> str:
    signed = f"{b64encode(_json({'alg': ALGORITHM, 'kid': kid, 'typ': 'JWT'}))}.{b64encode(_json(body))}"
    return f"{signed}.{_signature(secret, signed)}"


def _parts(token: str) -> list[str] | None:
    if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH or not token.isascii():
        return None
    parts = token.strip().split(".")
    return parts if len(parts) == 3 and all(parts) else None


def _object(part: str) -> dict[str, Any] | None:
    try:
        value = json.loads(b64decode(part))
    except (ValueError, binascii.Error):
        return None
    return value if isinstance(value, dict) else None


def header(token: str) -> dict[str, Any] | None:
    """The header of a well-formed token, unverified (to learn its ``kid``), else None."""
    parts = _parts(token)
    return _object(parts[0]) if parts else None


def kid(token: str) -> str | None:
    found = header(token)
    value = found.get("kid") if found else None
    return value if isinstance(value, str) else None


def decode(token: str, secret: bytes) -> dict[str, Any] | None:
    """The body of a token signed with ``secret``; None for anything else."""
    parts = _parts(token)
    if parts is None:
        return None
    expected = _signature(secret, f"{parts[0]}.{parts[1]}")
    if not hmac.compare_digest(expected, parts[2]):
        return None
    found = header(token)
    if found is None or found.get("alg") != ALGORITHM:
        return None
    return _object(parts[1])
