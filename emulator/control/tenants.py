"""Control: health, fresh tenants, the list of this instance's tenants, removing and
resetting the caller's tenant."""

from __future__ import annotations

import time

from emulator.domain import errors
from emulator.domain.clock import isoformat
from emulator.domain.release import INTERFACE_VERSION, __version__
from emulator.endpoints import admin
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.tenants import limits
from emulator.tenants.tenants import MAX_KEY_LENGTH, Tenant

# The key of a new tenant when the body names none: a load balancer in front of several
# instances mints it (deploy/haproxy.cfg) and hashes on it, so the tenant is created on the
# instance its later requests reach.
NEW_KEY_HEADER = "x-payemu-new-key"
_KEY_CHARACTERS = frozenset(chr(c) for c in range(0x21, 0x7F))


async def health(call: Call) -> Reply:
    runtime = call.runtime
    started = runtime.started
    return Reply(
        200,
        {
            "status": "ok",
            "version": __version__,
            "interfaceVersion": INTERFACE_VERSION,
            "tenants": len(runtime.tenants),
            "uptimeSeconds": round(time.monotonic() - started, 3),
            "seeded": runtime.settings.seed is not None,
            "limits": limits.usage(runtime),
            "adminKey": runtime.settings.admin_key is not None,
        },
    )


async def create_tenant(call: Call) -> Reply:
    """No key needed, so a CI job can bootstrap itself."""
    admin.require(call.runtime.settings, call.headers)
    body = call.body or {}
    key = body.get("apiKey")
    field = "apiKey"
    if key is None and NEW_KEY_HEADER in call.headers:
        key, field = call.headers[NEW_KEY_HEADER], "X-Payemu-New-Key"
        if not 0 < len(key) <= MAX_KEY_LENGTH or not set(key) <= _KEY_CHARACTERS:
            raise errors.invalid(field, "A key is 1 to 256 printable ASCII characters without spaces.")
    try:
        tenant = call.runtime.tenants.create(sandbox=body.get("sandbox", True), user_name=body.get("userName"), key=key)
    except ValueError:
        raise errors.ApiError(409, [(field, ["This API key is already in use."])]) from None
    return Reply(201, _described(tenant))


def _described(tenant: Tenant) -> dict[str, object]:
    return {
        "apiKey": tenant.key,
        "accountId": tenant.account_id,
        "userName": tenant.user_name,
        "isSandbox": tenant.is_sandbox,
        "shard": tenant.shard,
    }


async def list_tenants(call: Call) -> Reply:
    """Every tenant of this instance with the size of its stores; keys masked without an admin key."""
    settings = call.runtime.settings
    admin.require(settings, call.headers)
    full = settings.admin_key is not None  # and given: keys in full only to the admin
    listed = [
        {
            **_described(tenant),
            "apiKey": tenant.key if full else masked_key(tenant.key),
            "transactions": len(tenant.ledger),
            "stringTokens": len(tenant.vault),
            "sessions": len(tenant.sessions),
            "journal": len(tenant.journal),
        }
        for tenant in call.runtime.tenants
    ]
    return Reply(200, {"tenants": listed})


def masked_key(key: str) -> str:
    """An API key as shown without the admin key: at most its first six and last four characters."""
    head, tail = min(6, len(key) // 4), min(4, len(key) // 4)
    return f"{key[:head]}…{key[len(key) - tail :] if tail else ''}"


async def delete_tenant(call: Call) -> Reply:
    key = call.tenant.key
    if key in {spec.key for spec in call.runtime.settings.keys}:
        raise errors.ApiError(
            409,
            [("X-Api-Key", ["A configured API key cannot be removed; POST /_emulator/reset empties it."])],
        )
    call.runtime.tenants.remove(key)
    call.tenant.sessions.clear()  # its payment pages close too (the session index checks this)
    return Reply(204)


async def reset(call: Call) -> Reply:
    call.runtime.reset_tenant(call.tenant)
    return Reply(200, {"status": "reset", "now": isoformat(call.tenant.now())})


HANDLERS: dict[str, Handler] = {
    "ControlHealth": health,
    "ControlCreateTenant": create_tenant,
    "ControlListTenants": list_tenants,
    "ControlDeleteTenant": delete_tenant,
    "ControlReset": reset,
}
