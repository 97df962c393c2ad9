"""The file rules that may match one gateway's attempts, indexed by card number and amount.

Most rules name the cards or the exact amount they answer (a gateway's test cards,
payemu's test amounts). :class:`RuleIndex` files each such rule under its card numbers
(or its amount in cents) once, so an attempt is tested only against the rules filed
under its own card and amount and those that name neither. The index only leaves out
rules that cannot match: every candidate is still tested by ``Match.matches``, in the
rules' own order (``rulebook.PRECEDENCE`` within the file rules).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import isfinite

from emulator.scenarios.model import AMOUNT_TOLERANCE, Attempt, Rule

Tiers = tuple[tuple[Rule, ...], tuple[Rule, ...]]  # a gateway's triggers, then payemu's generic rules
Filed = tuple[Tiers, tuple[int, ...]]  # the tiers of some rules, and their positions
_WHOLE_CENT = 1e-6  # an amount this close to whole cents is filed under them (see _cents)


def _cents(amount: float) -> int | None:
    """``amount`` in whole cents, None when it is not a whole number of cents (or below
    zero, which the schema refuses anyway): a rule's
    amount filed under ``c`` can only match an attempt whose amount rounds to ``c``
    (the two differ by at most ``AMOUNT_TOLERANCE``, far less than half a cent)."""
    scaled = amount * 100
    if not isfinite(scaled):
        return None
    cents = round(scaled)
    return cents if abs(scaled - cents) <= _WHOLE_CENT and cents >= 0 else None


if AMOUNT_TOLERANCE * 100 + _WHOLE_CENT >= 0.5:
    raise ImportError("ruleindex files amounts by whole cents: the tolerance must stay far below a cent")


class RuleIndex:
    """The rules of one gateway (in order; ``generic``: where payemu's generic ones start),
    filed by card number and amount (see the module doc)."""

    __slots__ = ("_by_amount", "_by_card", "_open", "generic", "rules")

    def __init__(self, rules: Sequence[Rule], generic: int) -> None:
        self.rules = tuple(rules)
        self.generic = generic
        unfiled: list[int] = []
        by_card: dict[str, list[int]] = {}
        by_amount: dict[int, list[int]] = {}
        for at, rule in enumerate(self.rules):
            match = rule.match
            cents = _cents(match.amount) if match.amount is not None else None
            if match.card_numbers is not None:
                for number in match.card_numbers:
                    by_card.setdefault(number, []).append(at)
            elif cents is not None:
                by_amount.setdefault(cents, []).append(at)
            else:
                unfiled.append(at)
        self._open = self._filed(unfiled, [])
        self._by_card = {number: self._filed(unfiled, kept) for number, kept in by_card.items()}
        self._by_amount = {cents: self._filed(unfiled, kept) for cents, kept in by_amount.items()}

    def _filed(self, unfiled: Sequence[int], kept: Sequence[int]) -> Filed:
        """The rules at ``unfiled`` and ``kept`` positions, in order: as tiers, and their positions."""
        positions = tuple(sorted({*unfiled, *kept}))
        return self._tiers(positions), positions

    def _tiers(self, positions: Sequence[int]) -> Tiers:
        rules, generic = self.rules, self.generic
        return (
            tuple(rules[at] for at in positions if at < generic),
            tuple(rules[at] for at in positions if at >= generic),
        )

    def candidates(self, attempt: Attempt) -> Tiers:
        """The rules ``attempt`` may match, in their order, split where the generic ones start."""
        by_card = self._by_card.get(attempt.card_digits) if self._by_card else None
        by_amount = self._by_amount.get(_cents_of(attempt.amount)) if self._by_amount else None
        if by_amount is None:
            return (by_card or self._open)[0]
        if by_card is None:
            return by_amount[0]
        # a listed card at a listed amount: the rules of both, in order
        return self._tiers(sorted({*by_card[1], *by_amount[1]}))


def _cents_of(amount: float) -> int:
    """An attempt's amount in cents, rounded (-1, which no rule is filed under, for one
    that is not finite)."""
    try:
        return round(amount * 100)
    except (OverflowError, ValueError):
        return -1
