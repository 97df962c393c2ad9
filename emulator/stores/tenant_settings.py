"""Settings a tenant may change for itself (``POST /_emulator/settings``): strictness, the
success status, failover, whether the mock gateways tokenize; so one CI test can run
strict without touching others."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any, Protocol

from emulator.domain.config import FAILOVER_MODES, MOCK_TOKENIZATION, SUCCESS_STATUSES
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import Operation

if TYPE_CHECKING:
    from emulator.domain.config import Settings

    class ServerDefaults(Protocol):
        @property
        def settings(self) -> Settings: ...

    class SettingsOwner(Protocol):
        overrides: TenantSettings


# control-API name → (TenantSettings / Settings attribute, allowed values or None for a boolean)
FIELDS: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "strict": ("strict", None),
    "successStatus": ("success_status", SUCCESS_STATUSES),
    "failover": ("failover", FAILOVER_MODES),
    "mockTokenization": ("mock_tokenization", MOCK_TOKENIZATION),
}
# Operations whose Success and Accepted answers the success-status switch changes (status
# and tokenize never answer 202).
SWITCHED = frozenset({Operation.CHARGE, Operation.PRE_AUTH, Operation.CAPTURE, Operation.VOID, Operation.REFUND})


@dataclass
class TenantSettings:
    """A tenant's own values; None means the server's value applies."""

    strict: bool | None = None
    success_status: str | None = None
    failover: str | None = None
    mock_tokenization: str | None = None

    def own(self) -> list[str]:
        return sorted(name for name, (attribute, _) in FIELDS.items() if getattr(self, attribute) is not None)

    def update(self, changes: dict[str, Any]) -> None:
        """Apply validated ``changes`` (null removes the tenant's value)."""
        known = {f.name for f in fields(self)}
        for name, new in changes.items():
            if name in FIELDS and FIELDS[name][0] in known:
                setattr(self, FIELDS[name][0], new)


def value(runtime: ServerDefaults, tenant: SettingsOwner | None, name: str) -> Any:
    """The tenant's own value of ``name``, else the server's."""
    attribute = FIELDS[name][0]
    found = getattr(tenant.overrides, attribute) if tenant is not None else None
    return found if found is not None else getattr(runtime.settings, attribute)


def strict(runtime: ServerDefaults, tenant: SettingsOwner | None) -> bool:
    return bool(value(runtime, tenant, "strict"))


def failover(runtime: ServerDefaults, tenant: SettingsOwner | None) -> str:
    return str(value(runtime, tenant, "failover"))


def mocks_tokenize(runtime: ServerDefaults, tenant: SettingsOwner | None) -> bool:
    """Whether NULLSuccess and NULLFailure tokenize: the older mock-PSP page's reading
    (``supported``); the newest page says they do not (Fidelity: mock-tokenization)."""
    return bool(value(runtime, tenant, "mockTokenization") == "supported")


def success_status(runtime: ServerDefaults, tenant: SettingsOwner | None) -> str:
    return str(value(runtime, tenant, "successStatus"))


def http_status(runtime: ServerDefaults, tenant: SettingsOwner | None, operation: str, status: int) -> int:
    """The HTTP status of a payment answer under the success-status switch."""
    if status not in (200, 202) or operation not in SWITCHED:
        return status
    # value(runtime, tenant, "successStatus") read directly: every payment answer asks
    own = tenant.overrides.success_status if tenant is not None else None
    mode = own if own is not None else runtime.settings.success_status
    if mode == "always-200":
        return 200
    if mode == "always-202":
        return 202
    return status


def effective(runtime: ServerDefaults, tenant: SettingsOwner) -> dict[str, Any]:
    return {
        **{name: value(runtime, tenant, name) for name in FIELDS},
        "overridden": tenant.overrides.own(),
    }


def update(tenant: SettingsOwner, changes: dict[str, Any]) -> None:
    """Apply validated ``changes`` (null removes the tenant's own value)."""
    tenant.overrides.update(changes)
