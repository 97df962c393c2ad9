"""One attempt at one simulated gateway.

Everything a gateway does differently is data in ``catalog.yaml``; this module only reads
it. An attempt goes: the gateway's own requirements (operations it lacks, network tokens,
credentials, client certificate, ``clientIPAddress``, ``orderDesc``, ``myRef`` length)
→ the scenario outcome (``runtime.scenarios.decide``) → an OperationResult spoken in the
gateway's vocabulary: its reference format, native result codes, authorization-code and
token formats, and a ``customGatewayResponse`` rendered from its template.

Every id and code comes from the tenant's random source, every time from its clock, so a
seeded run is byte-identical.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emulator import cards
from emulator.clock import isoformat
from emulator.gateways import checks, payloads  # truthful hook
from emulator.gateways.catalog import GatewaySpec, ReferenceFormat

if TYPE_CHECKING:
    from emulator.runtime import Runtime
    from emulator.scenarios import Outcome
    from emulator.tenants import Tenant

SUCCESSFUL = frozenset({"Success", "Accepted"})
DEFAULT_REJECT_REASON = "CardDeclined"
# Operations whose successful answer carries an authorization code.
AUTHORIZING = frozenset({"Charge", "PreAuth", "Capture"})
# Requirements apply to the operations whose request carries the field.
NEEDS_CLIENT_IP = frozenset({"Charge", "PreAuth", "Tokenize"})
NEEDS_ORDER_DESC = frozenset({"Charge", "PreAuth"})
NEEDS_MY_REF = frozenset({"Charge", "PreAuth"})
# Currencies whose minor unit is not a hundredth (ISO 4217 exponents).
_EXPONENTS = {
    **dict.fromkeys(
        ("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV",
         "XAF", "XOF", "XPF"),
        0,
    ),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    "CLF": 4,
}
_PLACEHOLDER = re.compile(r"\{([A-Za-z][A-Za-z0-9]*)\}")
_SUCCESS_TEXT = {
    "Charge": "Charge approved.",
    "PreAuth": "Authorization approved; the funds are held until capture.",
    "Capture": "Capture completed.",
    "Void": "Void completed.",
    "Refund": "Refund completed.",
    "Tokenize": "Token created.",
    "Status": "Transaction found.",
}


@dataclass(frozen=True)
class GatewayAccount:
    """The gateway and credentials one attempt uses. ``name`` is the stored account's name,
    None for inline credentials; ``certificate`` the client certificate named for it."""

    gateway: GatewaySpec
    name: str | None
    credentials: dict[str, str | None]
    certificate: str | None = None


@dataclass(frozen=True)
class AttemptInput:
    """What one attempt sends to the gateway (card data already resolved)."""

    operation: str
    amount: float
    currency: str
    card_number: str | None = None  # digits, after @token / userToken resolution
    card_brand: str | None = None  # card.cardType when the caller gave it
    my_ref: str | None = None
    order_desc: str | None = None
    client_ip: str | None = None
    network_token_brand: str | None = None
    generate_token: bool = False
    token_problem: str | None = None  # why the gateway refuses the userToken, if it does
    card_details: dict[str, Any] | None = None  # truthful hook: expiry and cvv for the gateway's card checks
    number: int = 1  # 1 = primary, 2 = first fallback, ...


@dataclass(frozen=True)
class AttemptResult:
    """The OperationResult of one attempt plus what the ledger and the engine need."""

    result: dict[str, Any]
    fault: str = "none"
    delay_ms: int = 0
    settles_to: str | None = None
    settle_after_seconds: float | None = None
    rule: str | None = None

    @property
    def code(self) -> str:
        return str(self.result["operationResultCode"])

    @property
    def reference(self) -> str | None:
        return self.result["gatewayReference"]


def operation_result(operation: str, amount: float, currency: str, code: str, description: str | None,
                     **fields: Any) -> dict[str, Any]:
    """An OperationResult with every one of its 15 keys (the schema requires them all)."""
    result: dict[str, Any] = {
        "authorizationCode": None,
        "currency": currency,
        "amount": amount,
        "operationType": operation,
        "operationResultCode": code,
        "operationResultDescription": description,
        "customGatewayResponse": None,
        "gatewayName": None,
        "gatewayReference": None,
        "gatewayResultCode": None,
        "gatewayResultDescription": None,
        "gatewayResultSubCode": None,
        "gatewayResultSubDescription": None,
        "gatewayToken": None,
        "rejectReasonCode": None,
    }
    unknown = set(fields) - set(result)
    if unknown:
        raise TypeError(f"not OperationResult keys: {sorted(unknown)}")
    result.update(fields)
    return result


def mint(tenant: Tenant, fmt: ReferenceFormat, operation: str) -> str:
    return fmt.prefix_for(operation) + tenant.random_string(fmt.length, fmt.alphabet)


def new_reference(tenant: Tenant, spec: GatewaySpec, operation: str) -> str:
    """A gateway reference in the gateway's format, unique within the tenant."""
    reference = mint(tenant, spec.reference, operation)
    while reference in tenant.transactions:
        reference = mint(tenant, spec.reference, operation)
    return reference


