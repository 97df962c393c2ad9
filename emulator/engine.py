"""The payment engine: one payment request from validated body to OperationResult.

``process(runtime, tenant, operation, request, call_attempts)`` serves all seven
operations (the HTTP handlers and eWallet sessions call it):

* credentials: inline ``paymentGatewayAccount`` wins, else the stored
  ``paymentGatewayAccountName``; neither, or an unknown name, is a 400;
* the card: ``@token`` references resolved through the vault; a ``userToken`` (a gateway
  token from tokenize or ``generateToken``) stands in for the card number;
* charge, authorize, tokenize: the primary account, then each ``fallbackUpgs`` entry in
  order after any attempt that is not Success or Accepted (with the config switch
  ``failover: recoverable-only``, hard declines do not fall over); every attempt is a
  ledger transaction and an entry of ``call_attempts``;
* capture, void, refund: the ledger's rules, then one gateway attempt on a reserved
  transaction; status: the ledger's current state of a charge or authorization.

Scenario faults: ``reset`` closes the connection before anything is recorded;
``lostResponse`` records the transaction, then closes the connection.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emulator import accounts, certificates, errors, ledger, tenant_settings, vault  # truthful hook: tenant_settings
from emulator.clock import isoformat
from emulator.gateways import payloads, simulator  # truthful hook: payloads
from emulator.gateways.simulator import AttemptInput, AttemptResult, GatewayAccount, operation_result
from emulator.pipeline import DropConnection

if TYPE_CHECKING:
    from emulator.runtime import Runtime
    from emulator.tenants import Tenant

HTTP_STATUS = {
    "Success": 200,
    "Accepted": 202,
    "Rejected": 409,
    "NotImplemented": 409,
    "FatalFailure": 500,
    "TemporaryFailure": 503,
}
# Declines that retrying elsewhere cannot fix: with `failover: recoverable-only` they end
# the failover chain (the service's current public guide).
HARD_DECLINES = frozenset({
    "InsufficientFunds", "ExpiredCard", "InvalidCardNumber", "InvalidCvv", "CardDeclined", "LostOrStolenCard",
    "SuspectedFraud", "DoNotHonor",
})
PAYMENTS = ("Charge", "PreAuth", "Tokenize")
FOLLOW_UPS = ("Capture", "Void", "Refund")
NO_CURRENCY = "USD"  # tokenize and an unknown status carry no amount; the schema needs a code


@dataclass
class Outcome:
    """The answer to one payment request."""

    result: dict[str, Any]
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    attempts: list[dict[str, Any]] = field(default_factory=list)


def answer(result: dict[str, Any], attempts: list[dict[str, Any]] | None = None, status: int | None = None) -> Outcome:
    code = result["operationResultCode"]
    headers = {"Retry-After": "1"} if code == "TemporaryFailure" and (status or 503) == 503 else {}
    return Outcome(result, status or HTTP_STATUS[code], headers, attempts or [])


async def process(
    runtime: Runtime, tenant: Tenant, operation: str, request: dict[str, Any], call_attempts: list[dict[str, Any]]
) -> Outcome:
    """Run one payment operation (an Operation enum value) for ``tenant``."""
    if operation in PAYMENTS:
        return await _pay(runtime, tenant, operation, request, call_attempts)
    if operation in FOLLOW_UPS:
        return await _follow_up(runtime, tenant, operation, request, call_attempts)
    if operation == "Status":
        return await _status(runtime, tenant, request, call_attempts)
    raise ValueError(f"not a payment operation: {operation}")


# -- credentials, currency, card ------------------------------------------------------------
def primary_account(runtime: Runtime, tenant: Tenant, request: dict[str, Any]) -> GatewayAccount:
    certificate = request.get("certificateName")
    if certificate:
        certificates.require_certificate(tenant, certificate, "certificateName")
    inline = request.get("paymentGatewayAccount")
    if inline is not None:
        where = "paymentGatewayAccount.paymentGatewayName"
        if not inline.get("paymentGatewayName"):
            raise errors.invalid(where, "The PaymentGatewayName field is required in paymentGatewayAccount.")
        spec = accounts.resolve_gateway(runtime.catalog, inline["paymentGatewayName"], where)
        pairs = accounts.check_credentials(spec, inline.get("credentials") or [], "paymentGatewayAccount.credentials")
        return GatewayAccount(spec, None, dict(pairs), certificate)
    name = request.get("paymentGatewayAccountName")
    if not name:
        raise errors.invalid("paymentGatewayAccountName", "Give paymentGatewayAccountName or paymentGatewayAccount.")
    return stored_account(runtime, tenant, name, "paymentGatewayAccountName", certificate)


def stored_account(runtime: Runtime, tenant: Tenant, name: str, where: str, certificate: str | None) -> GatewayAccount:
    stored = tenant.accounts.get(name)
    if stored is None:
        raise errors.invalid(where, f"No stored payment gateway account named '{name}'.")
    spec = runtime.catalog.get(stored.gateway)
    if spec is None:
        raise errors.invalid(where, f"The gateway '{stored.gateway}' of account '{name}' is not in the catalog.")
    return GatewayAccount(spec, stored.name, stored.credential_map(), certificate)


def fallback_accounts(runtime: Runtime, tenant: Tenant, request: dict[str, Any]) -> list[GatewayAccount]:
    """Every fallback entry as an account, all checked before any attempt runs."""
    found: list[GatewayAccount] = []
    problems: list[errors.FieldErrors] = []
    for index, entry in enumerate(request.get("fallbackUpgs") or []):
        where = f"fallbackUpgs[{index}]"
        try:
            certificate = entry.get("paymentGatewayCertName")
            if certificate:
                certificates.require_certificate(tenant, certificate, f"{where}.paymentGatewayCertName")
            found.append(stored_account(
                runtime, tenant, entry["paymentGatewayAccountName"], f"{where}.paymentGatewayAccountName", certificate
            ))
        except errors.ApiError as exc:
            problems.extend(exc.entries)
    if problems:
        raise errors.invalid_many(problems)
    return found


def currencies(runtime: Runtime) -> frozenset[str]:
    """The Payments.CurrencyCode values of the schema in use."""
    known = runtime.extras.get("currencies")
    if known is None:
        schemas = runtime.api.document.get("components", {}).get("schemas", {})
        known = frozenset(schemas.get("Payments.CurrencyCode", {}).get("enum", ()))
        runtime.extras["currencies"] = known
    return known


def currency_of(runtime: Runtime, value: str) -> str:
    code = value.strip().upper()
    if code not in currencies(runtime):
        raise errors.invalid("currency", f"Unknown currency code '{value}'.")
    return code


def resolved_card(tenant: Tenant, request: dict[str, Any]) -> dict[str, Any] | None:
    card = request.get("card")
    return vault.resolve_card(tenant, card) if card else None


def token_for(tenant: Tenant, user_token: str | None, gateway: str) -> tuple[str | None, str | None]:
    """``(card number, problem)`` for a ``userToken`` at ``gateway``; a token the gateway
    does not know is declined by it (InvalidCardNumber), which can fall over."""
    if not user_token:
        return None, None
    token = tenant.gateway_tokens.get(user_token)
    if token is None:
        return None, f"{gateway} does not know the userToken '{user_token[:64]}'."
    if token.gateway != gateway:
        return token.card_number, f"The userToken was issued by {token.gateway}; {gateway} cannot use it."
    return token.card_number, None


def attempt_entry(tenant: Tenant, account: GatewayAccount, number: int, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "attemptNumber": number,
        "paymentGatewayAccountName": account.name,
        "gatewayName": account.gateway.name,
        "isFallback": number > 1,
        "timestamp": isoformat(tenant.now()),
        "result": result,
    }


def refused(operation: str, amount: float, currency: str, refusal: ledger.Refusal) -> Outcome:
    """A ledger refusal: no gateway was asked."""
    result = operation_result(
        operation, amount, currency, "Rejected", refusal.description, rejectReasonCode=refusal.reason
    )
    return answer(result)


def _falls_over(runtime: Runtime, tenant: Tenant, result: AttemptResult) -> bool:
    if result.code in simulator.SUCCESSFUL:
        return False
    if tenant_settings.failover(runtime, tenant) == "recoverable-only" and result.code == "Rejected":  # truthful hook
        return result.result["rejectReasonCode"] not in HARD_DECLINES
    return True


# -- charge, authorize, tokenize ------------------------------------------------------------
async def _pay(
    runtime: Runtime, tenant: Tenant, operation: str, request: dict[str, Any], call_attempts: list[dict[str, Any]]
) -> Outcome:
    primary = primary_account(runtime, tenant, request)
    chain = [primary]
    if operation != "Tokenize":
        chain += fallback_accounts(runtime, tenant, request)
        currency = currency_of(runtime, request["currency"])
        amount = float(request["amount"])
    else:
        currency, amount = NO_CURRENCY, 0.0
    card = resolved_card(tenant, request)
    payer = request.get("payerDetails") or {}
    attempts: list[dict[str, Any]] = []
    last: AttemptResult | None = None
    for number, account in enumerate(chain, start=1):
        token_number, problem = token_for(tenant, request.get("userToken"), account.gateway.name)
        card_number = token_number or (card or {}).get("cardNumber")
        item = AttemptInput(
            operation=operation,
            amount=amount,
            currency=currency,
            card_number=card_number,
            card_brand=(card or {}).get("cardType"),
            my_ref=request.get("myRef"),
            order_desc=request.get("orderDesc"),
            client_ip=payer.get("clientIPAddress"),
            network_token_brand=request.get("networkTokenBrand"),
            generate_token=bool(request.get("generateToken")),
            token_problem=problem,
            number=number,
            card_details=card,  # truthful hook: expiry and cvv for the gateway's card checks
        )
        last = await _attempt(runtime, tenant, account, item, card_number, attempt_number=number)
        token = last.result["gatewayToken"]
        if token:
            ledger.remember_token(tenant, token, account.gateway.name, account.name, card_number)
        entry = attempt_entry(tenant, account, number, last.result)
        attempts.append(entry)
        call_attempts.append(entry)
        if last.fault == "lostResponse":
            raise DropConnection("lostResponse")
        if not _falls_over(runtime, tenant, last):  # truthful hook: per-tenant failover mode
            break
    assert last is not None
    return answer(last.result, attempts)


async def _attempt(
    runtime: Runtime,
    tenant: Tenant,
    account: GatewayAccount,
    item: AttemptInput,
    card_number: str | None,
    *,
    attempt_number: int = 1,
    parent: ledger.Transaction | None = None,
) -> AttemptResult:
    """One gateway attempt, recorded in the ledger — unless the scenario resets the
    connection first, in which case nothing reached the gateway's books."""
    result = await simulator.attempt(runtime, tenant, account, item)
    if result.fault == "reset":
        raise DropConnection("reset")
    ledger.record(
        tenant,
        result.result,
        account=account.name,
        card_number=card_number,
        my_ref=item.my_ref,
        authorization_days=account.gateway.authorization_days,
        parent=parent,
        attempt_number=attempt_number,
        settles_to=result.settles_to,
        settle_after_seconds=result.settle_after_seconds,
    )
    return result


