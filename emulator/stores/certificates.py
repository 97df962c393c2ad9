"""Client certificate names, per tenant: the real service takes certificates through its
portal, payemu keeps only the names, and a request naming an unregistered one is refused."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from emulator.domain import budget as weights
from emulator.domain import errors
from emulator.domain.budget import Budget

MAX_NAME = 128
MAX_CERTIFICATES = 1000  # per tenant by default (config: limits.namedItemsPerTenant)


def _weight(name: str) -> int:
    return weights.CERTIFICATE + weights.text(name)


class Certificates:
    """A tenant's certificate names, at most ``limit``; those registered at run time are
    charged to ``budget`` (the configured ones are part of the configuration)."""

    def __init__(self, names: Iterable[str] = (), limit: int = MAX_CERTIFICATES, budget: Budget | None = None) -> None:
        self._names: set[str] = set(names)
        self._configured = frozenset(self._names)
        self.limit = limit
        self.budget = budget or weights.unlimited()

    def register(self, name: str) -> bool:
        """Register ``name`` (1 to 128 printable characters); False when it was already there."""
        if name not in self._names and len(self._names) >= self.limit:
            raise errors.limit_reached(
                "name", f"This API key holds its limit of {self.limit} client certificates; remove some first."
            )
        if not name or len(name) > MAX_NAME or not name.isprintable():
            raise ValueError(f"A certificate name is 1 to {MAX_NAME} printable characters.")
        if name in self._names:
            return False
        weight = 0 if name in self._configured else _weight(name)
        if weight and not self.budget.make_room(weight):
            raise self.budget.refusal("name", weight, "This client certificate")
        self._names.add(name)
        self.budget.charge(weight)
        return True

    def remove(self, name: str) -> bool:
        if name not in self._names:
            return False
        self._names.discard(name)
        if name not in self._configured:
            self.budget.release(_weight(name))
        return True

    def names(self) -> list[str]:
        return sorted(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._names)

    def require(self, name: str | None, field: str) -> None:
        if not name:
            raise errors.invalid(field, "A client certificate name is required here.")
        if name not in self._names:
            raise errors.invalid(
                field,
                f"Unknown client certificate '{name}'. Register it with POST /_emulator/certificates "
                "or in the config file.",
            )


if TYPE_CHECKING:  # a type for the checker only (no class made at run time)

    class CertificateStoreHolder(Protocol):
        certificates: Certificates


def names(tenant: CertificateStoreHolder) -> list[str]:
    return tenant.certificates.names()


def is_registered(tenant: CertificateStoreHolder, name: str | None) -> bool:
    return bool(name) and name in tenant.certificates


def require_certificate(tenant: CertificateStoreHolder, name: str | None, field: str) -> None:
    """Refuse ``name`` with a 400 on ``field`` unless the tenant registered it."""
    tenant.certificates.require(name, field)
