"""Tenants: one per API key, holding all of that key's state.

Handlers reach state only through the tenant of the request's key, so one key never sees
another's data. Each tenant has its own random source (under ``--seed`` derived from the
seed and the key), so its answers do not depend on what other tenants do."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import random
import secrets
import string
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from emulator.domain import errors
from emulator.domain.budget import Budget
from emulator.domain.clock import Clock
from emulator.domain.config import KeySpec, Settings
from emulator.scenarios.ruleset import RuleSet
from emulator.stores import ewallet_tokens as tokens
from emulator.stores.admission import room_maker
from emulator.stores.ewallet_sessions import Sessions
from emulator.stores.journal import Journal
from emulator.stores.tenant_settings import TenantSettings

if TYPE_CHECKING:
    from faker import Faker

    from emulator.stores.accounts import Accounts
    from emulator.stores.certificates import Certificates
    from emulator.stores.ledger import Ledger
    from emulator.stores.vault import Vault

ALPHANUMERIC = string.ascii_letters + string.digits
MAX_KEY_LENGTH = 256
Made = TypeVar("Made")


def secret_string(length: int, alphabet: str = ALPHANUMERIC) -> str:
    """``length`` characters of ``alphabet`` from the operating system's secure source."""
    # Bytes past the largest multiple of the alphabet's size are dropped, so every character
    # is equally likely. The OS is asked for POOL_BYTES at a time; each character is handed
    # out once, under a lock, and a forked child draws afresh.
    table = _byte_table(alphabet)
    if table is None or len(alphabet) > 256:
        base = len(alphabet)
        number = int.from_bytes(os.urandom(length + 8), "big")
        chars = []
        for _ in range(length):
            number, digit = divmod(number, base)
            chars.append(alphabet[digit])
        return "".join(chars)
    with _pool_lock:
        pool, at = _POOLS.get(alphabet, ("", 0))
        if at + length > len(pool):
            unused = bytes(range(256 - 256 % len(alphabet), 256))  # past the largest multiple
            pool, at = pool[at:], 0
            while len(pool) < length:
                pool += os.urandom(max(POOL_BYTES, 2 * length)).translate(table, unused).decode("ascii")
        _POOLS[alphabet] = (pool, at + length)
    return pool[at : at + length]


POOL_BYTES = 4096  # bytes secret_string draws from the OS at a time
_POOLS: dict[str, tuple[str, int]] = {}  # alphabet → (characters drawn, how many were handed out)
_pool_lock = threading.Lock()


def _forget_pools() -> None:
    """In a forked child: never hand out what the parent may hand out."""
    global _pool_lock
    _POOLS.clear()
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pools)


_TABLES: dict[str, bytes] = {}  # alphabet → its _byte_table, once made (read first: a dict is cheaper than a cache)


@functools.cache
def _byte_table(alphabet: str) -> bytes | None:
    """Byte → character ``b % len(alphabet)`` for :meth:`bytes.translate`; None if not ASCII."""
    if not alphabet.isascii() or not alphabet:
        return None
    table = _TABLES[alphabet] = bytes(ord(alphabet[b % len(alphabet)]) for b in range(256))
    return table


def shard_of(api_key: str) -> str:
    """The tenant's public shard id (first 16 hex digits of SHA-1 of the key), as HAProxy computes it."""
    return hashlib.sha1(api_key.encode("utf-8")).hexdigest()[:16]


def token_secret(api_key: str, seed: int | None) -> bytes:
    """The key that signs a tenant's eWallet tokens (derived from the seed under ``--seed``)."""
    if seed is None:
        return os.urandom(32)
    return hashlib.sha256(f"payemu/tokens/{seed}/{api_key}".encode()).digest()


class OnFirstUse(Generic[Made]):
    """An attribute that ``make`` sets on the instance when it is first read; from then on
    the instance's own attribute is found first. Neither reading it nor ``make`` touches the
    instance's ``__dict__``, which would slow every attribute of the instance."""

    def __init__(self, make: Callable[[Any], None]) -> None:
        self.make = make
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @staticmethod
    def forget(instance: object) -> None:
        """Drop what every such attribute of ``instance``'s class made, so its next read makes it afresh."""
        for name, value in vars(type(instance)).items():
            if isinstance(value, OnFirstUse):
                with contextlib.suppress(AttributeError):
                    delattr(instance, name)

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> OnFirstUse[Made]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> Made: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> OnFirstUse[Made] | Made:
        if instance is None:
            return self
        self.make(instance)
        made: Made = getattr(instance, self.name)
        return made


