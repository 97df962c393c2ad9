"""``GET /Utils/apiKey``: the status of the caller's key (also a health check)."""

from __future__ import annotations

from emulator.endpoints.pipeline import Call, Handler, Reply


async def validate_api_key(call: Call) -> Reply:
    tenant = call.tenant
    return Reply(
        200,
        {
            "status": "OK",
            "userName": tenant.user_name,
            "accountId": tenant.account_id,
            "isSandbox": tenant.is_sandbox,
        },
    )


HANDLERS: dict[str, Handler] = {"ValidateApiKey": validate_api_key}
