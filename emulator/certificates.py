"""Client certificate names, per tenant.

The real service takes client certificates through its web portal; a request then names
one in ``certificateName`` (or ``paymentGatewayCertName`` / ``fallbackUpgs[i]...``).
payemu keeps only the names: the config file lists them per key (``certificates:``) and
the control API registers more. A request naming an unregistered certificate is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator import errors, limits

if TYPE_CHECKING:
    from emulator.tenants import Tenant

MAX_NAME = 128


def register(tenant: Tenant, name: str) -> bool:
    """Register ``name``; False when it was already there. A name is 1 to 128 printable
    characters."""
    if not name or len(name) > MAX_NAME or not name.isprintable():
        raise ValueError(f"a certificate name is 1 to {MAX_NAME} printable characters")
    if name in tenant.certificates:
        return False
    limits.admit_name(tenant, tenant.certificates, name, "client certificates", "name")
    tenant.certificates.add(name)
    return True


def remove(tenant: Tenant, name: str) -> bool:
    if name not in tenant.certificates:
        return False
    tenant.certificates.discard(name)
    return True


def names(tenant: Tenant) -> list[str]:
    return sorted(tenant.certificates)


def is_registered(tenant: Tenant, name: str | None) -> bool:
    return bool(name) and name in tenant.certificates


def require_certificate(tenant: Tenant, name: str | None, field: str) -> None:
    """Refuse ``name`` with a 400 on ``field`` unless the tenant registered it."""
    if not name:
        raise errors.invalid(field, "A client certificate name is required here.")
    if name not in tenant.certificates:
        raise errors.invalid(
            field,
            f"Unknown client certificate '{name}'. Register it with POST /_emulator/certificates "
            "or in the config file.",
        )
