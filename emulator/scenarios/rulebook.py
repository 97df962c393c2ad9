"""The scenario book: the loaded file rules, and the decision for one gateway attempt.

The order in which an attempt is decided is :data:`PRECEDENCE`, stated there once; the
first tier with an answer wins, and within a tier the first matching rule.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from emulator.domain.datafiles import data_path, gateway_files
from emulator.scenarios.loader import Problem, ScenarioError, expand_paths, load_groups, load_own
from emulator.scenarios.model import RUNTIME_SOURCE, Attempt, Rule, RuleOutcome
from emulator.scenarios.ruleindex import RuleIndex

if TYPE_CHECKING:
    from emulator.domain.config import Settings
    from emulator.scenarios.ruleset import RuleSet

# emulator/data/default-scenarios.yaml links to scenarios/default.yaml (as data/openapi.json
# links to schemas/openapi.json), so the built-in test cards ship inside the package.
BUILTIN = data_path("default-scenarios.yaml")

Signature = tuple[tuple[str, int, int], ...]


if TYPE_CHECKING:  # a type for the checker only (no class made at run time)

    class RuleHolder(Protocol):
        """A tenant, as the book sees it: the rules it added at run time (and its sequence counters)."""

        rules: RuleSet


# Who decides an attempt, first to last (docs/scenarios.md, "Precedence"). The gateway's
# own card checks (a mistyped number, an expired card) sit between the user's rules and
# the gateway's documented inputs: a documented card number skips only the Luhn check.
PRECEDENCE = (
    # a rule the user added: at run time (the control API), then the --scenarios files in order
    "user",
    # the gateway's documented answer for the input: first its check of the card against
    # the credential's mode (the simulator's ``mode`` outcome: a live key paying a test
    # card, a test key paying a real one), then the triggers of its catalog file
    "gateway",
    # the gateway's documented answer to what its sandbox does not list (the simulator's
    # ``documented`` outcome: a test account's `otherwise`)
    "sandbox",
    # payemu's generic test cards and amounts (scenarios/default.yaml), on every gateway
    "generic",
)  # and when none answers: the gateway's default (it approves, or a mock's `always`)

MAX_GATEWAYS_KEPT = 256  # gateways whose rule lists are kept (the catalog's, in practice)


class ScenarioBook:
    """File rules shared by every tenant; per-tenant state (runtime rules, sequence
    counters) lives on the tenant, so :meth:`reload` never loses it.

    The file rules are, in order: the user's files, each gateway's own triggers (its
    catalog file) and payemu's conventions (:data:`BUILTIN`). With the catalog's own
    gateway files (``gateways`` not given), a gateway's triggers are read when an attempt
    at that gateway first needs them (the test suite reads and checks them all); gateway
    files given are read, and refused on a problem, at once."""

    def __init__(
        self, paths: Sequence[str | Path] = (), builtin: Path | None = BUILTIN, gateways: Sequence[Path] | None = None
    ) -> None:
        self.paths = [Path(p) for p in paths]
        self.builtin = builtin
        # the catalog's gateway files, whose own triggers come after payemu's conventions
        self.on_demand = gateways is None and builtin is not None
        self.gateways = list(gateway_files() if self.on_demand else gateways or ())
        self._mine: tuple[Rule, ...] = ()  # the user's file rules
        # payemu's conventions the user's rules do not replace; with on_demand, read when first needed
        self._generic: tuple[Rule, ...] | None = ()
        # each gateway's triggers by its name casefolded; with on_demand, read when first needed
        self._triggers: dict[str, tuple[Rule, ...]] = {}
        self._unread: dict[str, list[Path]] = {}  # on_demand: the gateway files not read yet
        self._rules: tuple[Rule, ...] | None = None  # every file rule, in order (made when asked for)
        # the file rules that can match an attempt at one gateway, by (gateway, mock): a
        # rule naming another gateway never can (the built-in triggers name theirs);
        # indexed by card number and amount
        self._by_gateway: dict[tuple[str | None, bool], RuleIndex] = {}
        self._test_cards: dict[str, frozenset[str]] = {}
        self._builtin_sources: dict[str, bool] = {}  # a rule's source → whether it is the built-in file
        self._signature: Signature = ()
        self._load()

    @cached_property
    def builtin_paths(self) -> frozenset[Path]:
        """payemu's own files (its conventions, the gateways' triggers), resolved."""
        return frozenset(p.resolve() for p in [*self.gateways, *([self.builtin] if self.builtin else [])])

    @classmethod
    def load(cls, settings: Settings) -> ScenarioBook:
        """The book of ``settings.scenario_paths`` plus the built-in test cards; raises
        :class:`ScenarioError` (every problem as ``file:line: reason``) on a bad file."""
        return cls(settings.scenario_paths)

    @property
    def file_rules(self) -> tuple[Rule, ...]:
        """Every file rule, in order (every gateway's triggers read)."""
        if self._rules is None:
            for key in list(self._unread):
                self._read_triggers(key)
            triggers = (rule for rules in self._triggers.values() for rule in rules)
            self._rules = (*self._mine, *triggers, *self._generic_rules())
        return self._rules

    def counts(self) -> Counter[str]:
        """How many file rules each file of :meth:`files` holds (by its path as text); payemu's
        conventions file, not read yet and replaced in no rule, counted by its items."""
        counts = Counter(rule.source for rule in self._mine)
        if self._generic is None and not self._mine and self.builtin is not None:
            counts[str(self.builtin)] = builtin_count(self.builtin)
        else:
            counts.update(rule.source for rule in self._generic_rules())
        return counts

    def files(self) -> list[Path]:
        """Every file read, in rule order (the built-in file last)."""
        files = expand_paths(self.paths, [])
        return _with_builtin(files, self._builtin_for(files))

    def reload(self) -> int:
        """Re-read every file. On a problem raise :class:`ScenarioError` and keep the
        rules already loaded. Returns the number of file rules."""
        self._load()
        return len(self.file_rules)

    def _load(self) -> None:
        """:meth:`reload` (the gateways' triggers of ``on_demand`` read when needed)."""
        problems: list[Problem] = []
        files = expand_paths(self.paths, problems)
        builtin = self._builtin_for(files)
        # the files' stamps before they are read: a file written while it is read then
        # shows as changed at the next check (stamped after, that write was never seen)
        signature = _signature(_with_builtin(files, builtin))
        try:
            if self.on_demand:  # payemu's own files (the triggers, the conventions): read when needed
                mine, triggers, generic = load_groups(files)
            else:
                mine, triggers, generic = load_groups(files, builtin, self.gateways)
        except ScenarioError as exc:
            raise ScenarioError(problems + exc.details) from None
        if problems:
            raise ScenarioError(problems)
        self._mine = tuple(mine)
        self._generic = None if self.on_demand and builtin is not None else tuple(generic)
        self._triggers = {key: tuple(rules) for key, rules in triggers.items()}
        self._unread = {}
        if self.on_demand:
            for path in self.gateways:
                self._unread.setdefault(path.stem.casefold(), []).append(path)
        self._rules = None
        self._by_gateway = {}
        self._test_cards = {}
        self._signature = signature

    def _read_triggers(self, key: str) -> tuple[Rule, ...]:
        """The triggers of the gateway ``key`` (casefolded), read now if not yet."""
        found = self._triggers.get(key)
        if found is None:
            paths = self._unread.pop(key, None)
            if paths is None:
                return ()
            taken = {rule.name for rule in self._mine}
            found = tuple(rule for path in paths for rule in load_own(path, taken, path.stem))
            self._triggers[key] = found
        return found

    def _generic_rules(self) -> tuple[Rule, ...]:
        """payemu's conventions (the built-in file) the user's rules do not replace, read now if not yet."""
        found = self._generic
        if found is None:
            builtin = self.builtin
            taken = {rule.name for rule in self._mine}
            found = self._generic = tuple(load_own(builtin, taken)) if builtin is not None else ()
        return found

    def _gateway_rules(self, key: str) -> tuple[Rule, ...]:
        """The file rules that can match an attempt at the gateway ``key`` (casefolded), in order."""
        return tuple(
            rule
            for rule in (*self._mine, *self._read_triggers(key), *self._generic_rules())
            if rule.match.gateway in (None, key)
        )

    def is_builtin(self, rule: Rule) -> bool:
        """Whether ``rule`` is one of payemu's built-in test cards and amounts (not the user's)."""
        builtin = self.builtin
        if builtin is None or rule.source == RUNTIME_SOURCE:
            return False
        found = self._builtin_sources.get(rule.source)
        if found is None:
            found = self._builtin_sources[rule.source] = _same(Path(rule.source), builtin)
        return found

    def test_cards(self, gateway: str) -> frozenset[str]:
        """The card numbers the built-in rules name for ``gateway``: its own test cards and
        payemu's (made once per gateway and load)."""
        key = gateway.casefold()
        found = self._test_cards.get(key)
        if found is None:
            builtin = {str(path) for path in self.gateways}
            if self.builtin is not None:
                builtin.add(str(self.builtin))
            found = frozenset(
                number
                for rule in self._gateway_rules(key)
                if rule.match.card_numbers and str(rule.source) in builtin
                for number in rule.match.card_numbers
            )
            self._test_cards[key] = found
        return found

    def gateway_cards(self, gateway: str) -> frozenset[str]:
        """The card numbers ``gateway``'s own triggers name (its documented test cards)."""
        key = "#" + gateway.casefold()
        found = self._test_cards.get(key)
        if found is None:
            named = gateway.casefold()
            found = frozenset(
                number
                for rule in self._gateway_rules(named)
                if rule.match.card_numbers
                and rule.match.gateway == named
                and not self.is_builtin(rule)
                and rule.source != RUNTIME_SOURCE
                and Path(rule.source).resolve() in self.builtin_paths
                for number in rule.match.card_numbers
            )
            self._test_cards[key] = found
        return found

    def users_rule(self, tenant: RuleHolder, name: str) -> bool:
        """Whether the first of :meth:`rules` named ``name`` is the user's (added at run time
        or in a file of theirs), not one of payemu's own files; True when none is."""
        for rule in (*tenant.rules, *self._mine):
            if rule.name == name:
                return _resolved(rule.source) not in self.builtin_paths
        if any(rule.name == name for rules in (*self._triggers.values(), self._generic or ()) for rule in rules):
            return False  # a gateway's trigger or payemu's convention, wherever it stands in the order
        return not any(rule.name == name for rule in self.file_rules)

    def changed(self) -> bool:
        """Whether a file was changed, added to a directory or removed since the last load."""
        return _signature(self.files()) != self._signature

    def reload_if_changed(self) -> bool:
        """Reload when :meth:`changed`; True when it did (raises like :meth:`reload`)."""
        if not self.changed():
            return False
        self._load()
        return True

    def rules(self, tenant: RuleHolder) -> list[Rule]:
        """Every rule that applies to ``tenant``, in matching order."""
        return [*tenant.rules, *self.file_rules]

    def _file_rules(self, gateway: str | None, mock: bool) -> RuleIndex:
        """The file rules that may match an attempt at ``gateway`` (None: at any), in
        :data:`PRECEDENCE` order, indexed (:class:`RuleIndex`: where payemu's generic rules
        start, and by card number and amount)."""
        key = (gateway.casefold() if gateway is not None else None, mock)
        found = self._by_gateway.get(key)
        if found is None:
            if len(self._by_gateway) >= MAX_GATEWAYS_KEPT:
                self._by_gateway.clear()
            mine = self.file_rules if key[0] is None else self._gateway_rules(key[0])
            if mock:  # on a mock gateway: the user's rules, and the built-in ones naming it (or an account)
                mine = tuple(r for r in mine if r.match.names_gateway_or_account or not self.is_builtin(r))
            found = self._by_gateway[key] = RuleIndex(mine, self._generic_start(mine))
        return found

    def _generic_start(self, rules: tuple[Rule, ...]) -> int:
        return next((i for i, rule in enumerate(rules) if self.is_builtin(rule)), len(rules))

    def may_match(self, tenant: RuleHolder, mock: bool = False, gateway: str | None = None) -> bool:
        """Whether any rule could decide an attempt at ``gateway`` (False: :meth:`decide` is
        None whatever the attempt, so the caller need not describe it)."""
        return bool(self._file_rules(gateway, mock).rules) or len(tenant.rules) > 0

    def decide(
        self,
        tenant: RuleHolder,
        attempt: Attempt,
        mock: bool = False,
        documented: RuleOutcome | None = None,
        mode: RuleOutcome | None = None,
    ) -> RuleOutcome | None:
        """The outcome for ``attempt`` in :data:`PRECEDENCE` order, or None (the gateway's
        default): the first matching rule of the user's, then ``mode`` (the gateway's
        answer to a card of the other mode than its credential), then the first of the
        gateway's triggers, then ``documented`` (the gateway's documented answer to an
        input its sandbox does not list), then the first of payemu's generic rules. A rule the user added (at
        run time or in a file) applies at every gateway it does not exclude by naming
        another; with ``mock`` (NULLSuccess, NULLFailure: they ignore card and amount)
        the built-in rules do not, unless they name the gateway or an account. A
        ``sequence`` rule answers its i-th entry to its i-th matching call, counted per
        tenant and card number; the last entry repeats."""
        triggers, generic = self._file_rules(attempt.gateway, mock).candidates(attempt)
        found = self._first(tenant, tenant.rules, attempt) if tenant.rules else None
        if found is None:
            found = mode or self._first(tenant, triggers, attempt)
        if found is None:
            found = documented or self._first(tenant, generic, attempt)
        return found

    @staticmethod
    def _first(tenant: RuleHolder, rules: Iterable[Rule], attempt: Attempt) -> RuleOutcome | None:
        for rule in rules:
            if not rule.match.matches(attempt):
                continue
            if not rule.is_sequence:
                return rule.outcomes[0]
            return rule.outcome(tenant.rules.next_index(rule.name, attempt.card_digits))
        return None

    def _builtin_for(self, files: list[Path]) -> Path | None:
        """The built-in file, unless the user listed it (then it keeps their position)."""
        if self.builtin is None or any(_same(f, self.builtin) for f in files):
            return None
        return self.builtin


def _with_builtin(files: list[Path], builtin: Path | None) -> list[Path]:
    return files + ([builtin] if builtin else [])


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def builtin_count(path: Path) -> int:
    """How many rules payemu's conventions file holds, counted by the items of its
    ``scenarios`` list (each a line starting ``  - ``) without parsing it: what the banner
    says before the rules are first needed (a test checks the count against the rules)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return 0
    return sum(1 for line in text.splitlines() if line.startswith("  - "))


@lru_cache(maxsize=1024)
def _resolved(source: str) -> Path:
    return Path(source).resolve()


def _signature(files: list[Path]) -> Signature:
    entries = []
    for path in files:
        try:
            stat = path.stat()
            entries.append((str(path), stat.st_mtime_ns, stat.st_size))
        except OSError:
            entries.append((str(path), -1, -1))
    return tuple(entries)