# -- capture, void, refund ------------------------------------------------------------------
async def _follow_up(
    runtime: Runtime, tenant: Tenant, operation: str, request: dict[str, Any], call_attempts: list[dict[str, Any]]
) -> Outcome:
    account = primary_account(runtime, tenant, request)
    currency = currency_of(runtime, request["currency"])
    amount = float(request["amount"])
    card = resolved_card(tenant, request)
    tx = ledger.find(tenant, request["refTransId"])
    if tx is None:
        return refused(operation, amount, currency, _not_found(request["refTransId"]))
    refusal = ledger.check(tx, operation, account.gateway.name, currency, amount, tenant.now())
    if refusal is not None:
        return refused(operation, amount, currency, refusal)
    ledger.reserve(tx, operation)  # no await since check(): concurrent requests see it
    try:
        card_number = (card or {}).get("cardNumber") or tx.card_number
        item = AttemptInput(
            operation=operation,
            amount=amount,
            currency=currency,
            card_number=card_number,
            card_brand=(card or {}).get("cardType"),
            my_ref=request.get("myRef") or tx.my_ref,
            network_token_brand=request.get("networkTokenBrand"),
        )
        result = await _attempt(runtime, tenant, account, item, card_number, parent=tx)
    finally:
        ledger.release(tx)
    entry = attempt_entry(tenant, account, 1, result.result)
    call_attempts.append(entry)
    if result.fault == "lostResponse":
        raise DropConnection("lostResponse")
    return answer(result.result, [entry])