def requirement_failure(account: GatewayAccount, item: AttemptInput) -> tuple[str, str, str] | None:
    """``(result code, catalog code key, description)`` when the gateway refuses the
    attempt before looking at it, else None."""
    spec = account.gateway
    operation = item.operation
    if operation in spec.unsupported or (operation == "Tokenize" and not spec.tokenizes):
        hint = " Use PreAuth then Capture." if operation == "Charge" and "PreAuth" not in spec.unsupported else ""
        return "NotImplemented", "NotImplemented", f"{spec.name} does not support {operation}.{hint}"
    if item.network_token_brand and not spec.supports_network_token:
        return "NotImplemented", "NotImplemented", f"{spec.name} does not support network tokens."
    missing = [key for key in spec.credentials if not account.credentials.get(key)]
    if missing:
        where = f"stored account '{account.name}'" if account.name else "the inline paymentGatewayAccount"
        return (
            "FatalFailure",
            "AuthenticationFailed",
            f"Authentication with {spec.name} failed: {where} has no value for {', '.join(missing)}.",
        )
    if spec.requires_certificate and not account.certificate:
        field = "certificateName" if item.number == 1 else "paymentGatewayCertName"
        return (
            "FatalFailure",
            "AuthenticationFailed",
            f"{spec.name} authenticates with a client certificate: name one in {field}.",
        )
    if spec.requires_client_ip and operation in NEEDS_CLIENT_IP and not item.client_ip:
        return "FatalFailure", "FatalFailure", f"{spec.name} needs payerDetails.clientIPAddress."
    if spec.requires_order_desc and operation in NEEDS_ORDER_DESC and not item.order_desc:
        return "FatalFailure", "FatalFailure", f"{spec.name} needs orderDesc."
    if spec.min_my_ref and operation in NEEDS_MY_REF and len(item.my_ref or "") < spec.min_my_ref:
        return "FatalFailure", "FatalFailure", f"{spec.name} needs myRef of at least {spec.min_my_ref} characters."
    return None


def decide(runtime: Runtime, tenant: Tenant, account: GatewayAccount, item: AttemptInput) -> Outcome | None:
    """The scenario outcome for this attempt. Mock gateways (``always``) heed only rules
    that name their gateway or account."""
    from emulator.scenarios import Attempt

    attempt = Attempt(
        card_number=item.card_number,
        amount=item.amount,
        currency=item.currency,
        operation=item.operation,
        gateway=account.gateway.name,
        account=account.name,
        attempt=item.number,
    )
    return runtime.scenarios.decide(tenant, attempt, mock=account.gateway.always is not None)


async def attempt(runtime: Runtime, tenant: Tenant, account: GatewayAccount, item: AttemptInput) -> AttemptResult:
    """Run one attempt. The scenario's latency is awaited here; its fault is returned for
    the caller, who records (or not) before dropping the connection."""
    spec = account.gateway
    refused = requirement_failure(account, item)
    outcome: Outcome | None = None
    reason: str | None = None
    if refused is not None:
        code, key, description = refused
        text = description
    elif item.token_problem is not None:
        code, key, reason, text = "Rejected", "InvalidCardNumber", "InvalidCardNumber", item.token_problem
    else:
        outcome = decide(runtime, tenant, account, item)
        wins = checks.rule_wins(runtime, tenant, outcome)  # truthful hook: a user's rule beats the card checks
        failure = None if wins else checks.for_attempt(spec, item, tenant.now())  # truthful hook
        if failure is not None:  # truthful hook
            outcome = None  # truthful hook: the gateway declined before the issuer (no delay, no fault)
            code, key, reason, text = "Rejected", failure.reason, failure.reason, failure.description  # truthful hook
        else:  # truthful hook (the block below is only indented)
            if outcome is None:
                code = "Rejected" if spec.always == "Rejected" else "Success"
            else:
                code = outcome.operation_result_code
            if code == "Accepted" and item.operation in ("Tokenize", "Status"):
                code = "Success"  # these answer at once; there is nothing to settle
            if code == "Rejected":
                reason = (outcome.reject_reason_code if outcome else None) or DEFAULT_REJECT_REASON
            key = reason or code
            text = _description(spec, item.operation, code, reason)
    if outcome is not None and outcome.delay_ms > 0:
        await asyncio.sleep(outcome.delay_ms / 1000)
    result = _render(tenant, account, item, code, key, reason, text, outcome)
    return AttemptResult(
        result=result,
        fault=outcome.fault if outcome else "none",
        delay_ms=outcome.delay_ms if outcome else 0,
        settles_to=outcome.settles_to if outcome and code == "Accepted" else None,
        settle_after_seconds=outcome.settle_after_seconds if outcome and code == "Accepted" else None,
        rule=outcome.rule if outcome else None,
    )


