"""The seven payment operations of ``/PaymentGateway``: thin handlers over the engine.

Each answers an OperationResult with the HTTP status of its ``operationResultCode``
(Success 200, Accepted 202, Rejected and NotImplemented 409, FatalFailure 500,
TemporaryFailure 503 with ``Retry-After``); see :mod:`emulator.engine`.
"""

from __future__ import annotations

from emulator import engine, tenant_settings
from emulator.pipeline import Call, Handler, Reply


def _handler(operation: str) -> Handler:
    async def handle(call: Call) -> Reply:
        outcome = await engine.process(call.runtime, call.tenant, operation, call.body or {}, call.attempts)
        status = tenant_settings.http_status(call.runtime, call.tenant, operation, outcome.status)
        return Reply(status, outcome.result, outcome.headers)

    handle.__name__ = f"gateway_{operation.lower()}"
    handle.__doc__ = f"``{operation}`` through the payment engine."
    return handle


HANDLERS: dict[str, Handler] = {
    "GatewayCharge": _handler("Charge"),
    "GatewayAuthorize": _handler("PreAuth"),
    "GatewayCapture": _handler("Capture"),
    "GatewayVoid": _handler("Void"),
    "GatewayRefund": _handler("Refund"),
    "GatewayTokenize": _handler("Tokenize"),
    "GatewayStatus": _handler("Status"),
}
