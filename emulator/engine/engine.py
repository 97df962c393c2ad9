"""The payment engine: one :class:`~emulator.domain.model.PaymentRequest` to an :class:`OperationOutcome`.

``process`` serves all seven operations: it resolves the credentials and the card, tries
the primary account and then each fallback (:mod:`emulator.engine.failover`), and keeps
every attempt in the ledger and in ``call_attempts``. The HTTP status is the edge's to decide."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from dataclasses import field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from emulator.catalog import payloads
from emulator.domain import errors
from emulator.domain.model import AttemptRecord, Card, DropConnection, Money, OperationResult, PaymentRequest
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import (
    ACCEPTED,
    FOLLOW_UPS,
    LOST_RESPONSE,
    NO_FAULT,
    PAYMENTS,
    REJECTED,
    RESET,
    STATUS,
    SUCCESS,
    SUCCESSFUL,
    TOKENIZE,
    RejectReason,
)
from emulator.engine import simulator
from emulator.engine.failover import fallback_accounts, falls_over, primary_account
from emulator.engine.simulator import AttemptInput, GatewayAccount
from emulator.stores import ledger, recording, rules, tenant_settings, vault

if TYPE_CHECKING:
    from emulator.tenants.services import Services
    from emulator.tenants.tenants import Tenant


LOOKUP_FAILED = "failed"  # a status lookup the gateway did not answer: its failed attempt
LOOKUP_FOUND = "found"  # a status lookup answered with the ledger's state of the transaction


@dataclass(slots=True)
class OperationOutcome:
    """The answer to one payment request: the final result and every attempt made."""

    result: OperationResult
    attempts: list[AttemptRecord] = field(default_factory=list)
    lookup: str | None = None
    refused: bool = False  # the gateway refused the request itself (credentials, a parameter it needs)


def answer(
    result: OperationResult,
    attempts: list[AttemptRecord] | None = None,
    lookup: str | None = None,
    refused: bool = False,
) -> OperationOutcome:
    return OperationOutcome(result, attempts or [], lookup, refused)


def process(
    runtime: Services, tenant: Tenant, request: PaymentRequest, call_attempts: list[AttemptRecord]
) -> Coroutine[Any, Any, OperationOutcome]:
    """Run one payment operation for ``tenant``; ``call_attempts`` gets each attempt as made,
    so the journal has them even when a fault closes the connection."""
    operation = request.operation
    if operation in PAYMENTS:
        return _pay(runtime, tenant, request, call_attempts)
    if operation in FOLLOW_UPS:
        return _follow_up(runtime, tenant, request, call_attempts)
    if operation == STATUS:
        return _status(runtime, tenant, request, call_attempts)
    raise ValueError(f"not a payment operation: {operation}")


# -- currency, card -----------------------------------------------------------------------
def currencies(runtime: Services) -> Mapping[str, str]:
    return runtime.currencies


def currency_of(runtime: Services, value: str) -> str:
    """The code ``value`` names, as the schema's own string (shared by every transaction)."""
    known = runtime.currencies
    found = known.get(value)
    if found is not None:
        return found
    found = known.get(value.strip().upper())
    if found is None:
        raise errors.invalid("currency", f"Unknown currency code '{value}'.")
    return found


def money_of(runtime: Services, request: PaymentRequest) -> Money:
    amount, currency = request.amount, request.currency
    if amount is None or currency is None:
        raise errors.invalid("amount", "The Amount and Currency fields are required.")
    found = runtime.currencies.get(currency)  # the code as the schema spells it: currency_of's first look
    return Money(amount, found if found is not None else currency_of(runtime, currency))


def resolved_card(tenant: Tenant, request: PaymentRequest) -> Card | None:
    """The request's card, its ``@token`` references resolved (the vault is asked only for one)."""
    card = request.card
    if card is None:
        return None
    number, cvv = card.number, card.cvv
    if (number.__class__ is str and number[:1] == "@") or (cvv.__class__ is str and cvv[:1] == "@"):
        return vault.resolve_card(tenant, card)
    return card


def token_for(tenant: Tenant, user_token: str | None, gateway: str) -> tuple[str | None, str | None]:
    """``(card number, problem)`` for a ``userToken``; one unknown to the gateway is declined by it."""
    if not user_token:
        return None, None
    token = tenant.ledger.token(user_token)
    if token is None:
        return None, f"{gateway} does not know the userToken '{user_token[:64]}'."
    if token.gateway != gateway:
        return token.card_number, f"The userToken was issued by {token.gateway}; {gateway} cannot use it."
    return token.card_number, None


