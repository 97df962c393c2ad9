"""Which ``customGatewayResponse`` template an attempt renders.

A gateway's ``response`` is its base template. ``responseByOperation`` replaces it for a
successful (Success or Accepted) answer of that operation — a Stripe tokenize answers a
payment-method object, not a charge. ``responseByResult`` is merged onto the base for that
result code or reject reason (a key set to null is removed), so a decline does not carry
what only an approval carries and an approval does not carry a refusal reason.
"""

from __future__ import annotations

from typing import Any

from emulator.catalog.catalog import GatewaySpec
from emulator.catalog.identity_memo import IdentityMemo

_SUCCESSFUL = frozenset({"Success", "Accepted"})


def merge(base: Any, change: Any) -> Any:
    """``base`` with ``change`` merged in: objects key by key, a null removes the key."""
    if not isinstance(base, dict) or not isinstance(change, dict):
        return change
    out = dict(base)
    for key, value in change.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


_CHOSEN: IdentityMemo[Any] = IdentityMemo()


def template(gateway: GatewaySpec, code: str, operation: str, reason: str | None = None, key: str | None = None) -> Any:
    """The template for ``operation`` answered ``code`` (``reason`` when Rejected; ``key``
    the catalog code spoken, such as ``Expired``): one object per gateway and case, made
    once (so its compiled form is found by identity)."""
    return _CHOSEN.get(
        (id(gateway), code, operation, reason, key), gateway, _choose, gateway, code, operation, reason, key
    )


def _choose(gateway: GatewaySpec, code: str, operation: str, reason: str | None, key: str | None) -> Any:
    if code in _SUCCESSFUL and operation in gateway.response_by_operation:
        chosen: Any = gateway.response_by_operation[operation]
    else:
        chosen = gateway.response
    for name in dict.fromkeys((code, reason, key)):
        if name and name in gateway.response_by_result:
            chosen = merge(chosen, gateway.response_by_result[name])
    return chosen


def status_key(gateway: GatewaySpec, state: str, key: str) -> str:
    """The catalog code a status answer speaks: an expired authorization reports the
    gateway's ``Expired`` code where it has one."""
    return "Expired" if state == "Expired" and "Expired" in gateway.codes else key
