"""What a scenario rule is: the attempt it looks at, the outcome it gives, and matching.

Everything here is immutable and built by :mod:`emulator.scenarios.loader` from checked
data, so matching never has to cope with a malformed rule.
"""

from __future__ import annotations

import copy
from dataclasses import field
from decimal import Decimal
from functools import cached_property
from typing import Any

from emulator.domain.records import dataclass
from emulator.domain.vocabulary import Fault

AMOUNT_TOLERANCE = 1e-9
RUNTIME_SOURCE = "runtime"


def digits(card_number: str | None) -> str:
    """The digits of a card number (spaces, dashes and anything else dropped)."""
    if not card_number or card_number.isdigit():
        return card_number or ""
    return "".join(ch for ch in card_number if ch.isdigit())


def canonical(value: str, choices: tuple[str, ...]) -> str | None:
    """``value`` spelled as in ``choices`` (case-insensitive), or None."""
    lowered = value.lower()
    for choice in choices:
        if choice.lower() == lowered:
            return choice
    return None


@dataclass(unsafe_hash=True)
class Attempt:
    """One gateway attempt the engine is about to make."""

    card_number: str | None
    amount: float
    currency: str
    operation: str
    gateway: str
    account: str | None
    attempt: int = 1
    holder_name: str | None = None  # card.cardHolderName (Adyen's test holder names)
    post_code: str | None = None  # payerDetails.postCode (Authorize.Net's test ZIP codes)
    cvv: str | None = None  # card.cvv (Authorize.Net's test card codes)

    @cached_property
    def card_digits(self) -> str:
        return digits(self.card_number)


@dataclass(frozen=True)
class RuleOutcome:
    """What a rule says the gateway answers."""

    operation_result_code: str
    reject_reason_code: str | None = None
    gateway_result_code: str | None = None
    gateway_result_description: str | None = None
    delay_ms: int = 0
    fault: str = Fault.NONE
    settles_to: str | None = None
    settle_after_seconds: float | None = None
    rule: str = ""
    source: str = field(default="", compare=False)  # the rule's location (``file:line``, ``runtime``)
    authentication: str | None = None  # eWallet sessions: the card form's authenticationOption
    approved_amount: float | None = None  # a partial authorization: what the gateway approved
    # fields of the gateway's own answer this rule sets: (dotted path, value), in the rule's order
    gateway_fields: tuple[tuple[str, str | float | bool | None], ...] = ()
    delay_from_cents: bool = False  # the delay is the amount's cents in seconds (0-99 s)

    def summary(self) -> str:
        """``Rejected (InsufficientFunds), delay 1500 ms, ...`` for tables and listings."""
        text = self.operation_result_code
        if self.reject_reason_code:
            text += f" ({self.reject_reason_code})"
        extras = self.notes()
        return text + (", " + ", ".join(extras) if extras else "")

    def delay_for(self, amount: Decimal) -> int:
        """The delay in ms before answering ``amount`` (major units): ``delay_ms``, or the
        amount's cents as seconds for a rule that says so (8.30 waits 30 s)."""
        if self.delay_from_cents:
            return int(abs(amount) * 100) % 100 * 1000
        return self.delay_ms

    def notes(self) -> list[str]:
        notes: list[str] = []
        if self.gateway_result_code is not None:
            notes.append(f"gateway code {self.gateway_result_code}")
        if self.settles_to:
            notes.append(f"settles to {self.settles_to} after {_number(self.settle_after_seconds or 0)} s")
        if self.delay_ms:
            notes.append(f"delay {self.delay_ms} ms")
        if self.delay_from_cents:
            notes.append("delay of the amount's cents in seconds")
        if self.fault != Fault.NONE:
            notes.append(f"fault {self.fault}")
        if self.authentication:
            notes.append(f"eWallet authentication {self.authentication}")
        if self.approved_amount is not None:
            notes.append(f"approves {_number(self.approved_amount)} at most")
        notes.extend(f"{path} {value}" for path, value in self.gateway_fields)
        return notes


