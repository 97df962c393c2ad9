"""Memory budgets in bytes (emulator.domain.budget): what each stored thing weighs, and
what the stores do at a tenant's budget and at the process's. Hostile sizes:
a 512 KB ``myRef``, card number or ``paymentNote``, 16 KB tokens across many keys, rules
whose YAML aliases expand a long string."""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.domain import budget as weights
from emulator.domain.budget import Budget
from emulator.domain.config import Limits
from emulator.domain.errors import ApiError
from emulator.domain.model import Money, OperationResult
from emulator.domain.vocabulary import Operation, RejectReason, ResultCode
from emulator.scenarios.loader import MAX_YAML_CHARS, ScenarioError, parse_rules
from emulator.stores import ewallet_sessions as sessions
from emulator.stores import ledger, recording, vault
from emulator.stores.accounts import StoredAccount
from emulator.stores.transaction import weight_of_texts
from emulator.tenants.tenants import Tenant
from tests.api.test_payments import charge_body, store_accounts
from tests.conftest import SANDBOX, bare_tenant, setup_ewallet_tenant, tenant_of
from tests.stores.test_ewallet_sessions import BODY as SESSION_BODY
from tests.stores.test_ledger import add

MIB = 1024 * 1024
CREDENTIAL_KEYS = ("UserId", "UserApiKey", "DeveloperId")  # Zeamster's
BIG = 512 * 1024  # the hostile field size
_references = itertools.count(1)


def record(who: Tenant, operation: str = "Charge", code: str = "Success", **fields: Any) -> ledger.Transaction:
    result = OperationResult(
        Operation(operation),
        ResultCode(code),
        Money.of(10.0, "USD"),
        None,
        gateway_name="Stripe",
        gateway_reference=f"big{next(_references)}",
        reject_reason=RejectReason.CARD_DECLINED if code == "Rejected" else None,
    )
    recording.record(
        who,
        result,
        account="main",
        card_number=fields.get("card_number", "4111111111111111"),
        my_ref=fields.get("my_ref", "order"),
        authorization_days=7,
    )
    return who.ledger[str(result.gateway_reference)]


def held(who: Tenant) -> int:
    """The weights the tenant's stores hold, added up from the stores themselves."""
    return (
        who.ledger.bytes
        + sum(weights.STRING_TOKEN + weights.text(who.vault[t].payload) for t in who.vault)
        + sum(session.weight for session in who.sessions.values())
        + who.rules.bytes
        + who.journal.bytes
        + sum(who.accounts[name].weight() for name in who.accounts)
    )


# -- the budget itself ---------------------------------------------------------------------
def test_a_tenant_budget_draws_on_the_process_budget_and_gives_back_when_detached() -> None:
    process = Budget(1000, "process", "memoryBytes")
    one, two = Budget(600, "one", "memoryBytesPerTenant"), Budget(600, "two", "memoryBytesPerTenant", process)
    one.charge(100)
    one.attach(process)  # what it held comes along
    two.charge(500)
    assert (process.used, one.used, two.used) == (600, 100, 500)
    assert one.fits(400) and not one.fits(401)  # the process's budget is the tighter one
    assert two.need(200) == 100
    one.detach()
    assert process.used == 500 and one.parent is None


def test_a_budget_that_draws_on_one_that_draws_on_another_charges_all_three() -> None:
    top = Budget(1000, "top", "memoryBytes")
    middle = Budget(800, "middle", "memoryBytes")
    bottom = Budget(600, "bottom", "memoryBytes", middle)
    middle.attach(top)  # after its child: the child's chain grows too
    bottom.charge(100)
    assert (top.used, middle.used, bottom.used) == (100, 100, 100)
    assert list(bottom.chain()) == [bottom, middle, top]
    top.charge(850)
    assert not bottom.fits(100)  # the top's budget is the full one
    assert bottom.fits(50)
    middle.detach()  # the top is no longer in the chain: what the two held goes from it
    assert list(bottom.chain()) == [bottom, middle]
    assert top.used == 850
    assert bottom.fits(500)
    bottom.release(100)
    assert (top.used, middle.used, bottom.used) == (850, 0, 0)


