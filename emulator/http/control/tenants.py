"""Control: health, fresh tenants, removing and resetting the caller's tenant."""

from __future__ import annotations

import time

from emulator import INTERFACE_VERSION, __version__
from emulator.http import admin, errors
from emulator.http.pipeline import Call, Handler, Reply
from emulator.payments import limits
from emulator.payments.clock import isoformat


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
    """No key needed, so a CI job can bootstrap itself; the new key is isolated from
    every other one."""
    admin.require(call.runtime.settings, call.headers)
    body = call.body or {}
    try:
        tenant = call.runtime.tenants.create(
            sandbox=body.get("sandbox", True), user_name=body.get("userName"), key=body.get("apiKey")
        )
    except ValueError:
        raise errors.ApiError(409, [("apiKey", ["This API key is already in use."])]) from None
    return Reply(
        201,
        {
            "apiKey": tenant.key,
            "accountId": tenant.account_id,
            "userName": tenant.user_name,
            "isSandbox": tenant.is_sandbox,
        },
    )


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
    "ControlDeleteTenant": delete_tenant,
    "ControlReset": reset,
}
