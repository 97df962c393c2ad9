"""Which gateway accounts a payment tries, in order, and when it moves on to the next.

Every account is checked before the first attempt. After a result other than Success or
Accepted the next is tried; under ``failover: recoverable-only`` a hard decline
(:data:`HARD_DECLINES`) ends the chain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.domain import errors
from emulator.domain.model import OperationResult, PaymentRequest
from emulator.domain.vocabulary import HARD_DECLINES, SUCCESSFUL, ResultCode
from emulator.engine.simulator import GatewayAccount
from emulator.stores import accounts, certificates, tenant_settings

if TYPE_CHECKING:
    from emulator.tenants.services import Services
    from emulator.tenants.tenants import Tenant


def primary_account(runtime: Services, tenant: Tenant, request: PaymentRequest) -> GatewayAccount:
    certificate = request.certificate
    if certificate:
        certificates.require_certificate(tenant, certificate, "certificateName")
    inline = request.inline_account
    if inline is not None:
        where = "paymentGatewayAccount.paymentGatewayName"
        if not inline.gateway:
            raise errors.invalid(where, "The PaymentGatewayName field is required in paymentGatewayAccount.")
        spec = accounts.resolve_gateway(runtime.catalog, inline.gateway, where)
        pairs = accounts.check_credentials(spec, inline.credentials, "paymentGatewayAccount.credentials")
        return GatewayAccount(spec, None, dict(pairs), certificate)
    name = request.account_name
    if not name:
        raise errors.invalid("paymentGatewayAccountName", "Give paymentGatewayAccountName or paymentGatewayAccount.")
    return stored_account(runtime, tenant, name, "paymentGatewayAccountName", certificate)


def stored_account(runtime: Services, tenant: Tenant, name: str, where: str, certificate: str | None) -> GatewayAccount:
    stored = tenant.accounts.get(name)
    if stored is None:
        raise errors.invalid(where, f"No stored payment gateway account named '{name}'.")
    spec = runtime.catalog.get(stored.gateway)
    if spec is None:
        raise errors.invalid(where, f"The gateway '{stored.gateway}' of account '{name}' is not in the catalog.")
    return GatewayAccount(spec, stored.name, stored.credential_map(), certificate)


def fallback_accounts(runtime: Services, tenant: Tenant, request: PaymentRequest) -> list[GatewayAccount]:
    found: list[GatewayAccount] = []
    problems: list[errors.FieldErrors] = []
    for index, entry in enumerate(request.fallbacks):
        where = f"fallbackUpgs[{index}]"
        try:
            if entry.certificate:
                certificates.require_certificate(tenant, entry.certificate, f"{where}.paymentGatewayCertName")
            found.append(
                stored_account(runtime, tenant, entry.name, f"{where}.paymentGatewayAccountName", entry.certificate)
            )
        except errors.ApiError as exc:
            problems.extend(exc.entries)
    if problems:
        raise errors.invalid_many(problems)
    return found


def falls_over(runtime: Services, tenant: Tenant, result: OperationResult) -> bool:
    """Whether a payment goes on to its next account after this result."""
    if result.code in SUCCESSFUL:
        return False
    if tenant_settings.failover(runtime, tenant) == "recoverable-only" and result.code == ResultCode.REJECTED:
        return result.reject_reason not in HARD_DECLINES
    return True
