"""Demo state a config file declares per key: accounts, string tokens, certificates, sessions.

Everything goes through the API's own checks, so a bad preload is refused at start with
the config path and the message the API would give."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from emulator.domain import errors
from emulator.domain.config import ConfigError
from emulator.stores import accounts
from emulator.stores import ewallet_sessions as sessions
from emulator.stores.vault import MAX_PAYLOAD, StringToken

if TYPE_CHECKING:
    from collections.abc import Mapping

    from emulator.catalog.catalog import Catalog
    from emulator.domain.config import Settings
    from emulator.tenants.services import DocumentedOperation
    from emulator.tenants.tenants import Tenant


class Interface(Protocol):
    def by_id(self) -> Mapping[str, DocumentedOperation]: ...


class Target(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def api(self) -> Interface: ...


ACCOUNT_OPERATION = "PaymentGatewayAccountSet"
SESSION_OPERATION = "StartSession"


def apply_to(runtime: Target, tenant: Tenant) -> None:
    """Preload one tenant (at start and after ``POST /_emulator/reset``); :class:`ConfigError`
    names the first problem."""
    preload = runtime.settings.preload.get(tenant.key)
    if not preload:
        return
    where = f"config: keys[{tenant.key}]"
    operations = runtime.api.by_id()
    for index, item in enumerate(preload.get("accounts", [])):
        _account(runtime, tenant, operations.get(ACCOUNT_OPERATION), item, f"{where}.accounts[{index}]")
    for index, item in enumerate(preload.get("stringTokens", [])):
        _string_token(tenant, item, f"{where}.stringTokens[{index}]")
    for index, item in enumerate(preload.get("sessions", [])):
        _session(tenant, operations.get(SESSION_OPERATION), item, f"{where}.sessions[{index}]")


def _account(
    runtime: Target, tenant: Tenant, operation: DocumentedOperation | None, item: dict[str, Any], where: str
) -> None:
    body = {key: value for key, value in item.items() if key != "name"}
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}.name: an account needs a name")
    body = _checked(operation, body, where)
    try:
        accounts.put(tenant, runtime.catalog, name, body)
    except errors.ApiError as exc:
        raise ConfigError(_describe(where, exc)) from None


def _string_token(tenant: Tenant, item: dict[str, Any], where: str) -> None:
    token, payload = item["token"], item["payload"]
    if token in tenant.vault:
        raise ConfigError(f"{where}.token: the token {token} is listed twice")
    if len(payload) > MAX_PAYLOAD:
        raise ConfigError(f"{where}.payload: the payload must be 1 to {MAX_PAYLOAD} characters long")
    tenant.vault.add(StringToken(token, payload, tenant.now()))


def _session(tenant: Tenant, operation: DocumentedOperation | None, item: dict[str, Any], where: str) -> None:
    token = item["token"]
    if token in tenant.sessions:
        raise ConfigError(f"{where}.token: the session {token} is listed twice")
    body = _checked(operation, item["request"], f"{where}.request")
    problems = sessions.check_request(tenant, body)
    if problems:
        raise ConfigError(_describe(f"{where}.request", errors.invalid_many(problems)))
    now = tenant.now()
    request = dict(body)
    if request.get("countryCode"):
        request["countryCode"] = request["countryCode"].upper()
    tenant.sessions.add(sessions.Session(token, request, now, now + sessions.SESSION_LIFETIME))


def _checked(operation: DocumentedOperation | None, body: dict[str, Any], where: str) -> dict[str, Any]:
    if operation is None or operation.body is None:
        raise ConfigError(f"{where}: the interface document in use has no such operation")
    problems = operation.body.errors(body, root=None)
    if problems:
        raise ConfigError(_describe(where, errors.invalid_many(problems)))
    normalized: dict[str, Any] = operation.body.normalize(body)
    return normalized


def _describe(where: str, exc: errors.ApiError) -> str:
    field, messages = exc.entries[0]
    return f"{where}{'.' + field if field else ''}: {' '.join(messages)}"