def attempt_record(
    tenant: Tenant,
    account: GatewayAccount,
    number: int,
    result: OperationResult,
    at: datetime | None = None,
    decided: simulator.Decided = None,
) -> AttemptRecord:
    """The journal's record of one attempt (``at``: when, now if not given; ``decided``: the
    scenario rule that decided it, if one did)."""
    rule, source = (None, None) if decided is None else (decided.rule or None, decided.source or None)
    # positional, in the field order: a charge's hot path (keywords there cost it instructions)
    return AttemptRecord(number, account.name, account.gateway.name, at or tenant.now(), result, rule, source)


def refused(tenant: Tenant, account: GatewayAccount, item: AttemptInput, refusal: rules.Refusal) -> OperationOutcome:
    """A ledger refusal, answered as the gateway answers it: its name, its native code for
    the reason (its generic decline where it documents none: Fidelity, ledger-refusals) and
    its response. Nothing is recorded."""
    reason = refusal.reason
    reference = simulator.new_reference(tenant, account.gateway, item.operation)
    result = simulator.speak(tenant, account, item, REJECTED, reason, reason, refusal.description, reference=reference)
    return answer(result)


def limits_of(account: GatewayAccount) -> rules.RuleLimits:
    """The gateway's capture limit and, while the account's credential that lifts it is not
    true, its refund window (Authorize.Net's ECCenabled)."""
    spec = account.gateway
    window = spec.refund_limit
    days = None
    if window is not None and str(account.credentials.get(window.unless) or "").strip().lower() != "true":
        days = window.days
    return rules.RuleLimits(spec.capture_limit, days)


# -- charge, authorize, tokenize ------------------------------------------------------------
async def _pay(
    runtime: Services, tenant: Tenant, request: PaymentRequest, call_attempts: list[AttemptRecord]
) -> OperationOutcome:
    operation = request.operation
    chain = [primary_account(runtime, tenant, request)]
    if request.fallbacks:
        chain += fallback_accounts(runtime, tenant, request)
    money = Money.none() if operation == TOKENIZE else money_of(runtime, request)
    card = resolved_card(tenant, request)
    attempts: list[AttemptRecord] = []
    user_token = request.user_token
    token_number = problem = None
    # the setting is read only where it can matter: the mock gateways tokenize under it
    mocks_tokenize = (operation == TOKENIZE or request.generate_token) and tenant_settings.mocks_tokenize(
        runtime, tenant
    )
    for number, account in enumerate(chain, start=1):
        if user_token:
            token_number, problem = token_for(tenant, user_token, account.gateway.name)
        # the request's card, with the userToken's number where one stands in for it
        paying = Card(number=token_number) if card is None else card.with_number(token_number) if token_number else card
        item = AttemptInput(  # positional: in the field order
            operation,
            money,
            paying,
            request.my_ref,
            request.order_desc,
            request.client_ip,
            request.network_token_brand,
            request.generate_token,
            problem,
            number,
            request.post_code,
            mocks_tokenize,
        )
        entry, refused_itself = await _attempt(runtime, tenant, account, item, call_attempts)
        attempts.append(entry)
        result = entry.result
        if result.code in SUCCESSFUL or not falls_over(runtime, tenant, result):
            break
    return OperationOutcome(result, attempts, None, refused_itself)


async def _attempt(
    runtime: Services,
    tenant: Tenant,
    account: GatewayAccount,
    item: AttemptInput,
    call_attempts: list[AttemptRecord],
    parent: ledger.Transaction | None = None,
) -> tuple[AttemptRecord, bool]:
    """One gateway attempt, recorded in the ledger (unless the scenario resets the connection
    first) and in ``call_attempts``: its record, and whether the gateway refused the request
    itself. A token the gateway minted is kept; a lost response closes the connection."""
    result, decided, refused_itself = await simulator.attempt(runtime.scenarios, tenant, account, item)
    fault = decided.fault if decided is not None else NO_FAULT
    if fault == RESET:
        raise DropConnection(RESET)
    settling = decided if decided is not None and result.code == ACCEPTED else None
    at = recording.record(  # positional, in the parameter order: a charge's hot path
        tenant,
        result,
        account.name,  # account
        item.card_number,  # card_number
        item.my_ref,  # my_ref
        account.gateway.authorization_days,  # authorization_days
        parent,
        item.number,  # attempt_number
        settling.settles_to if settling else None,  # settles_to
        settling.settle_after_seconds if settling else None,  # settle_after_seconds
    )
    token = result.gateway_token
    if token:
        recording.remember_token(tenant, token, account.gateway.name, account.name, item.card_number)
    rule = source = None
    if decided is not None:
        rule, source = decided.rule or None, decided.source or None
    # attempt_record's record, made here: positional, in the field order
    entry = AttemptRecord(item.number, account.name, account.gateway.name, at, result, rule, source)
    call_attempts.append(entry)
    if fault == LOST_RESPONSE:
        raise DropConnection(LOST_RESPONSE)
    return entry, refused_itself


