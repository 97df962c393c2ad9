"""Stored Payment Gateway Accounts: named sets of gateway credentials, per tenant.

Credential keys are checked against the gateway catalog when stored; missing required
keys are accepted, as the real service stores them, and the payment then fails as the
gateway would."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from emulator.domain import budget as weights
from emulator.domain import errors
from emulator.domain.budget import Budget
from emulator.domain.didyoumean import closest
from emulator.domain.records import dataclass

log = logging.getLogger("payemu")

if TYPE_CHECKING:
    from emulator.catalog.catalog import Catalog, GatewaySpec

MAX_ACCOUNTS = 1000  # per tenant by default (config: limits.namedItemsPerTenant)

_NOTED: set[str] = set()  # the listed gateways the log has named


def note_listed(gateway: GatewaySpec) -> None:
    """Say once per gateway, in the log, that an account uses a gateway payemu knows only by name."""
    if gateway.listed and gateway.name not in _NOTED:
        _NOTED.add(gateway.name)
        log.warning(
            "payemu knows only the name of %s (level listed): any credential names are accepted and its "
            "outcomes are payemu's generic sandbox, not the gateway's",
            gateway.name,
        )


@dataclass(frozen=True)
class StoredAccount:
    """One stored account; credentials in the given order, keys in the gateway's spelling."""

    name: str
    gateway: str
    credentials: list[tuple[str, str | None]]
    creation_time: datetime

    def credential_map(self) -> dict[str, str | None]:
        return dict(self.credentials)

    def weight(self) -> int:
        """The bytes it holds (:mod:`emulator.domain.budget`): its name and credential values
        as Python holds them, plus fixed parts; key and gateway names are the catalog's."""
        values = sum(weights.CREDENTIAL + weights.text(value) for _, value in self.credentials)
        return weights.ACCOUNT + weights.text(self.name) + values


class Accounts(Mapping[str, StoredAccount]):
    """A tenant's stored accounts, at most ``limit``, each charged to ``budget`` by weight."""

    def __init__(self, limit: int = MAX_ACCOUNTS, budget: Budget | None = None) -> None:
        self._accounts: dict[str, StoredAccount] = {}
        self.limit = limit
        self.budget = budget or weights.unlimited()

    def __getitem__(self, name: str) -> StoredAccount:
        return self._accounts[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._accounts)

    def __len__(self) -> int:
        return len(self._accounts)

    def admit(self, name: str) -> None:
        """A 507 when a new account ``name`` would pass :attr:`limit` (replacing one is fine)."""
        if name not in self._accounts and len(self._accounts) >= self.limit:
            raise errors.limit_reached(
                "name", f"This API key holds its limit of {self.limit} stored gateway accounts; remove some first."
            )

    def put(self, account: StoredAccount) -> None:
        """Keep ``account`` (replacing one of its name); a 507 when its weight does not fit
        the budgets once journal entries and finished transactions made what room they can."""
        replaced = self._accounts.get(account.name)
        weight = account.weight() - (replaced.weight() if replaced is not None else 0)
        if weight > 0 and not self.budget.make_room(weight):
            raise self.budget.refusal("credentials", weight, "This stored gateway account")
        self._accounts[account.name] = account
        self.budget.charge(weight)

    def require(self, name: str, field: str = "name") -> StoredAccount:
        account = self._accounts.get(name)
        if account is None:
            raise errors.not_found(field, f"No payment gateway account named {name}.")
        return account

    def listing(self) -> list[StoredAccount]:
        return sorted(self._accounts.values(), key=lambda account: account.name)

    def delete(self, name: str) -> bool:
        gone = self._accounts.pop(name, None)
        if gone is None:
            return False
        self.budget.release(gone.weight())
        return True


def resolve_gateway(catalog: Catalog, name: str | None, field: str = "paymentGatewayName") -> GatewaySpec:
    """The catalog entry named ``name`` (any case), or a 400 listing the gateways."""
    gateway = catalog.get(name)
    if gateway is None:
        # the whole catalog (~100 names) would not fit an error message: the closest name, and where the list is
        near = closest(str(name or "").lower(), [known.lower() for known in catalog.names()])
        hint = f" Did you mean {catalog[near].name}?" if near else ""
        raise errors.invalid(
            field,
            f"Unknown payment gateway '{name}'.{hint} GET /PaymentGateway lists the {len(catalog)} known gateways.",
        )
    return gateway


@lru_cache(maxsize=256)
def _accepted(names: tuple[str, ...]) -> dict[str, str]:
    return {name.lower(): name for name in names}


def _listing(gateway: GatewaySpec) -> str:
    if gateway.listed:
        return f"{gateway.name} takes any credential names (payemu knows only its name)."
    if gateway.accepted_credentials:
        return f"{gateway.name} accepts: {', '.join(gateway.accepted_credentials)}."
    return f"{gateway.name} takes no credentials."


def check_credentials(
    gateway: GatewaySpec, entries: Sequence[Mapping[str, Any]], field: str = "credentials"
) -> list[tuple[str, str | None]]:
    """The credentials as ``(canonical key, value)`` pairs; each problem a 400 on ``field[i].key``.
    A gateway known only by name (level listed) takes any key, as given."""
    if gateway.listed:
        note_listed(gateway)
    if not entries:
        return []
    accepted = _accepted(gateway.accepted_credentials)
    pairs: list[tuple[str, str | None]] = []
    seen: set[str] = set()
    problems: list[errors.FieldErrors] = []
    for index, entry in enumerate(entries):
        key = entry.get("key")
        if not key:
            problems.append((f"{field}[{index}].key", [f"The Key field is required. {_listing(gateway)}"]))
            continue
        canonical = accepted.get(key.lower()) or (key if gateway.listed else None)
        if canonical is None:
            message = f"'{key}' is not a credential of {gateway.name}. {_listing(gateway)}"
            problems.append((f"{field}[{index}].key", [message]))
            continue
        if canonical in seen:
            message = f"The credential '{canonical}' is given more than once."
            problems.append((f"{field}[{index}].key", [message]))
            continue
        seen.add(canonical)
        pairs.append((canonical, entry.get("value")))
    if problems:
        raise errors.invalid_many(problems)
    return pairs


if TYPE_CHECKING:  # a type for the checker only (no class made at run time)

    class AccountStoreHolder(Protocol):
        accounts: Accounts

        def now(self) -> datetime: ...


def put(tenant: AccountStoreHolder, catalog: Catalog, name: str, body: dict[str, Any]) -> StoredAccount:
    """Create or replace the account ``name``; a replacement gets a new ``creationTime``."""
    gateway = resolve_gateway(catalog, body.get("paymentGatewayName"))
    credentials = check_credentials(gateway, body.get("credentials") or [])
    tenant.accounts.admit(name)  # hardening: 507 at the limit
    account = StoredAccount(name, gateway.name, credentials, tenant.now())
    tenant.accounts.put(account)
    return account