def _not_found(reference: str) -> ledger.Refusal:
    return ledger.Refusal("TransactionNotFound", f"No transaction with gatewayReference '{reference[:128]}'.")


# -- status -------------------------------------------------------------------------------
async def _status(
    runtime: Runtime, tenant: Tenant, request: dict[str, Any], call_attempts: list[dict[str, Any]]
) -> Outcome:
    account = primary_account(runtime, tenant, request)
    reference, my_ref = request.get("refTransId"), request.get("myRef")
    if not reference and not my_ref:
        raise errors.invalid("refTransId", "Give refTransId (the gatewayReference) or myRef.")
    tx = ledger.find(tenant, reference, my_ref)
    if tx is None:
        missing = ledger.Refusal(
            "TransactionNotFound",
            f"No transaction with gatewayReference '{reference[:128]}'." if reference
            else f"No charge or authorization with myRef '{my_ref}'.",
        )
        return refused("Status", 0.0, NO_CURRENCY, missing)
    now = tenant.now()
    refusal = ledger.check(tx, "Status", account.gateway.name, None, tx.amount, now)
    if refusal is not None:
        return refused("Status", tx.amount, tx.currency, refusal)
    item = AttemptInput(operation="Status", amount=tx.amount, currency=tx.currency, card_number=tx.card_number,
                        my_ref=tx.my_ref, network_token_brand=request.get("networkTokenBrand"))
    failed = await _status_lookup(runtime, tenant, account, item)
    if failed is not None:
        call_attempts.append(attempt_entry(tenant, account, 1, failed))
        code = failed["operationResultCode"]
        return answer(failed, status=409 if code in ("Rejected", "NotImplemented") else 500)
    state = tx.state(now)
    code, reason = tx.result_code, tx.reject_reason
    result = simulator.speak(
        tenant, account, item, code,
        payloads.status_key(account.gateway, state, reason or code), reason,  # truthful hook: expired auth
        f"Transaction found: {state}.",
        reference=tx.reference, approval=tx.authorization_code,
    )
    call_attempts.append(attempt_entry(tenant, account, 1, result))
    return answer(result, status=200 if code in simulator.SUCCESSFUL else 409)


async def _status_lookup(
    runtime: Runtime, tenant: Tenant, account: GatewayAccount, item: AttemptInput
) -> dict[str, Any] | None:
    """Ask the gateway (its requirements, then any scenario rule for Status): None when
    it answers, else the failed OperationResult. A fault closes the connection."""
    refused_at = simulator.requirement_failure(account, item)
    if refused_at is None:
        outcome = simulator.decide(runtime, tenant, account, item)
        if outcome is None:
            return None
        if outcome.delay_ms > 0:
            await asyncio.sleep(outcome.delay_ms / 1000)
        if outcome.fault != "none":
            raise DropConnection(outcome.fault)
        code = outcome.operation_result_code
        if code in simulator.SUCCESSFUL:
            return None
        reason = outcome.reject_reason_code if code == "Rejected" else None
        refused_at = (code, reason or code, f"The status lookup at {account.gateway.name} failed ({code}).")
    code, key, text = refused_at
    reference = simulator.new_reference(tenant, account.gateway, "Status")
    return simulator.speak(tenant, account, item, code, key, key if code == "Rejected" else None, text,
                           reference=reference)
