"""A tenant's stores as the state file's JSON documents (:mod:`emulator.state.schema`).

At rest card data is no more than payemu shows anywhere: transactions and gateway tokens
keep the first six and last four digits of a card number, the journal is stored masked,
and security codes are never written (a string token's JSON payload loses its ``cvv``; a
token holding only a security code is not written at all).

Each record also has a *fingerprint*, cheap to take, that changes whenever the record's
document would: the saver rewrites a record only when its fingerprint moved.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from emulator.domain.masking import mask_pan

if TYPE_CHECKING:
    from emulator.stores.accounts import StoredAccount
    from emulator.stores.ewallet_sessions import Session
    from emulator.stores.ledger import GatewayToken, Transaction
    from emulator.stores.vault import StringToken
    from emulator.tenants.tenants import Tenant

_SECURITY_CODE_NAMES = frozenset({"cvv", "cvc", "cvv2", "securitycode"})


# datetimes and dataclasses go to ``default=str`` as with the standard library's encoder,
# so orjson writes the same text; what it refuses (integers past 64 bits, lone surrogates,
# keys that are not strings) the standard library writes
_AS_JSON = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def text(document: Any) -> str:
    """A document's JSON text, as stored."""
    try:
        return orjson.dumps(document, default=str, option=_AS_JSON).decode()
    except TypeError:
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"), default=str)


def time(moment: datetime) -> str:
    return moment.isoformat()


def _maybe_time(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _masked(number: str | None) -> str | None:
    return mask_pan(number) if number else number


def tenant(owner: Tenant) -> dict[str, Any]:
    """The tenant's own document: identity, clock, settings and its small stores."""
    clock = owner.clock
    start = clock.now() - clock.offset if clock.frozen else None
    overrides = owner.overrides
    return {
        "userName": owner.user_name,
        "accountId": owner.account_id,
        "sandbox": owner.is_sandbox,
        "tokenSecret": owner.token_secret.hex(),
        "clock": {"start": _maybe_time(start), "offsetSeconds": clock.offset.total_seconds()},
        "settings": {
            "strict": overrides.strict,
            "successStatus": overrides.success_status,
            "failover": overrides.failover,
        },
        "accounts": [account(stored) for stored in owner.accounts.values()],
        "certificates": owner.certificates.names(),
        "rules": [rule.data for rule in owner.rules],
    }


def account(stored: StoredAccount) -> dict[str, Any]:
    return {
        "name": stored.name,
        "gateway": stored.gateway,
        "credentials": [list(pair) for pair in stored.credentials],
        "created": time(stored.creation_time),
    }


def transaction(tx: Transaction) -> dict[str, Any]:
    return {
        "reference": tx.reference,
        "operation": str(tx.operation),
        "gateway": tx.gateway,
        "account": tx.account,
        "amount": str(tx.amount),
        "currency": tx.currency,
        "resultCode": str(tx.result_code),
        "rejectReason": str(tx.reject_reason) if tx.reject_reason is not None else None,
        "createdAt": time(tx.created_at),
        "myRef": tx.my_ref,
        "cardNumber": _masked(tx.card_number),
        "authorizationCode": tx.authorization_code,
        "parent": tx.parent,
        "attemptNumber": tx.attempt_number,
        "attempts": tx.attempts,
        "expiresAt": _maybe_time(tx.expires_at),
        "settlesTo": tx.settles_to,
        "settleAt": _maybe_time(tx.settle_at),
        "capturedAmount": str(tx.captured_amount),
        "refundedAmount": str(tx.refunded_amount),
        "capturedBy": tx.captured_by,
        "voidedBy": tx.voided_by,
        "operations": [
            {
                "operation": str(entry.operation),
                "reference": entry.reference,
                "amount": str(entry.amount),
                "resultCode": str(entry.result_code),
                "time": time(entry.time),
            }
            for entry in tx.operations
        ],
    }


def transaction_print(tx: Transaction) -> Hashable:
    """What of a transaction changes after it is recorded (a later operation, settlement)."""
    # one string: a saver holds one per transaction, and text is nothing the garbage
    # collector walks (a tuple is, once, in the collection after it was made: with tens of
    # thousands of new ones that collection paused the server for tens of milliseconds)
    return (
        f"{tx.result_code.value}|{tx.captured_by!r}|{tx.voided_by!r}|{tx.refunded_amount}|"
        f"{len(tx.operations)}|{tx.settles_to!r}"
    )


def gateway_token(token: GatewayToken) -> dict[str, Any]:
    return {
        "token": token.token,
        "gateway": token.gateway,
        "account": token.account,
        "cardNumber": _masked(token.card_number),
        "createdAt": time(token.created_at),
    }


def string_token(entry: StringToken) -> dict[str, Any] | None:
    """The token as stored at rest; None for a token that holds only a security code."""
    payload = without_security_code(entry.payload)
    if payload is None:
        return None
    return {"token": entry.token, "payload": payload, "createTime": time(entry.create_time)}


def session(held: Session) -> dict[str, Any]:
    return {
        "token": held.token,
        "request": held.request,
        "createdAt": time(held.created_at),
        "expiresAt": time(held.expires_at),
        "results": [
            {
                "id": result.result_id,
                "createdAt": time(result.created_at),
                "success": result.success,
                "data": result.data,
                "token": result.token,
            }
            for result in held.results.values()
        ],
        "paidBy": held.paid_by,
        "sid": held.sid,
    }


def session_print(held: Session) -> Hashable:
    return (len(held.results), held.paid_by, held.expires_at)


def without_security_code(payload: str) -> str | None:
    """The payload as stored at rest: a JSON object without its security code; None for a
    payload that is only a security code."""
    stripped = payload.strip()
    if stripped.isdigit() and 3 <= len(stripped) <= 4:
        return None
    if not stripped.startswith("{"):
        return payload
    try:
        data = json.loads(stripped)
    except ValueError:
        return payload
    if not isinstance(data, dict):
        return payload
    kept = {name: value for name, value in data.items() if name.lower() not in _SECURITY_CODE_NAMES}
    return payload if len(kept) == len(data) else json.dumps(kept)
