"""Control: the caller's own settings (strictness, success status, failover mode)."""

from __future__ import annotations

from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.stores import tenant_settings


async def read(call: Call) -> Reply:
    return Reply(200, tenant_settings.effective(call.runtime, call.tenant))


async def update(call: Call) -> Reply:
    tenant_settings.update(call.tenant, call.body or {})
    return Reply(200, tenant_settings.effective(call.runtime, call.tenant))


HANDLERS: dict[str, Handler] = {"ControlSettings": read, "ControlUpdateSettings": update}
