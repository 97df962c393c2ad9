"""``GET /PaymentGateway``: the gateway catalog."""

from __future__ import annotations

from emulator.endpoints.pipeline import Call, Handler, Reply


async def gateway_list(call: Call) -> Reply:
    return Reply(200, [spec.to_description() for spec in call.runtime.catalog])


HANDLERS: dict[str, Handler] = {"GatewayList": gateway_list}
