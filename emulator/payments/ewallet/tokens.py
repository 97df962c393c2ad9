"""Three-part eWallet tokens: session tokens and result tokens.

A token is ``header.body.signature``, each part base64url without padding. The header and
the body are compact JSON objects: that is the shape the real eWallet JS library decodes (it
reads ``body["pld"]`` and never looks at the signature). payemu signs ``header.body`` with
HMAC-SHA256 under the secret of the tenant that issued it and checks that signature on
every call, so a token cannot be forged or moved to another API key.

The header names the tenant's shard id in ``kid`` (see
:func:`emulator.payments.tenants.shard_of`): a load balancer can send a request that carries
only a token (a payment page, a library call with ``Authorization: Bearer``) to the instance
that hosts the tenant, with nothing but its own configuration (``deploy/haproxy.cfg``).
"""

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
    """A signed token carrying ``body``, its header naming ``kid``."""
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
    """The shard id a token names, unverified."""
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