class Tenant:
    last_used: float  # hardening: monotonic time of the last request (for the registry's eviction)
    unsaved: str | None = None  # --state: why a save of it did not land (its requests then get a 503)

    def __init__(self, spec: KeySpec, settings: Settings, seed: int | None) -> None:
        self.key = spec.key
        self.user_name = spec.user_name
        self.account_id = spec.account_id
        self.is_sandbox = spec.is_sandbox
        self._spec = spec
        self._settings = settings
        self._seed = seed
        self.shard = shard_of(spec.key)
        self.token_secret = token_secret(spec.key, seed)  # kept across resets (and in --state)
        self.limits = settings.limits  # hardening
        self.last_used = time.monotonic()  # hardening
        # every store's bytes; the registry attaches it to the process's budget
        self.budget = Budget(settings.limits.tenant_bytes, "this API key", "memoryBytesPerTenant")
        self.reset()

    def reset(self) -> None:
        """Back to a fresh key's state; a seeded tenant then replays identically."""
        seeded = self._seed is not None
        # ids, references and fake data; tokens and keys come from the OS (secret_string)
        self.rng = random.Random(f"{self._seed}/{self.key}") if seeded else random.Random(secrets.randbits(128))
        # a seeded clock starts at --clock-start (a fixed date at which the gateways'
        # documented test cards are valid), the same for every key
        self.clock = Clock(self._settings.clock_start if seeded else None)
        bounds = self._settings.limits  # hardening: each store bounds itself (emulator.tenants.limits)
        budget = self.budget
        budget.clear()  # the stores below start empty
        self.journal = Journal(self._settings.journal_size, bounds.journal_bytes, budget)
        self.rules = RuleSet(sequence_limit=bounds.sequences, budget=budget)
        self.sessions = Sessions(bounds.sessions, budget)
        self.overrides = TenantSettings()  # its own strictness, success status, failover mode
        self._faker: Faker | None = None
        OnFirstUse.forget(self)  # the stores below are made afresh when next read

    def _make_stores(self) -> None:
        """The stores of payments, tokens and accounts, which a key's status check never
        reads (``payemu serve``'s first answer): made, and their modules imported, when one
        of them is first read; all of them at once, so that every tenant's attributes keep
        one order (an instance whose attributes come in another order loses Python's fast
        path to every one of them)."""
        from emulator.stores.accounts import Accounts
        from emulator.stores.certificates import Certificates
        from emulator.stores.ledger import Ledger
        from emulator.stores.vault import Vault

        bounds = self._settings.limits
        made = {
            "certificates": Certificates(self._spec.certificates, bounds.named, self.budget),
            "accounts": Accounts(bounds.named, self.budget),
            "vault": Vault(bounds.tokens, bounds.token_bytes, self.budget),
            "ledger": Ledger(bounds.transactions, bounds.tokens, self.budget, self.clock),
        }
        for name, store in made.items():
            setattr(self, name, store)

    certificates: OnFirstUse[Certificates] = OnFirstUse(_make_stores)
    accounts: OnFirstUse[Accounts] = OnFirstUse(_make_stores)
    vault: OnFirstUse[Vault] = OnFirstUse(_make_stores)
    ledger: OnFirstUse[Ledger] = OnFirstUse(_make_stores)

    @property
    def faker(self) -> Faker:
        if self._faker is None:
            from faker import Faker

            self._faker = Faker()
            self._faker.seed_instance(self.rng.getrandbits(64))
        return self._faker

    def random_id(self, length: int, alphabet: str = ALPHANUMERIC) -> str:
        """An identifier that need not be secret, from the tenant's (seedable) random source."""
        table = _TABLES.get(alphabet) or _byte_table(alphabet)
        if table is None:
            return "".join(self.rng.choices(alphabet, k=length))
        # what Random.randbytes does (so seeded runs are unchanged), one call less
        return self.rng.getrandbits(length * 8).to_bytes(length, "little").translate(table).decode("ascii")

    def random_string(self, length: int, alphabet: str = ALPHANUMERIC) -> str:
        """A token: from the OS's secure source, or the tenant's random source under ``--seed``."""
        if self._seed is not None:
            return self.random_id(length, alphabet)
        return secret_string(length, alphabet)

    def now(self) -> datetime:
        return self.clock.now()

    def sign_token(self, body: Mapping[str, Any]) -> str:
        return tokens.encode(body, self.shard, self.token_secret)

    def open_token(self, token: str) -> dict[str, Any] | None:
        return tokens.decode(token, self.token_secret)