def _description(spec: GatewaySpec, operation: str, code: str, reason: str | None) -> str:
    if code == "Success":
        return _SUCCESS_TEXT[operation]
    if code == "Accepted":
        return f"{operation} accepted by {spec.name}; the result is pending (ask /PaymentGateway/status)."
    if code == "Rejected":
        return f"{operation} declined: {_words(reason or DEFAULT_REJECT_REASON)}."
    if code == "TemporaryFailure":
        return f"{spec.name} is temporarily unavailable; retry later."
    if code == "NotImplemented":
        return f"{spec.name} does not support {operation}."
    return f"{spec.name} failed to process the {operation}."


def _words(name: str) -> str:
    """``InsufficientFunds`` → ``insufficient funds``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return spaced[:1].upper() + spaced[1:].lower()


def _render(
    tenant: Tenant,
    account: GatewayAccount,
    item: AttemptInput,
    code: str,
    key: str,
    reason: str | None,
    text: str,
    outcome: Outcome | None,
) -> dict[str, Any]:
    spec = account.gateway
    operation = item.operation
    approved = code in SUCCESSFUL
    token: str | None = None
    reference = new_reference(tenant, spec, operation)
    approval = mint(tenant, spec.authorization_code, operation) if approved else None
    approval = approval if code == "Success" else None  # truthful hook: no authorizationCode on Accepted
    if code == "Success" and spec.tokenizes and (
        operation == "Tokenize" or (item.generate_token and operation in ("Charge", "PreAuth"))
    ):
        token = mint(tenant, spec.token, "Tokenize")
    return speak(
        tenant,
        account,
        item,
        code,
        key,
        reason,
        text,
        reference=reference,
        approval=approval,
        token=token,
        gateway_code=outcome.gateway_result_code if outcome else None,
        gateway_description=outcome.gateway_result_description if outcome else None,
    )


def speak(
    tenant: Tenant,
    account: GatewayAccount,
    item: AttemptInput,
    code: str,
    key: str,
    reason: str | None,
    text: str,
    *,
    reference: str,
    approval: str | None = None,
    token: str | None = None,
    gateway_code: str | None = None,
    gateway_description: str | None = None,
) -> dict[str, Any]:
    """The OperationResult of ``code`` in the gateway's vocabulary: native code and
    description for ``key`` (a result or reject reason) unless a scenario gave its own,
    and the rendered ``customGatewayResponse``."""
    spec = account.gateway
    operation = item.operation
    native = spec.code_for(key)
    now = tenant.now()
    number = item.card_number or ""
    values: dict[str, Any] = {
        "reference": reference,
        "amount": item.amount,
        "amountMinor": minor_units(item.amount, item.currency),
        "currency": item.currency,
        "currencyLower": item.currency.lower(),
        "operation": operation,
        "authorizationCode": approval,
        "approved": code == "Success",
        "cardBin": number[:6] or None,
        "cardLast4": number[-4:] or None,
        "cardBrand": item.card_brand or brand_of(number),
        "created": isoformat(now),
        "createdEpoch": int(now.timestamp()),
        "myRef": item.my_ref,
        "token": token,
        "account": account.name,
    }
    values["gatewayResultCode"] = gateway_code if gateway_code is not None else native.code
    description = gateway_description if gateway_description is not None else native.description
    values["gatewayResultDescription"] = render(description, values)
    return operation_result(
        operation,
        item.amount,
        item.currency,
        code,
        text,
        authorizationCode=approval if operation in AUTHORIZING or operation == "Status" else None,
        customGatewayResponse=(  # truthful hook: per-result / per-operation template
            render(payloads.template(spec, code, operation, reason), values) if spec.response else None
        ),
        gatewayName=spec.name,
        gatewayReference=reference,
        gatewayResultCode=values["gatewayResultCode"],
        gatewayResultDescription=values["gatewayResultDescription"],
        gatewayToken=token,
        rejectReasonCode=reason if code == "Rejected" else None,
    )


def render(template: Any, values: dict[str, Any]) -> Any:
    """Fill ``{placeholder}``s in a template (any JSON value). A string that is exactly one
    placeholder takes the value with its type; inside text a null value is empty; an
    unknown placeholder stays as written."""
    if isinstance(template, dict):
        return {key: render(item, values) for key, item in template.items()}
    if isinstance(template, list):
        return [render(item, values) for item in template]
    if not isinstance(template, str) or "{" not in template:
        return template
    whole = _PLACEHOLDER.fullmatch(template)
    if whole and whole.group(1) in values:
        return values[whole.group(1)]

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            return match.group(0)
        value = values[name]
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return _PLACEHOLDER.sub(one, template)


def brand_of(number: str) -> str | None:
    """The card brand (a Payments.CardTypes value) from the BIN table, None if unknown."""
    if not number or not (number.isascii() and number.isdigit()):  # truthful hook: typos reach the gateway now
        return None
    brand = cards.default_table().lookup(number, whole_card=True).brand
    return brand.name if brand else None


def minor_units(amount: float, currency: str) -> int:
    """``10.23`` USD → ``1023``; JPY has no minor unit, KWD has three digits."""
    return round(amount * 10 ** _EXPONENTS.get(currency.upper(), 2))
