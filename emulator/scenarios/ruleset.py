"""A tenant's runtime scenario rules (added through the control API) and the counters
of its ``sequence`` rules."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from emulator.domain.budget import Budget
from emulator.scenarios.model import Rule

MAX_RUNTIME_RULES = 1000  # per tenant
MAX_SEQUENCES = 10_000  # sequence counters per tenant (limits.sequencesPerTenant); the oldest forgotten first
SequenceKey = tuple[str, str]  # (rule name, card digits or "*")


class RuleSet:
    """Runtime rules in matching order: each batch goes in front of the earlier ones,
    and a rule named like an earlier one replaces it (its sequence starts again)."""

    def __init__(
        self, limit: int = MAX_RUNTIME_RULES, sequence_limit: int = MAX_SEQUENCES, budget: Budget | None = None
    ) -> None:
        self._rules: list[Rule] = []
        self._sequences: dict[SequenceKey, int] = {}
        self.limit = limit
        self.sequence_limit = sequence_limit
        self.budget = budget  # the tenant's, in bytes (each rule's weight, set by the loader)
        self.bytes = 0

    def __iter__(self) -> Iterator[Rule]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def names(self) -> list[str]:
        return [rule.name for rule in self._rules]

    def add(self, rules: Iterable[Rule]) -> list[Rule]:
        """Put ``rules`` in front; ValueError when the tenant would hold more than
        :attr:`limit`. Returns the rules added."""
        added = list(rules)
        names = {rule.name for rule in added}
        kept = [rule for rule in self._rules if rule.name not in names]
        if len(kept) + len(added) > self.limit:
            raise ValueError(f"A tenant holds at most {self.limit} runtime rules.")
        weight = sum(rule.weight for rule in added) - sum(rule.weight for rule in self._rules if rule.name in names)
        budget = self.budget
        if budget is not None and weight > 0 and not budget.make_room(weight):
            raise budget.refusal("body", weight, "These rules")
        self._forget(names)
        self._rules = [*added, *kept]
        self._charge(weight)
        return added

    def _charge(self, weight: int) -> None:
        self.bytes += weight
        if self.budget is not None:
            self.budget.charge(weight)

    def remove(self, name: str) -> bool:
        """Remove the rule ``name``; False when there is none."""
        if name not in self.names():
            return False
        self._forget({name})
        self._charge(-sum(rule.weight for rule in self._rules if rule.name == name))
        self._rules = [rule for rule in self._rules if rule.name != name]
        return True

    def clear(self) -> list[str]:
        """Remove every rule; returns their names."""
        names = self.names()
        self._forget(set(names))
        self._charge(-self.bytes)
        self._rules = []
        return names

    def next_index(self, rule: str, card_digits: str) -> int:
        """How many calls matched the sequence rule ``rule`` with this card before (then
        counts this one). At :attr:`sequence_limit` counters the oldest is forgotten to make
        room (that card starts its sequence again)."""
        key = (rule, card_digits or "*")
        index = self._sequences.get(key, 0)
        if index == 0:
            while self._sequences and len(self._sequences) >= self.sequence_limit:
                del self._sequences[next(iter(self._sequences))]
        self._sequences[key] = index + 1
        return index

    @property
    def sequence_count(self) -> int:
        return len(self._sequences)

    @property
    def sequences(self) -> Mapping[SequenceKey, int]:
        return dict(self._sequences)

    def _forget(self, names: set[str]) -> None:
        """A replaced or removed rule's ``sequence`` starts again from its first entry."""
        for key in [k for k in self._sequences if k[0] in names]:
            del self._sequences[key]