class TenantRegistry:
    """API key → tenant: configured keys, keys made by ``create`` and, with ``any_key``, any key."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._tenants: dict[str, Tenant] = {}
        # every tenant's budget draws on this one (limits.memoryBytes)
        self.budget = Budget(settings.limits.memory_bytes, "payemu (every API key)", "memoryBytes")
        seeded = settings.seed is not None
        self._rng = random.Random(f"{settings.seed}/registry") if seeded else secrets.SystemRandom()  # hardening
        self._next_account = 20001
        for spec in settings.keys:
            self._add(spec)

    def _add(self, spec: KeySpec) -> Tenant:
        self._admit(spec)  # hardening: evicts an idle run-time tenant or raises a 507
        tenant = Tenant(spec, self.settings, self.settings.seed)
        tenant.budget.attach(self.budget)
        self._tenants[spec.key] = tenant
        return tenant

    def _admit(self, spec: KeySpec) -> None:
        """Make room for a run-time tenant (:mod:`emulator.stores.admission`), else a 507."""
        settings = self.settings
        declared = {declared.key for declared in settings.keys}
        if spec.key in declared:
            return
        limits = settings.limits
        created = [tenant for tenant in self._tenants.values() if tenant.key not in declared]
        if len(created) < limits.tenants:
            return
        leaving = room_maker(created, limits.tenant_idle_seconds)  # idle first, open authorizations last
        if leaving is None:
            raise errors.limit_reached(
                "X-Api-Key",
                f"payemu holds its limit of {limits.tenants} tenants created at run time and none has been idle "
                f"for {limits.tenant_idle_seconds:g} s (config: limits.tenants).",
            )
        oldest = leaving
        self.remove(oldest.key)
        oldest.sessions.clear()  # its payment pages close too (the session index checks this)

    def get(self, key: str | None) -> Tenant | None:
        if not key:
            return None
        tenant = self._tenants.get(key)
        if tenant is None and self.settings.any_key and not self.settings.any_key_admin_required:
            tenant = self.admit_key(key)
        if tenant is not None:
            tenant.last_used = time.monotonic()  # hardening
        return tenant

    def admit_key(self, key: str) -> Tenant | None:
        """``--any-key``: a new sandbox tenant for ``key``; the caller checked that it may."""
        if not self.settings.any_key or not _acceptable_key(key):
            return None
        return self._tenants.get(key) or self._add(self._spec(key, sandbox=True))

    def _new_key(self) -> str:
        if self.settings.seed is not None:
            return "test-" + "".join(self._rng.choices(ALPHANUMERIC, k=28))
        return "test-" + secret_string(28)

    def create(self, sandbox: bool = True, user_name: str | None = None, key: str | None = None) -> Tenant:
        """A fresh tenant under ``key`` (ValueError if taken) or a new random key."""
        if key is not None:
            if key in self._tenants:
                raise ValueError(f"the API key {key!r} is already in use")
            return self._add(self._spec(key, sandbox, user_name))
        key = self._new_key()
        while key in self._tenants:
            key = self._new_key()
        return self._add(self._spec(key, sandbox, user_name))

    def adopt(self, tenant: Tenant) -> None:
        """Hold a tenant restored by ``--state``, replacing any under its key."""
        self.remove(tenant.key)
        tenant.budget.attach(self.budget)
        self._tenants[tenant.key] = tenant
        self._next_account = max(self._next_account, tenant.account_id + 1)

    def remove(self, key: str) -> bool:
        tenant = self._tenants.pop(key, None)
        if tenant is None:
            return False
        tenant.budget.detach()  # what it held is no longer the process's
        return True

    def _spec(self, key: str, sandbox: bool, user_name: str | None = None) -> KeySpec:
        account_id = self._next_account
        self._next_account += 1
        name = user_name or f"{'sandbox' if sandbox else 'live'}-merchant-{account_id}"
        return KeySpec(key, name, account_id, sandbox)

    def __iter__(self) -> Iterator[Tenant]:
        return iter(list(self._tenants.values()))

    def __len__(self) -> int:
        return len(self._tenants)


def _acceptable_key(key: str) -> bool:
    return 0 < len(key) <= MAX_KEY_LENGTH and key.isprintable() and not key.isspace()
