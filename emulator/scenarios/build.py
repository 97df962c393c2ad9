"""Building an immutable :class:`Rule` from a checked scenario-file entry: canonical
``when`` and ``then`` (case of enum values, card digits, amount ranges) and the typed
match and outcome."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emulator.domain.vocabulary import (
    AUTHENTICATION_OPTIONS,
    DEFAULT_REJECT_REASON,
    FAULTS,
    OPERATIONS,
    RESULT_CODES,
    SETTLE_RESULTS,
    ResultCode,
)
from emulator.domain.vocabulary import DECLINE_REASONS as REJECT_REASONS
from emulator.scenarios.model import Match, Rule, RuleOutcome, canonical, digits, location

# -- building ---------------------------------------------------------------------------


def build_rule(item: dict[str, Any], source: str, line: int) -> Rule:
    name = item["name"]
    when = _canonical_when(item.get("when") or {})
    data: dict[str, Any] = {"name": name}
    if "description" in item:
        data["description"] = item["description"]
    if "origin" in item:
        data["origin"] = item["origin"]
    data["when"] = when
    if "then" in item:
        entries = [_canonical_then(item["then"])]
        data["then"] = entries[0]
    else:
        entries = [_canonical_then(entry) for entry in item["sequence"]]
        data["sequence"] = entries
    return Rule(
        name=name,
        match=_match(when),
        outcomes=tuple(_outcome(entry, name, location(source, line)) for entry in entries),
        is_sequence="sequence" in item,
        source=source,
        line=line,
        description=item.get("description"),
        data=data,
    )


def _canonical_when(when: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in when.items():
        if key == "cardNumber":
            value = [str(v) for v in value] if isinstance(value, list) else str(value)
        elif key == "amount":
            value = {k: float(v) for k, v in value.items()} if isinstance(value, dict) else float(value)
        elif key == "currency":
            value = value.upper()
        elif key == "operation":
            names = [canonical(v, OPERATIONS) for v in _listed(value)]
            value = names if isinstance(value, list) else names[0]
        elif key == "attempt":
            value = [int(v) for v in value] if isinstance(value, list) else int(value)
        elif key in ("postCode", "cvv"):
            value = [str(v) for v in value] if isinstance(value, list) else str(value)
        out[key] = value
    return out


def _canonical_then(then: dict[str, Any]) -> dict[str, Any]:
    out = dict(then)
    out["operationResultCode"] = canonical(then["operationResultCode"], RESULT_CODES)
    if "rejectReasonCode" in then:
        out["rejectReasonCode"] = canonical(then["rejectReasonCode"], REJECT_REASONS) or then["rejectReasonCode"]
    if "gatewayResultCode" in then:
        out["gatewayResultCode"] = str(then["gatewayResultCode"])
    if "delayMs" in then:
        out["delayMs"] = int(then["delayMs"])
    if "delayFromCents" in then:
        out["delayFromCents"] = bool(then["delayFromCents"])
    if "fault" in then:
        out["fault"] = canonical(then["fault"], FAULTS)
    if "settlesTo" in then:
        out["settlesTo"] = canonical(then["settlesTo"], SETTLE_RESULTS)
    if "settleAfterSeconds" in then:
        out["settleAfterSeconds"] = float(then["settleAfterSeconds"])
    if "approvedAmount" in then:
        out["approvedAmount"] = float(then["approvedAmount"])
    if "authentication" in then:
        out["authentication"] = canonical(then["authentication"], AUTHENTICATION_OPTIONS)
    return dict(out)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _match(when: dict[str, Any]) -> Match:
    amount = when.get("amount")
    exact = amount if isinstance(amount, float) else None
    bounds = amount if isinstance(amount, dict) else {}
    return Match(
        card_numbers=frozenset(digits(n) for n in _listed(when["cardNumber"])) if "cardNumber" in when else None,
        amount=exact,
        amount_min=bounds.get("min"),
        amount_max=bounds.get("max"),
        currency=when.get("currency"),
        operations=frozenset(o.lower() for o in _listed(when["operation"])) if "operation" in when else None,
        gateway=when["gateway"].casefold() if "gateway" in when else None,
        account=when["account"].casefold() if "account" in when else None,
        attempts=frozenset(_listed(when["attempt"])) if "attempt" in when else None,
        holder_names=_texts(when, "holderName", str.upper),
        post_codes=_texts(when, "postCode", str),
        cvvs=_texts(when, "cvv", str),
    )


def _texts(when: dict[str, Any], key: str, shape: Callable[[str], str]) -> frozenset[str] | None:
    if key not in when:
        return None
    return frozenset(shape(str(v).strip()) for v in _listed(when[key]))


def _outcome(then: dict[str, Any], rule: str, source: str) -> RuleOutcome:
    result = then["operationResultCode"]
    reason = then.get("rejectReasonCode") or (DEFAULT_REJECT_REASON.value if result == ResultCode.REJECTED else None)
    settles_to = then.get("settlesTo")
    return RuleOutcome(
        operation_result_code=result,
        reject_reason_code=reason,
        gateway_result_code=then.get("gatewayResultCode"),
        gateway_result_description=then.get("gatewayResultDescription"),
        delay_ms=then.get("delayMs", 0),
        delay_from_cents=bool(then.get("delayFromCents", False)),
        fault=then.get("fault", "none"),
        settles_to=settles_to,
        settle_after_seconds=then.get("settleAfterSeconds", 0.0) if settles_to else None,
        rule=rule,
        source=source,
        authentication=then.get("authentication"),
        approved_amount=float(then["approvedAmount"]) if "approvedAmount" in then else None,
        gateway_fields=tuple(then.get("gatewayFields", {}).items()),
    )
