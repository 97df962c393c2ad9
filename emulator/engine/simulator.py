"""One attempt at one simulated gateway.

Everything a gateway does differently is data in its file (``gateways/<Name>.yaml``). An
attempt goes: the gateway's own requirements → the scenario outcome (``ScenarioBook.decide``)
→ an OperationResult in the gateway's vocabulary (:func:`~emulator.engine.gateway_answers.speak`).
Every id and code comes from the tenant's random source and every time from its clock, so
a seeded run is byte-identical.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from emulator.catalog.catalog import GatewayResultCode, GatewaySpec
from emulator.domain.model import DropConnection, Money, OperationResult
from emulator.domain.vocabulary import (
    ACCEPTED,
    CAPTURE,
    CHARGE,
    DEFAULT_REJECT_REASON,
    FATAL_FAILURE,
    NO_FAULT,
    NOT_IMPLEMENTED,
    PRE_AUTH,
    REFUND,
    REJECTED,
    STATUS,
    SUCCESS,
    SUCCESSFUL,
    TEMPORARY_FAILURE,
    TOKENIZE,
    VOID,
    Operation,
    RejectReason,
    ResultCode,
)
from emulator.engine import checks
from emulator.engine.gateway_answers import AttemptInput, GatewayAccount, answer, new_reference, speak, tokenizes
from emulator.scenarios import Attempt, RuleOutcome

if TYPE_CHECKING:
    from emulator.scenarios import ScenarioBook
    from emulator.tenants.tenants import Tenant

__all__ = [  # GatewayAccount, AttemptInput and speak live in emulator.engine.gateway_answers
    "AttemptInput",
    "Attempted",
    "GatewayAccount",
    "attempt",
    "card_mode",
    "decide",
    "lookup",
    "new_reference",
    "requirement_failure",
    "speak",
]

# Requirements apply to the operations whose request carries the field.
NEEDS_CLIENT_IP = frozenset({CHARGE, PRE_AUTH, TOKENIZE})
NEEDS_ORDER_DESC = frozenset({CHARGE, PRE_AUTH})
NEEDS_MY_REF = frozenset({CHARGE, PRE_AUTH})
# Operations answered at once: an Accepted outcome is a Success, there is nothing to settle.
IMMEDIATE = frozenset({TOKENIZE, STATUS})
_SUCCESS_TEXT = {
    CHARGE: "Charge approved.",
    PRE_AUTH: "Authorization approved; the funds are held until capture.",
    CAPTURE: "Capture completed.",
    VOID: "Void completed.",
    REFUND: "Refund completed.",
    TOKENIZE: "Token created.",
    STATUS: "Transaction found.",
}
Refused = tuple[ResultCode, str, str]  # (result code, catalog code key, description) of a refusal
Decided = RuleOutcome | None  # the outcome of the rule that decided an attempt (None: the gateway's default)
# one attempt's answer, the outcome of the rule that decided it, and whether the gateway
# refused the request itself (requirement_failure)
Attempted = tuple[OperationResult, Decided, bool]


def requirement_failure(account: GatewayAccount, item: AttemptInput, sandbox: bool = True) -> Refused | None:
    """``(result code, catalog code key, description)`` when the gateway refuses the
    attempt before looking at it, else None. ``sandbox``: whether the API key is a sandbox
    key (the gateway's credentials must be of the same mode)."""
    spec = account.gateway
    operation = item.operation
    unimplemented = NOT_IMPLEMENTED
    if operation in spec.unsupported or (operation == TOKENIZE and not tokenizes(spec, item)):
        hint = " Use PreAuth then Capture." if operation == CHARGE and PRE_AUTH not in spec.unsupported else ""
        return unimplemented, unimplemented, f"{spec.name} does not support {operation}.{hint}"
    if item.network_token_brand and not spec.supports_network_token:
        return unimplemented, unimplemented, f"{spec.name} does not support network tokens."
    # a gateway known only by name (level listed) requires none of the names payemu shows for it
    missing = [key for key in spec.credentials if not account.credentials.get(key)] if spec.credentials else None
    if missing and spec.listed:
        missing = None
    if missing:
        where = f"stored account '{account.name}'" if account.name else "the inline paymentGatewayAccount"
        return (
            FATAL_FAILURE,
            "AuthenticationFailed",
            f"Authentication with {spec.name} failed: {where} has no value for {', '.join(missing)}.",
        )
    mode = spec.modes.mode_of(account.credentials) if spec.modes else None
    if mode is not None and spec.modes is not None:
        named = spec.modes.credential
        if mode == "invalid":
            return _credentials_refused(spec, f"{named} is not in the shape {spec.name} issues.")
        if (mode == "live") == sandbox:
            key = "a sandbox" if sandbox else "a live"
            return _credentials_refused(spec, f"{named} holds {mode} credentials, used with {key} API key.")
    if spec.requires_certificate and not account.certificate:
        field = "certificateName" if item.number == 1 else "paymentGatewayCertName"
        return (
            FATAL_FAILURE,
            "AuthenticationFailed",
            f"{spec.name} authenticates with a client certificate: name one in {field}.",
        )
    if spec.requires_cvv and operation in NEEDS_ORDER_DESC and item.card is not None and not item.card.cvv:
        return FATAL_FAILURE, FATAL_FAILURE, f"{spec.name} needs card.cvv."
    if (
        spec.tokenize_credential
        and _tokenizes(operation, item)
        and not account.credentials.get(spec.tokenize_credential)
    ):
        why = f"{spec.name} tokenizes only with the {spec.tokenize_credential} credential."
        return unimplemented, unimplemented, why
    if spec.requires_client_ip and operation in NEEDS_CLIENT_IP and not item.client_ip:
        return FATAL_FAILURE, FATAL_FAILURE, f"{spec.name} needs payerDetails.clientIPAddress."
    if spec.requires_order_desc and operation in NEEDS_ORDER_DESC and not item.order_desc:
        return FATAL_FAILURE, FATAL_FAILURE, f"{spec.name} needs orderDesc."
    if spec.min_my_ref and operation in NEEDS_MY_REF and len(item.my_ref or "") < spec.min_my_ref:
        return (
            FATAL_FAILURE,
            FATAL_FAILURE,
            f"{spec.name} needs myRef of at least {spec.min_my_ref} characters.",
        )
    return None


def _tokenizes(operation: str, item: AttemptInput) -> bool:
    return operation == TOKENIZE or (item.generate_token and operation in NEEDS_ORDER_DESC)


def _credentials_refused(spec: GatewaySpec, why: str) -> Refused:
    # a labelled choice (Fidelity: credential-shape): the gateway's own refusal, FatalFailure
    return FATAL_FAILURE, "AuthenticationFailed", f"{spec.name} refused the credentials: {why}"


def card_mode(book: ScenarioBook, tenant: Tenant, account: GatewayAccount, item: AttemptInput) -> RuleOutcome | None:
    """The gateway's documented decline of a card of the other mode than its credential
    (the first answer of the ``gateway`` tier of ``rulebook.PRECEDENCE``), or None: a live
    credential paying one of its test cards, a test credential paying a card that is no
    test number (its own test cards, payemu's and the widely published ones)."""
    spec = account.gateway
    modes = spec.modes
    if modes is None or item.card is None or (modes.live_test_card is None and modes.test_mode_live_card is None):
        return None
    mode = modes.mode_of(account.credentials)
    if mode == "live" and not tenant.is_sandbox and modes.live_test_card is not None:
        if item.card_number in book.test_cards(spec.name):
            return _card_mode_decline(modes.live_test_card, "live-mode-test-card")
    elif mode == "sandbox" and tenant.is_sandbox and modes.test_mode_live_card is not None:
        number = item.card_number
        if number not in book.test_cards(spec.name) and number not in modes.test_cards:
            return _card_mode_decline(modes.test_mode_live_card, "test-mode-live-card")
    return None


def _card_mode_decline(declined: GatewayResultCode, rule: str) -> RuleOutcome:
    return RuleOutcome(
        REJECTED,
        RejectReason.CARD_DECLINED,
        gateway_result_code=declined.code,
        gateway_result_description=declined.description,
        rule=rule,
        source=checks.CATALOG_SOURCE,  # the gateway's own check of the card's mode, not a scenario file
    )


def sandbox_otherwise(tenant: Tenant, spec: GatewaySpec, item: AttemptInput) -> RuleOutcome | None:
    """The gateway's test-account answer to a sandbox attempt no rule decided (its
    ``otherwise``), or None."""
    rest = spec.otherwise
    if rest is None or not tenant.is_sandbox or item.operation not in rest["operations"]:
        return None
    return RuleOutcome(
        rest["operationResultCode"],
        rest.get("rejectReasonCode"),
        gateway_result_code=rest["gatewayResultCode"],
        gateway_result_description=rest["gatewayResultDescription"],
        rule=f"{spec.name}-test-account",
        source=checks.CATALOG_SOURCE,
    )


def decide(book: ScenarioBook, tenant: Tenant, account: GatewayAccount, item: AttemptInput) -> RuleOutcome | None:
    """The scenario outcome for this attempt, in the order of ``rulebook.PRECEDENCE``
    (:func:`card_mode` comes before the gateway's triggers, :func:`sandbox_otherwise` after
    them). Mock gateways (``always``) heed the user's rules, and of the built-in ones only
    those naming the gateway or an account."""
    mock = account.gateway.always is not None
    mode = card_mode(book, tenant, account, item) if not mock else None
    known = sandbox_otherwise(tenant, account.gateway, item) if not mock else None
    if not book.may_match(tenant, mock, account.gateway.name):
        return mode or known  # no rule to ask
    attempt = Attempt(
        card_number=item.card_number,
        amount=float(item.money.amount),
        currency=item.money.currency,
        operation=item.operation,
        gateway=account.gateway.name,
        account=account.name,
        attempt=item.number,
        holder_name=item.card.holder if item.card else None,
        post_code=item.post_code,
        cvv=item.card.cvv if item.card else None,
    )
    return book.decide(tenant, attempt, mock=mock, documented=known, mode=mode)


async def attempt(book: ScenarioBook, tenant: Tenant, account: GatewayAccount, item: AttemptInput) -> Attempted:
    """Run one attempt (see :data:`Attempted`). The scenario's latency is awaited here; its
    fault, settlement and rule are the decided outcome's, for the caller, who records (or
    not) before dropping the connection."""
    spec = account.gateway
    refused = requirement_failure(account, item, tenant.is_sandbox)
    outcome: RuleOutcome | None = None
    reason: str | None = None
    code: ResultCode
    if refused is not None:
        code, key, description = refused
        text = description
    elif item.token_problem is not None:
        code, reason, text = REJECTED, RejectReason.INVALID_CARD_NUMBER, item.token_problem
        key = reason
    else:
        outcome = decide(book, tenant, account, item)
        # A user's rule beats the gateway's own card checks; otherwise they come first.
        failure = checks.for_attempt(book, tenant, spec, item, outcome)
        if failure is not None:
            outcome = None  # the gateway declined before any issuer was asked (no delay, no fault)
            code, reason, text = REJECTED, failure.reason, failure.description
            key = reason
        else:
            if outcome is None:
                code = REJECTED if spec.always == REJECTED else SUCCESS
            else:
                code = ResultCode(outcome.operation_result_code)
            if code == ACCEPTED and item.operation in IMMEDIATE:
                code = SUCCESS  # these answer at once; there is nothing to settle
            if code == REJECTED:
                reason = (outcome.reject_reason_code if outcome else None) or DEFAULT_REJECT_REASON
            key = reason or code
            text = _description(spec, item.operation, code, reason)
    delay_ms = outcome.delay_for(item.money.amount) if outcome is not None else 0
    if delay_ms > 0:
        await asyncio.sleep(delay_ms / 1000)
    if outcome is not None and outcome.approved_amount is not None and code == SUCCESS:
        item = partially_approved(item, outcome.approved_amount)
    return answer(tenant, account, item, code, key, reason, text, outcome), outcome, refused is not None


def partially_approved(item: AttemptInput, approved: float) -> AttemptInput:
    """``item`` at the lower amount a partial authorization approves (answer, ledger, capture ceiling)."""
    money = item.money
    lower = Money.of(approved, money.currency).rounded()
    return item if lower.amount >= money.amount else replace(item, money=lower)


async def lookup(
    book: ScenarioBook, tenant: Tenant, account: GatewayAccount, item: AttemptInput
) -> tuple[OperationResult | None, Decided]:
    """A status lookup at the gateway (its requirements, then any scenario rule for
    Status; no card checks): None when it answers, else the failed OperationResult; and
    the outcome of the rule that decided. A fault closes the connection
    (:class:`DropConnection`)."""
    refused_at = requirement_failure(account, item, tenant.is_sandbox)
    outcome: Decided = None
    if refused_at is None:
        outcome = decide(book, tenant, account, item)
        if outcome is None:
            return None, None
        if outcome.delay_ms > 0:
            await asyncio.sleep(outcome.delay_ms / 1000)
        if outcome.fault != NO_FAULT:
            raise DropConnection(outcome.fault)
        code = ResultCode(outcome.operation_result_code)
        if code in SUCCESSFUL:
            return None, outcome
        reason = outcome.reject_reason_code if code == REJECTED else None
        refused_at = (code, reason or code, f"The status lookup at {account.gateway.name} failed ({code}).")
    code, key, description = refused_at
    reference = new_reference(tenant, account.gateway, STATUS)
    answered = speak(
        tenant, account, item, code, key, key if code == REJECTED else None, description, reference=reference
    )
    return answered, outcome


def _description(spec: GatewaySpec, operation: Operation, code: ResultCode, reason: str | None) -> str:
    if code == SUCCESS:
        return _SUCCESS_TEXT[operation]
    if code == ACCEPTED:
        return f"{operation} accepted by {spec.name}; the result is pending (ask /PaymentGateway/status)."
    if code == REJECTED:
        return f"{operation} declined: {_words(reason or DEFAULT_REJECT_REASON)}."
    if code == TEMPORARY_FAILURE:
        return f"{spec.name} is temporarily unavailable; retry later."
    if code == NOT_IMPLEMENTED:
        return f"{spec.name} does not support {operation}."
    return f"{spec.name} failed to process the {operation}."


def _words(name: str) -> str:
    """``InsufficientFunds`` → ``insufficient funds``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return spaced[:1].upper() + spaced[1:].lower()
