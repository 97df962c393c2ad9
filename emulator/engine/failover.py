"""Which gateway accounts a payment tries, in order, and when it moves on to the next.

Every account is checked before the first attempt. After a result other than Success or
Accepted the next is tried; under ``failover: recoverable-only`` a failure its class
calls non-recoverable ends the chain (:func:`classes`: ``data/failover.yaml``, the one
table, printed in docs/payments.md by :func:`classes_table`)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from emulator.domain import errors
from emulator.domain.datafiles import data_path, load_checked
from emulator.domain.model import OperationResult, PaymentRequest
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import SUCCESSFUL, ResultCode
from emulator.engine.simulator import GatewayAccount
from emulator.stores import accounts, certificates, tenant_settings

if TYPE_CHECKING:
    from emulator.catalog.catalog import Catalog, GatewaySpec
    from emulator.scenarios.model import Rule
    from emulator.tenants.services import Services
    from emulator.tenants.tenants import Tenant


def primary_account(runtime: Services, tenant: Tenant, request: PaymentRequest) -> GatewayAccount:
    certificate = request.certificate
    if certificate:
        certificates.require_certificate(tenant, certificate, "certificateName")
    inline = request.inline_account
    if inline is not None:
        if not inline.credentials and not certificate:
            return _bare_account(runtime.catalog, inline.gateway)
        spec = _inline_gateway(runtime.catalog, inline.gateway)
        pairs = accounts.check_credentials(spec, inline.credentials, "paymentGatewayAccount.credentials")
        return GatewayAccount(spec, None, dict(pairs), certificate)
    name = request.account_name
    if not name:
        raise errors.invalid("paymentGatewayAccountName", "Give paymentGatewayAccountName or paymentGatewayAccount.")
    return stored_account(runtime, tenant, name, "paymentGatewayAccountName", certificate)


def _inline_gateway(catalog: Catalog, name: str | None) -> GatewaySpec:
    where = "paymentGatewayAccount.paymentGatewayName"
    if not name:
        raise errors.invalid(where, "The PaymentGatewayName field is required in paymentGatewayAccount.")
    return accounts.resolve_gateway(catalog, name, where)


# the gateway's name as a request spells it → the catalog and its inline account without
# credentials or certificate
_BARE: dict[str | None, tuple[Catalog, GatewayAccount]] = {}
_MAX_BARE = 1024  # spellings kept; then the accounts are made anew


def _bare_account(catalog: Catalog, name: str | None) -> GatewayAccount:
    """The one inline account of the gateway ``name`` without credentials or certificate,
    shared by the requests that name it (an attempt reads its account, never changes it)."""
    found = _BARE.get(name)
    if found is not None and found[0] is catalog:
        return found[1]
    spec = _inline_gateway(catalog, name)
    accounts.note_listed(spec)
    account = GatewayAccount(spec, None, {})
    if len(_BARE) >= _MAX_BARE:
        _BARE.clear()
    _BARE[name] = (catalog, account)
    return account


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
    if tenant_settings.failover(runtime, tenant) == "recoverable-only":
        key = result.reject_reason if result.code == ResultCode.REJECTED else result.code
        return key not in non_recoverable()
    return True


# -- the classes ------------------------------------------------------------------------------
CLASSES_PATH = data_path("failover.yaml")
_ENTRY = {
    "type": "object",
    "additionalProperties": False,
    "required": ["code", "recoverable"],
    "oneOf": [{"required": ["source", "why"]}, {"required": ["guess"]}],
    "properties": {
        "code": {"type": "string", "minLength": 1},
        "recoverable": {"type": "boolean"},
        "source": {"const": "guide"},
        "why": {"type": "string", "minLength": 1},
        "guess": {"type": "string", "minLength": 1},
    },
}
_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["guide", "classes"],
    "properties": {"guide": {"type": "string", "pattern": "^https://"}, "classes": {"type": "array", "items": _ENTRY}},
}


class FailoverTableError(ValueError):
    """data/failover.yaml cannot be used."""


@dataclass(frozen=True)
class FailoverClass:
    """One failure's class: ``code`` (a rejectReasonCode or a result code), whether it falls
    over under ``recoverable-only``, and where that comes from (the guide, or payemu's guess)."""

    code: str
    recoverable: bool
    source: str  # the guide's URL, or "" for payemu's guess
    why: str


@cache
def classes() -> tuple[FailoverClass, ...]:
    """The table, read once."""
    data: dict[str, Any] = load_checked(CLASSES_PATH, _SCHEMA, "failover classes", "failover", FailoverTableError)
    found = []
    for entry in data["classes"]:
        source = data["guide"] if "source" in entry else ""
        found.append(FailoverClass(entry["code"], entry["recoverable"], source, entry.get("why") or entry["guess"]))
    return tuple(found)


@cache
def non_recoverable() -> frozenset[str]:
    """The codes that end the chain under ``failover: recoverable-only``."""
    return frozenset(c.code for c in classes() if not c.recoverable)


def natives(catalog: Catalog, rules: list[Rule], code: str) -> list[str]:
    """Every gateway's own code for the failure ``code`` (``Gateway `native```): its catalog
    code, and the codes its triggers answer with that reason."""
    found: list[str] = []
    for gateway in catalog:
        if gateway.always is not None:
            continue
        codes = {gateway.code_for(code).code} if code in gateway.codes else set()
        for rule in rules:
            outcome = rule.outcomes[-1]
            if rule.match.gateway != gateway.name.casefold() or outcome.gateway_result_code is None:
                continue
            key = outcome.reject_reason_code if outcome.operation_result_code == ResultCode.REJECTED else None
            if (key or outcome.operation_result_code) == code:
                codes.add(outcome.gateway_result_code)
        found += [f"{gateway.name} `{native}`" for native in sorted(codes)]
    return found


def classes_table(catalog: Catalog, rules: list[Rule]) -> str:
    """docs/payments.md's table: each failure, its class under ``recoverable-only``, where
    the class comes from, and the gateways' own codes that carry it."""
    lines = [
        "| failure | `recoverable-only` | why | source | the gateways' own codes |",
        "| --- | --- | --- | --- | --- |",
    ]
    for entry in classes():
        verdict = "falls over" if entry.recoverable else "ends the chain"
        source = f"[failover guide]({entry.source})" if entry.source else "*payemu's reading*"
        codes = ", ".join(natives(catalog, rules, entry.code)) or "—"
        why = entry.why.replace("|", "\\|")
        lines.append(f"| `{entry.code}` | {verdict} | {why} | {source} | {codes} |")
    return "\n".join(lines)
