"""Client certificate names, per tenant.

The real service takes client certificates through its web portal; a request then names
one in ``certificateName`` (or ``paymentGatewayCertName`` / ``fallbackUpgs[i]...``).
payemu keeps only the names (a tenant's :class:`Certificates`): the config file lists
them per key (``certificates:``) and the control API registers more. A request naming an
unregistered certificate is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from emulator import errors

MAX_NAME = 128
MAX_CERTIFICATES = 1000  # per tenant by default (config: limits.namedItemsPerTenant)


class Certificates:
    """The certificate names a tenant registered, at most :attr:`limit` of them."""

    def __init__(self, names: Iterable[str] = (), limit: int = MAX_CERTIFICATES) -> None:
        self._names: set[str] = set(names)
        self.limit = limit

    def register(self, name: str) -> bool:
        """Register ``name``; False when it was already there. A name is 1 to 128 printable
        characters (ValueError otherwise); a tenant holds at most :attr:`limit` (a 507 past it)."""
        if name not in self._names and len(self._names) >= self.limit:
            raise errors.limit_reached(
                "name", f"This API key holds its limit of {self.limit} client certificates; remove some first."
            )
        if not name or len(name) > MAX_NAME or not name.isprintable():
            raise ValueError(f"A certificate name is 1 to {MAX_NAME} printable characters.")
        if name in self._names:
            return False
        self._names.add(name)
        return True

    def remove(self, name: str) -> bool:
        if name not in self._names:
            return False
        self._names.discard(name)
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
        """Refuse ``name`` with a 400 on ``field`` unless it is registered."""
        if not name:
            raise errors.invalid(field, "A client certificate name is required here.")
        if name not in self._names:
            raise errors.invalid(
                field,
                f"Unknown client certificate '{name}'. Register it with POST /_emulator/certificates "
                "or in the config file.",
            )


class Holder(Protocol):
    """A tenant, as far as certificates go."""

    certificates: Certificates


def names(tenant: Holder) -> list[str]:
    return tenant.certificates.names()


def is_registered(tenant: Holder, name: str | None) -> bool:
    return bool(name) and name in tenant.certificates


def require_certificate(tenant: Holder, name: str | None, field: str) -> None:
    """Refuse ``name`` with a 400 on ``field`` unless the tenant registered it."""
    tenant.certificates.require(name, field)
