from __future__ import annotations

from pathlib import Path

import pytest

from emulator.domain.config import ConfigError, Settings, load_config_file
from emulator.stores import vault
from emulator.stores.accounts import StoredAccount
from emulator.tenants.tenants import TenantRegistry
from tests.conftest import bare_tenant


def test_default_keys_are_separate_tenants() -> None:
    registry = TenantRegistry(Settings())
    sandbox, live = registry.get("sandbox-api-key"), registry.get("live-api-key")
    assert sandbox is not None
    assert live is not None
    assert sandbox is not live
    assert (sandbox.is_sandbox, live.is_sandbox) == (True, False)
    entry = vault.store(sandbox, "secret")
    assert entry.token not in live.vault
    assert registry.get("someone-else") is None
    assert registry.get("") is None


def test_seeded_tenants_do_not_depend_on_each_other() -> None:
    one = TenantRegistry(Settings(seed=7))
    two = TenantRegistry(Settings(seed=7))
    a1 = one.get("sandbox-api-key")
    assert a1 is not None
    other = one.get("live-api-key")
    assert other is not None
    other.random_string(500)  # another tenant's activity in between
    a2 = two.get("sandbox-api-key")
    assert a2 is not None
    assert a1.random_string(32) == a2.random_string(32)
    assert a1.now() == a2.now()
    assert a1.faker.name() == a2.faker.name()


def test_reset_replays_a_seeded_tenant() -> None:
    registry = TenantRegistry(Settings(seed=3))
    tenant = registry.get("sandbox-api-key")
    assert tenant is not None
    first = tenant.random_string(32)
    tenant.accounts.put(StoredAccount("main", "Stripe", [], tenant.now()))
    tenant.reset()
    assert tenant.accounts == {}
    assert tenant.random_string(32) == first


def test_created_tenants_are_fresh_and_unique() -> None:
    registry = TenantRegistry(Settings())
    keys = {registry.create().key for _ in range(50)}
    assert len(keys) == 50
    live = registry.create(sandbox=False)
    assert live.is_sandbox is False
    assert registry.get(live.key) is live


def test_any_key_refuses_unprintable_keys() -> None:
    registry = TenantRegistry(Settings(any_key=True))
    assert registry.get("job-1") is not None
    assert registry.get("bad\x00key") is None
    assert registry.get("k" * 300) is None


def test_config_file(tmp_path: Path) -> None:
    config = tmp_path / "payemu.yaml"
    config.write_text(
        "keys:\n"
        "  - {key: team-a, userName: alice, accountId: 501, isSandbox: true, certificates: [certA]}\n"
        "  - {key: team-b, isSandbox: false}\n"
        "seed: 11\nfailover: recoverable-only\njournalSize: 50\nscenarios: [rules.yaml]\n"
    )
    settings = load_config_file(config)
    assert [k.key for k in settings.keys] == ["team-a", "team-b"]
    assert settings.keys[0].certificates == ("certA",)
    assert (settings.seed, settings.failover, settings.journal_size) == (11, "recoverable-only", 50)
    assert settings.scenario_paths == [str(tmp_path / "rules.yaml")]
    tenant = TenantRegistry(settings).get("team-a")
    assert tenant is not None
    assert tenant.certificates.names() == ["certA"]
    assert tenant.user_name == "alice"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("failover: sometimes\n", "failover"),
        ("keys: []\n", "keys"),
        ("journalSize: 0\n", "journalSize"),
        ("colour: blue\n", "colour"),
        ("keys:\n  - {key: a}\n  - {key: a}\n", "twice"),
        ("keys: [\n", "cannot read"),
    ],
)
def test_config_errors_name_the_problem(tmp_path: Path, text: str, fragment: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config_file(config)
    assert str(config) in str(caught.value)
    assert fragment in str(caught.value)


# -- the seeded clock's start -----------------------------------------------------------------


def test_a_seeded_clock_starts_at_the_documented_date_for_every_key() -> None:
    from datetime import UTC, datetime, timedelta

    from emulator.domain.config import SEEDED_CLOCK_START

    registry = TenantRegistry(Settings(seed=5))
    first, second = registry.create(key="k-one"), registry.create(key="k-two")
    assert datetime(2026, 1, 1, tzinfo=UTC) == SEEDED_CLOCK_START
    assert first.now() == second.now() == SEEDED_CLOCK_START
    first.clock.advance(timedelta(days=3))
    first.reset()
    assert first.now() == SEEDED_CLOCK_START


def test_clock_start_comes_from_the_config_file(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    config = tmp_path / "payemu.yaml"
    config.write_text("seed: 1\nclockStart: 2027-06-15T08:30:00Z\n")
    settings = load_config_file(config)
    assert settings.clock_start == datetime(2027, 6, 15, 8, 30, tzinfo=UTC)
    assert TenantRegistry(settings).create(key="k-conf").now() == settings.clock_start
    config.write_text("clockStart: next tuesday\n")
    with pytest.raises(ConfigError, match="clockStart 'next tuesday': an ISO 8601 date"):
        load_config_file(config)


def test_the_payment_and_token_stores_are_made_together_on_first_use_and_afresh_after_a_reset() -> None:
    tenant, other = bare_tenant("a", certificates=["cert-1"]), bare_tenant("b")
    lazy = ("certificates", "accounts", "vault", "ledger")
    assert [name for name in lazy if name in tenant.__class__.__dict__] == list(lazy)
    assert "cert-1" in tenant.certificates  # the key's configured certificates are there
    token = vault.store(tenant, "a secret")
    assert tenant.vault[token.token].payload == "a secret"
    before = tenant.vault
    other.accounts  # noqa: B018
    # made in one order whichever is read first: the same attribute layout for every tenant
    assert [k for k in vars(tenant) if k in lazy] == [k for k in vars(other) if k in lazy] == list(lazy)
    tenant.reset()
    assert tenant.vault is not before
    assert len(tenant.vault) == 0
    assert tenant.ledger.clock is tenant.clock  # the reset's new clock
    assert "cert-1" in tenant.certificates