# -- capture, void, refund ------------------------------------------------------------------
async def _follow_up(
    runtime: Services, tenant: Tenant, request: PaymentRequest, call_attempts: list[AttemptRecord]
) -> OperationOutcome:
    operation = request.operation
    account = primary_account(runtime, tenant, request)
    money = money_of(runtime, request)
    card = resolved_card(tenant, request)
    reference = request.ref_trans_id or ""
    tx = tenant.ledger.find(reference)
    approves_any = account.gateway.always == SUCCESS  # NULLSuccess: whatever the reference
    if tx is None:
        asked = AttemptInput(operation, money, card, request.my_ref, network_token_brand=request.network_token_brand)
        if approves_any:
            return await _unlinked(runtime, tenant, account, asked, call_attempts)
        return refused(tenant, account, asked, _not_found(reference))
    paying = card.with_number(card.number or tx.card_number) if card else Card(number=tx.card_number)
    item = AttemptInput(
        operation=operation,
        money=money,
        card=paying,
        my_ref=request.my_ref or tx.my_ref,
        network_token_brand=request.network_token_brand,
    )
    now = tenant.now()
    refusal = rules.check(tx, operation, account.gateway.name, money.currency, money.amount, now, limits_of(account))
    if refusal is not None:
        if approves_any:
            return await _unlinked(runtime, tenant, account, item, call_attempts)
        return refused(tenant, account, item, refusal)
    rules.reserve(tx, operation)  # no await since check(): concurrent requests see it
    try:
        entry, refused_itself = await _attempt(runtime, tenant, account, item, call_attempts, tx)
    finally:
        rules.release(tx)
    return answer(entry.result, [entry], refused=refused_itself)


async def _unlinked(
    runtime: Services, tenant: Tenant, account: GatewayAccount, item: AttemptInput, call_attempts: list[AttemptRecord]
) -> OperationOutcome:
    """A follow-up the mock gateway NULLSuccess approves although the ledger would refuse
    it (a reference it never issued, an operation the transaction's state forbids): the
    mock-PSP page says it approves whatever the transaction details. It is recorded on
    its own, so the earlier transaction, if any, keeps its state."""
    entry, refused_itself = await _attempt(runtime, tenant, account, item, call_attempts)
    return answer(entry.result, [entry], refused=refused_itself)


def _not_found(reference: str) -> rules.Refusal:
    return rules.Refusal(
        RejectReason.TRANSACTION_NOT_FOUND, f"No transaction with gatewayReference '{reference[:128]}'."
    )


# -- status -------------------------------------------------------------------------------
async def _status(
    runtime: Services, tenant: Tenant, request: PaymentRequest, call_attempts: list[AttemptRecord]
) -> OperationOutcome:
    account = primary_account(runtime, tenant, request)
    reference, my_ref = request.ref_trans_id, request.my_ref
    if not reference and not my_ref:
        raise errors.invalid("refTransId", "Give refTransId (the gatewayReference) or myRef.")
    tx = tenant.ledger.find(reference, my_ref)
    if tx is None:
        missing = (
            _not_found(reference)
            if reference
            else rules.Refusal(RejectReason.TRANSACTION_NOT_FOUND, f"No charge or authorization with myRef '{my_ref}'.")
        )
        asked = AttemptInput(STATUS, Money.none(), my_ref=my_ref, network_token_brand=request.network_token_brand)
        return refused(tenant, account, asked, missing)
    now = tenant.now()
    item = AttemptInput(
        operation=STATUS,
        money=tx.money,
        card=Card(number=tx.card_number),
        my_ref=tx.my_ref,
        network_token_brand=request.network_token_brand,
    )
    refusal = rules.check(tx, STATUS, account.gateway.name, None, tx.amount, now)
    if refusal is not None:
        return refused(tenant, account, item, refusal)
    failed, decided = await simulator.lookup(runtime.scenarios, tenant, account, item)
    if failed is not None:
        call_attempts.append(attempt_record(tenant, account, 1, failed, decided=decided))
        return answer(failed, lookup=LOOKUP_FAILED)
    state = tx.state(now)
    code, reason = tx.result_code, tx.reject_reason
    result = simulator.speak(
        tenant,
        account,
        item,
        code,
        payloads.status_key(account.gateway, state, reason or code),
        reason,
        f"Transaction found: {state}.",
        reference=tx.reference,
        approval=tx.authorization_code,
    )
    call_attempts.append(attempt_record(tenant, account, 1, result, decided=decided))
    return answer(result, lookup=LOOKUP_FOUND)