def test_refusal_names_the_full_budget_and_its_config_key() -> None:
    process = Budget(1000, "payemu (every API key)", "memoryBytes")
    tenant = Budget(5000, "this API key", "memoryBytesPerTenant", process)
    tenant.charge(900)
    refusal = tenant.refusal("payload", 200, "This string token")
    assert refusal.status == 507
    assert "limits.memoryBytes" in str(refusal.body) and "900 of its 1000 bytes" in str(refusal.body)


class _Nothing:
    """A store with nothing it may drop, counting how often it is asked."""

    def __init__(self) -> None:
        self.asked = 0

    def shed(self, nbytes: int) -> int:
        self.asked += 1
        return 0


def test_a_search_that_freed_nothing_is_not_repeated_on_every_request() -> None:
    """Full of what may not go (open authorizations), a budget answers 507 at once rather
    than searching every store again for each request."""
    budget = Budget(100, "tenant", "memoryBytesPerTenant")
    store = _Nothing()
    budget.sheddable(store, rank=1)
    budget.charge(100)
    assert not budget.make_room(10)
    assert not budget.make_room(10)
    assert store.asked == 1


class _Items:
    """A store of equal items charged to ``budget``, dropping the oldest when asked."""

    def __init__(self, budget: Budget, count: int, size: int) -> None:
        self.budget, self.left, self.size = budget, count, size
        budget.charge(count * size)
        budget.sheddable(self, rank=1)

    def shed(self, nbytes: int) -> int:
        dropped = min(self.left, -(-nbytes // self.size))
        self.left -= dropped
        self.budget.release(dropped * self.size)
        return dropped * self.size


def test_the_process_budget_frees_a_slice_per_request_and_searches_once_a_mib(monkeypatch: Any) -> None:
    """At the process's budget one request frees about SHED_SLICE (a MiB at once held the
    event loop for 1.5 ms), and the order a search found serves until a MiB has gone by it:
    the tenants are not sorted again for every slice. The largest tenant still goes first."""
    process = Budget(7 * MIB, "the process", "memoryBytes")
    tenants = [Budget(weights.UNLIMITED, f"tenant {n}", "memoryBytesPerTenant", process) for n in range(4)]
    stores = [_Items(tenant, count, 1000) for tenant, count in zip(tenants, (4000, 2000, 1000, 0), strict=True)]
    process.charge(process.limit - process.used)  # full to the byte (what the four do not hold)
    searches: list[int] = []
    plan = weights._BudgetPlan.__init__

    def counted(self: Any, order: list[Budget]) -> None:
        searches.append(len(order))
        plan(self, order)

    monkeypatch.setattr(weights._BudgetPlan, "__init__", counted)
    monkeypatch.setattr(weights, "BARREN_SECONDS", 3600.0)  # one search of the journals' rank, however slow the run
    freed = []
    for _ in range(1100):  # 2.2 MB of new items
        before = process.used
        assert tenants[3].make_room(2000)
        freed.append(before - process.used)
        tenants[3].charge(2000)
    assert process.used <= process.limit
    assert max(freed) <= weights.SHED_SLICE + 2000, max(freed)
    assert sum(freed) >= 1100 * 2000 - weights.SHED_SLICE
    assert len(searches) == 1 + 3 and set(searches) == {4}  # the journals' rank once (empty), then one per MiB
    # the first two MiB from tenant 0; then tenant 1 was the largest at the third search
    assert 4000 - stores[0].left >= 2 * weights.SHED_AT_LEAST // 1000
    assert stores[0].left * 1000 < 2 * MIB and stores[1].left < 2000 and stores[2].left == 1000


def test_weights_are_at_least_what_the_items_hold() -> None:
    """The fixed overheads are measured with tracemalloc (allocations, not time): a
    weight never says less than what an item really holds."""
    who = bare_tenant(transactions=50_000, tokens=50_000, named=50_000)
    for _ in range(50):
        add(who, "Charge")  # the dicts have grown past their first sizes
    kinds: dict[str, Callable[[int], object]] = {
        "transaction": lambda n: add(who, "Charge", my_ref=f"order-{n}"),
        "string token": lambda n: vault.store(who, f"payload-{n}"),
        "gateway token": lambda n: recording.remember_token(who, f"tok{n:029d}", "Stripe", "main", "4111111111111111"),
        "stored account": lambda n: who.accounts.put(
            StoredAccount(f"account-{n}", "Zeamster", [(k, f"{k}-{n}") for k in CREDENTIAL_KEYS], who.now())
        ),
        "certificate": lambda n: who.certificates.register(f"client-certificate-{n}"),
    }
    for kind, make in kinds.items():
        tracemalloc.start()
        before, charged = tracemalloc.get_traced_memory()[0], who.budget.used
        for n in range(2000):
            make(n)
        real = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert who.budget.used - charged >= real, kind


# -- transactions ----------------------------------------------------------------------------
def test_big_my_refs_evict_the_oldest_finished_transactions_at_the_tenant_budget() -> None:
    who = bare_tenant(tenant_bytes=4 * MIB)
    made = [record(who, my_ref="r" * BIG) for _ in range(20)]
    assert who.budget.used <= 4 * MIB
    assert who.budget.used == held(who)
    assert 5 <= len(who.ledger) < 8  # 4 MiB of 512 KB references
    assert list(who.ledger)[-1] == made[-1].reference  # the newest kept, the oldest dropped
    assert made[0].reference not in who.ledger


def test_declines_with_a_huge_card_number_are_weighed_and_bounded() -> None:
    who = bare_tenant(tenant_bytes=2 * MIB)
    for _ in range(30):
        record(who, code="Rejected", card_number="4" * BIG)
    assert who.budget.used <= 2 * MIB
    assert who.ledger.bytes >= len(who.ledger) * BIG


def test_open_authorizations_that_fill_the_budget_are_a_507_and_nothing_is_dropped() -> None:
    who = bare_tenant(tenant_bytes=2 * MIB)
    kept = []
    with pytest.raises(ApiError) as raised:
        for _ in range(10):
            kept.append(record(who, "PreAuth", my_ref="r" * BIG))
    assert raised.value.status == 507
    assert "limits.memoryBytesPerTenant" in str(raised.value.body)
    assert [tx.reference for tx in kept] == list(who.ledger)
    assert who.budget.used <= 2 * MIB


def test_journal_entries_go_before_any_transaction() -> None:
    who = bare_tenant(tenant_bytes=1 * MIB)
    for n in range(8):
        who.journal.record(tuple([None] * 13), weight=100_000 + n)
    charge = record(who, my_ref="r" * (300 * 1024))
    assert charge.reference in who.ledger
    assert len(who.journal) < 8 and who.journal.dropped > 0
    assert who.budget.used == held(who) <= 1 * MIB


# -- the process's budget across tenants ----------------------------------------------------
def test_tokens_across_many_keys_stop_at_the_process_budget_with_a_507(make_app: Callable[..., Starlette]) -> None:
    app = make_app(any_key=True, limits=Limits(memory_bytes=3 * MIB))
    payload = "p" * 16 * 1024
    refused = None
    with TestClient(app) as client:
        for key_number, _ in itertools.product(range(40), range(16)):
            answer = client.post(
                "/StringTokens", json={"payload": payload}, headers={"X-Api-Key": f"flood-{key_number}"}
            )
            if answer.status_code != 201:
                refused = answer
                break
    assert refused is not None and refused.status_code == 507
    assert "limits.memoryBytes" in refused.text
    registry = app.state.runtime.tenants
    assert registry.budget.used <= 3 * MIB
    assert registry.budget.used == sum(tenant.budget.used for tenant in registry)
    assert sum(len(tenant.vault) for tenant in registry) >= 150  # about 3 MiB of 16 KB tokens


def test_a_removed_tenant_gives_its_bytes_back_to_the_process() -> None:
    from emulator.domain.config import KeySpec, Settings
    from emulator.tenants.tenants import TenantRegistry

    registry = TenantRegistry(Settings(any_key=True))
    tenant = registry.get("someone")
    assert tenant is not None
    vault.store(tenant, "x" * 10_000)
    assert registry.budget.used >= 10_000
    registry.remove("someone")
    assert registry.budget.used == sum(t.budget.used for t in registry)
    declared = registry.get(Settings().keys[0].key)
    assert isinstance(declared, Tenant) and isinstance(Settings().keys[0], KeySpec)


def test_a_reset_gives_the_bytes_back(client: TestClient, app: Starlette) -> None:
    tenant = tenant_of(app)
    for _ in range(5):
        vault.store(tenant, "x" * 10_000)
    registry = app.state.runtime.tenants
    before = registry.budget.used
    answer = client.post("/_emulator/reset")
    assert answer.status_code == 200, answer.text
    assert tenant_of(app).budget.used < 50_000
    assert registry.budget.used < before - 50_000 + 1
    assert registry.budget.used == sum(t.budget.used for t in registry)


def test_another_tenants_journal_makes_room_at_the_process_budget() -> None:
    from emulator.domain.config import Settings
    from emulator.tenants.tenants import TenantRegistry

    registry = TenantRegistry(Settings(any_key=True, limits=Limits(memory_bytes=2 * MIB)))
    noisy, quiet = registry.get("noisy"), registry.get("quiet")
    assert noisy is not None and quiet is not None
    for _ in range(18):
        noisy.journal.record(tuple([None] * 13), weight=100_000)
    vault.store(quiet, "q" * 16 * 1024)
    for _ in range(20):
        vault.store(quiet, "q" * 16 * 1024)  # fits once noisy's oldest entries are gone
    assert len(quiet.vault) == 21
    assert registry.budget.used <= 2 * MIB
    assert noisy.journal.dropped > 0


def test_another_tenants_finished_transactions_make_room_but_never_its_open_ones() -> None:
    from emulator.domain.config import Settings
    from emulator.tenants.tenants import TenantRegistry

    registry = TenantRegistry(Settings(any_key=True, limits=Limits(memory_bytes=4 * MIB)))
    old, held_open, new = registry.get("old"), registry.get("open"), registry.get("new")
    assert old is not None and held_open is not None and new is not None
    authorizations = [record(held_open, "PreAuth", my_ref="a" * BIG) for _ in range(3)]
    finished = [record(old, my_ref="f" * BIG) for _ in range(4)]
    made = [record(new, my_ref="n" * BIG) for _ in range(3)]  # no 507: old's finished charges go
    assert registry.budget.used <= 4 * MIB
    assert made[-1].reference in new.ledger  # (the largest tenant's oldest go first: old's, then anyone's)
    assert all(tx.reference in held_open.ledger for tx in authorizations)
    assert finished[0].reference not in old.ledger
    with pytest.raises(ApiError) as raised:  # every finished one gone, open authorizations fill it
        for _ in range(8):
            record(held_open, "PreAuth", my_ref="a" * BIG)
    assert raised.value.status == 507
    assert registry.budget.used == sum(tenant.budget.used for tenant in registry) <= 4 * MIB


# -- over HTTP -----------------------------------------------------------------------------
def test_charges_with_a_512_kb_my_ref_stay_within_the_budget(make_app: Callable[..., Starlette]) -> None:
    app = make_app(limits=Limits(tenant_bytes=6 * MIB))
    with TestClient(app, headers=SANDBOX) as client:
        store_accounts(client)
        answers = [client.post("/PaymentGateway/charge", json=charge_body(myRef=f"{n}" + "m" * BIG)) for n in range(16)]
        assert [answer.status_code for answer in answers] == [200] * 16, answers[-1].text
    tenant = tenant_of(app)
    newest = tenant.ledger[answers[-1].json()["gatewayReference"]]
    assert newest.my_ref is not None and newest.my_ref.startswith("15m")
    assert tenant.budget.used == held(tenant) <= 6 * MIB
    assert len(tenant.ledger) < 16


def test_sessions_with_a_512_kb_payment_note_evict_the_oldest(make_app: Callable[..., Starlette]) -> None:
    app = make_app(limits=Limits(tenant_bytes=3 * MIB))
    tenant = tenant_of(app)
    setup_ewallet_tenant(tenant)
    made = [sessions.create(tenant, {**SESSION_BODY, "paymentNote": f"{n}" + "n" * BIG}) for n in range(12)]
    assert tenant.budget.used == held(tenant) <= 3 * MIB
    assert made[-1].token in tenant.sessions and made[0].token not in tenant.sessions
    assert all(session.weight > BIG for session in tenant.sessions.values())


def test_a_session_larger_than_the_budget_is_a_507_and_keeps_the_others() -> None:
    who = bare_tenant(tenant_bytes=256 * 1024)
    setup_ewallet_tenant(who)
    small = sessions.create(who, SESSION_BODY)
    with pytest.raises(ApiError) as raised:
        sessions.create(who, {**SESSION_BODY, "paymentNote": "n" * BIG})
    assert raised.value.status == 507
    assert list(who.sessions) == [small.token]


# -- runtime rules -------------------------------------------------------------------------
def test_an_alias_bomb_of_long_strings_is_refused_before_it_is_built() -> None:
    aliases = ", ".join(["*o"] * 999)
    text = _alias_rule("bomb") + "".join(f"- name: b{n}\n  sequence: [{aliases}]\n" for n in range(9))
    with pytest.raises(ScenarioError) as raised:
        parse_rules(text, "runtime")
    assert f"over {MAX_YAML_CHARS} characters" in str(raised.value)


def _alias_rule(name: str) -> str:
    """A rule of 1,000 outcomes, each an alias of one with a 500-character description:
    under 1 KB of YAML, over 500 KB once expanded (what listing it renders)."""
    outcome = "{operationResultCode: Rejected, gatewayResultDescription: '%s'}" % ("y" * 500)
    return f"- name: {name}\n  sequence: [&o {outcome}, {', '.join(['*o'] * 999)}]\n"


def test_rules_weigh_their_expanded_yaml_and_stop_at_the_budget(make_app: Callable[..., Starlette]) -> None:
    app = make_app(limits=Limits(tenant_bytes=4 * MIB))
    tenant = tenant_of(app)
    with TestClient(app, headers={**SANDBOX, "Content-Type": "application/yaml"}) as client:
        answers = [client.post("/_emulator/scenarios", content=_alias_rule(f"r{n}")) for n in range(12)]
    statuses = [answer.status_code for answer in answers]
    assert statuses[0] == 201, answers[0].text
    assert 507 in statuses
    assert "limits.memoryBytesPerTenant" in answers[statuses.index(507)].text
    kept = list(tenant.rules)
    assert 3 <= len(kept) < 12
    assert all(rule.weight >= 500 * 1000 for rule in kept)
    assert tenant.budget.used == held(tenant) <= 4 * MIB
    removed = tenant.rules.clear()
    assert len(removed) == len(kept) and tenant.rules.bytes == 0


def test_the_budgets_are_set_in_the_config_file(tmp_path: Path) -> None:
    from emulator.domain.config import ConfigError, Settings, load_config_file
    from emulator.tenants.tenants import TenantRegistry

    config = tmp_path / "payemu.yaml"
    config.write_text("limits:\n  memoryBytes: 33554432\n  memoryBytesPerTenant: 1048576\n")
    settings = load_config_file(str(config), Settings())
    registry = TenantRegistry(settings)
    tenant = next(iter(registry))
    assert (registry.budget.limit, tenant.budget.limit) == (32 * MIB, 1 * MIB)
    assert tenant.budget.parent is registry.budget
    config.write_text("limits:\n  memoryBytes: 0\n")
    with pytest.raises(ConfigError):
        load_config_file(str(config), Settings())


@pytest.mark.parametrize(
    "texts",
    [("ref-1", None, None, None), ("ref-2", "4111111111111111", "A1B2C3", "order-7"), ("é" * 40, "", None, "ü")],
)
def test_a_transactions_texts_weigh_what_budget_text_says(texts: tuple[Any, ...]) -> None:
    """transaction.weight_of_texts spells budget.text() out (a charge weighs its
    transaction): it must say what budget.text() says of each string."""
    assert weight_of_texts(*texts) == weights.TRANSACTION + sum(weights.text(text) for text in texts)
