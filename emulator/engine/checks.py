"""What a gateway checks of the card and the amount itself, before any issuer is asked.

Real gateways decline a mistyped card number, an expired card, a security code of the
wrong length or a non-positive amount on their own; payemu does the same, driven by the
``cardChecks`` data of ``catalog.yaml`` (the defaults) and of each gateway's file, so
no gateway has code of its own. The simulator calls :func:`card_problem` once per attempt
that no rule of the user decided (such a rule still wins; see :func:`rule_wins`); the hosted payment page
reaches it through the same engine.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from emulator.catalog.catalog import GatewaySpec
from emulator.domain.cards import brand_of, luhn_valid
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import Operation, RejectReason
from emulator.engine.gateway_answers import AttemptInput

if TYPE_CHECKING:
    from emulator.scenarios import RuleOutcome, ScenarioBook
    from emulator.tenants.tenants import Tenant

DEFAULT_CARD_OPERATIONS = (Operation.CHARGE, Operation.PRE_AUTH, Operation.TOKENIZE)
DEFAULT_AMOUNT_OPERATIONS = (Operation.CHARGE, Operation.PRE_AUTH, Operation.CAPTURE, Operation.REFUND)
_MINIMUM_OPERATIONS = frozenset({Operation.CHARGE, Operation.PRE_AUTH})  # where a gateway's minimum applies
DEFAULT_AMOUNT_REASON = RejectReason.INVALID_AMOUNT.value
CATALOG_SOURCE = "catalog"  # the source of an outcome the gateway's file decides, not a rule


@dataclass(frozen=True)
class CheckFailure:
    """A decline by the gateway's own checks: ``reason`` is the rejectReasonCode (and the
    catalog key of the gateway's native code), ``description`` the operation text."""

    reason: str
    description: str


def _ascii_digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _number_problem(checks: dict[str, Any], number: str | None, documented: bool = False) -> str | None:
    if number is None:
        return None  # nothing to check (e.g. a userToken that names no card)
    bounds = checks.get("digits", {"min": 12, "max": 19})
    if not _ascii_digits(number) or not bounds["min"] <= len(number) <= bounds["max"]:
        return f"The card number is not {bounds['min']} to {bounds['max']} digits (0-9)."
    if checks.get("luhn", True) and not documented and not luhn_valid(number):
        return "The card number fails the Luhn check."
    return None


def _expiry_problem(checks: dict[str, Any], month: Any, year: Any, now: datetime) -> str | None:
    if not checks.get("expiry", True) or not isinstance(month, int) or not isinstance(year, int):
        return None
    if year < 100 and checks.get("twoDigitYears", False):
        year += 2000
    if (year, month) < (now.year, now.month):
        return f"The card expired ({month:02d}/{year})."
    return None


def _cvv_problem(checks: dict[str, Any], cvv: Any, brand: str | None) -> str | None:
    if cvv is None or cvv == "":
        return None  # the security code is optional
    lengths = checks.get("cvvLength", {"AMEX": 4, "default": 3})
    expected = lengths.get(brand or "", lengths.get("default", 3))
    if not isinstance(cvv, str) or not _ascii_digits(cvv) or len(cvv) != expected:
        return f"The security code of a {brand or 'card'} card is {expected} digits."
    return None


def card_problem(
    gateway: GatewaySpec,
    operation: str,
    card_number: str | None,
    expiry_month: Any,
    expiry_year: Any,
    cvv: Any,
    brand: str | None,
    amount: Decimal | float,
    now: datetime,
    currency: str = "USD",
    exponent: int = 2,
    documented: bool = False,
) -> CheckFailure | None:
    """The first check of ``gateway`` the attempt fails, else None. Order: card number,
    expiry, security code (on the card operations), then the amount. ``documented``: the
    gateway's own testing pages name the card number, so its sandbox answers it as they
    say even where it fails the Luhn check."""
    checks = gateway.card_checks
    if not checks.get("enabled", True):
        return None
    if operation in checks.get("cardOperations", DEFAULT_CARD_OPERATIONS):
        found = _number_problem(checks, card_number, documented)
        if found:
            return CheckFailure(RejectReason.INVALID_CARD_NUMBER, found)
        found = _expiry_problem(checks, expiry_month, expiry_year, now)
        if found:
            return CheckFailure(RejectReason.EXPIRED_CARD, found)
        found = _cvv_problem(checks, cvv, brand)
        if found:
            return CheckFailure(RejectReason.INVALID_CVV, found)
    if operation in checks.get("amountOperations", DEFAULT_AMOUNT_OPERATIONS):
        zero_ok = operation == Operation.PRE_AUTH and checks.get("accountVerification", False)
        if amount < 0 or (amount == 0 and not zero_ok):
            reason = checks.get("nonPositiveAmountReason", DEFAULT_AMOUNT_REASON)
            if operation == Operation.PRE_AUTH and amount == 0:
                what = "an account verification (zero amount) is not offered"
            else:
                what = "the amount must be greater than 0"
            return CheckFailure(reason, f"{gateway.name} declined the {operation}: {what}.")
        found = _amount_problem(checks, operation, Decimal(str(amount)), currency, exponent)
        if found:
            return CheckFailure(RejectReason.INVALID_AMOUNT, f"{gateway.name} declined the {operation}: {found}.")
    return None


def _amount_problem(
    checks: dict[str, Any], operation: str, amount: Decimal, currency: str, exponent: int
) -> str | None:
    """A fraction finer than the currency's minor unit (``wholeMinorUnits``: JPY 100.5),
    or a payment below the gateway's minimum for the currency (``minimumAmounts``)."""
    if checks.get("wholeMinorUnits") and amount != amount.quantize(Decimal(1).scaleb(-exponent)):
        unit = "whole units" if exponent == 0 else f"{exponent} decimals"
        return f"{currency} amounts are in {unit}"
    minimum = checks.get("minimumAmounts", {}).get(currency)
    if minimum is not None and operation in _MINIMUM_OPERATIONS and 0 < amount < Decimal(str(minimum)):
        return f"the amount must be at least {minimum} {currency}"
    return None


def for_attempt(
    book: ScenarioBook, tenant: Tenant, gateway: GatewaySpec, item: AttemptInput, outcome: RuleOutcome | None
) -> CheckFailure | None:
    """:func:`card_problem` for one simulator attempt (its resolved card), at the tenant's
    clock. None without asking when the gateway checks no cards (the mock gateways) or a
    user's rule decided the attempt (:func:`rule_wins`): the cheapest questions first."""
    if not gateway.checks_cards or rule_wins(book, tenant, outcome):
        return None
    card = item.card
    number = card.number if card else None
    brand = (card.brand if card else None) or brand_of(number)
    return card_problem(
        gateway,
        item.operation,
        number,
        card.expiration_month if card else None,
        card.expiration_year if card else None,
        card.cvv if card else None,
        brand,
        item.money.amount,
        tenant.now(),
        item.money.currency,
        item.money.exponent,
        documented=number is not None and number in book.gateway_cards(gateway.name),
    )


def rule_wins(book: ScenarioBook, tenant: Tenant, outcome: RuleOutcome | None) -> bool:
    """True when a scenario rule of the user (a file of theirs or one added at run time)
    decided the attempt: it wins over the gateway's checks. The built-in test cards (payemu's
    and the gateways' own) do not: a test card with an expired date is declined as expired."""
    if outcome is None or outcome.source == CATALOG_SOURCE:
        return False  # no rule, or the gateway's own documented answer (simulator.documented)
    return book.users_rule(tenant, outcome.rule)  # without reading every gateway's triggers