@dataclass(frozen=True)
class Match:
    """The ``when`` of a rule; a None field matches anything."""

    card_numbers: frozenset[str] | None = None
    amount: float | None = None
    amount_min: float | None = None
    amount_max: float | None = None
    currency: str | None = None
    operations: frozenset[str] | None = None
    gateway: str | None = None
    account: str | None = None
    attempts: frozenset[int] | None = None
    holder_names: frozenset[str] | None = None  # upper case
    post_codes: frozenset[str] | None = None
    cvvs: frozenset[str] | None = None

    @property
    def names_gateway_or_account(self) -> bool:
        return self.gateway is not None or self.account is not None

    def matches(self, attempt: Attempt) -> bool:
        if self.card_numbers is not None and attempt.card_digits not in self.card_numbers:
            return False
        if self.amount is not None and abs(attempt.amount - self.amount) > AMOUNT_TOLERANCE:
            return False
        if self.amount_min is not None and attempt.amount < self.amount_min - AMOUNT_TOLERANCE:
            return False
        if self.amount_max is not None and attempt.amount > self.amount_max + AMOUNT_TOLERANCE:
            return False
        if self.currency is not None and attempt.currency.upper() != self.currency:
            return False
        if self.operations is not None and attempt.operation.lower() not in self.operations:
            return False
        if self.gateway is not None and attempt.gateway.casefold() != self.gateway:
            return False
        if self.account is not None and (attempt.account or "").casefold() != self.account:
            return False
        if self.holder_names is not None and (attempt.holder_name or "").strip().upper() not in self.holder_names:
            return False
        if self.post_codes is not None and (attempt.post_code or "").strip() not in self.post_codes:
            return False
        if self.cvvs is not None and (attempt.cvv or "") not in self.cvvs:
            return False
        return self.attempts is None or attempt.attempt in self.attempts


@dataclass(frozen=True)
class Rule:
    """One checked rule. ``outcomes`` holds one entry for ``then``, several for
    ``sequence``; ``data`` is the rule in file format (canonical spelling)."""

    name: str
    match: Match
    outcomes: tuple[RuleOutcome, ...]
    is_sequence: bool
    source: str
    line: int
    description: str | None = None
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    weight: int = field(default=0, compare=False, hash=False, repr=False)  # bytes, once aliases are expanded (loader)

    @property
    def location(self) -> str:
        """``file:line``, or ``runtime`` for rules added through the control API."""
        return location(self.source, self.line)

    def outcome(self, index: int) -> RuleOutcome:
        """The outcome of the ``index``-th matching call (0-based); the last one repeats."""
        return self.outcomes[min(index, len(self.outcomes) - 1)]

    def to_json(self) -> dict[str, Any]:
        return {**copy.deepcopy(self.data), "source": self.location}

    def when_text(self) -> str:
        """``cardNumber=4000000000000002 operation=Charge,PreAuth`` (``any`` when empty)."""
        parts = []
        for key, value in self.data.get("when", {}).items():
            text = amount_text if key == "amount" else _number
            if isinstance(value, dict):
                bounds = [text(value[k]) if k in value else "" for k in ("min", "max")]
                parts.append(f"{key}={bounds[0]}..{bounds[1]}")
            elif isinstance(value, list):
                parts.append(f"{key}={','.join(text(v) for v in value)}")
            else:
                parts.append(f"{key}={text(value)}")
        return " ".join(parts) or "any"

    def outcome_text(self) -> str:
        if not self.is_sequence:
            return self.outcomes[0].summary()
        return " → ".join(o.summary() for o in self.outcomes) + " (last repeats)"


def location(source: str, line: int) -> str:
    """Where a rule was written: ``file:line``, or ``runtime`` (added through the control API)."""
    return RUNTIME_SOURCE if source == RUNTIME_SOURCE else f"{source}:{line}"


def amount_text(value: Any) -> str:
    """An amount with two decimals: ``9011.00``."""
    return f"{value:.2f}" if isinstance(value, int | float) else str(value)


def _number(value: Any) -> str:
    """``5`` rather than ``5.0``; anything else as it is."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
