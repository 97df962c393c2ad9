"""The seven payment operations of ``/PaymentGateway``: thin handlers over the engine.

Each parses its validated body once into a :class:`~emulator.payments.model.PaymentRequest`
and answers the engine's OperationResult with the HTTP status of its
``operationResultCode`` (Success 200, Accepted 202, Rejected and NotImplemented 409,
FatalFailure 500, TemporaryFailure 503 with ``Retry-After``); see :mod:`emulator.payments.engine`.
"""

from __future__ import annotations

from emulator.http.pipeline import Call, Handler, Reply
from emulator.payments import engine, tenant_settings
from emulator.payments.model import AttemptRecord, PaymentRequest
from emulator.vocabulary import Operation


def _handler(operation: Operation) -> Handler:
    async def handle(call: Call) -> Reply:
        request = PaymentRequest.from_body(operation, call.body or {})
        attempts: list[AttemptRecord] = []
        try:
            outcome = await engine.process(call.runtime, call.tenant, request, attempts)
        finally:  # the journal keeps the attempts even when a fault drops the connection
            call.attempts.extend(attempts)  # rendered when the journal is first read
        status = tenant_settings.http_status(call.runtime, call.tenant, operation, outcome.status)
        return Reply(status, outcome.result.to_json(), outcome.headers)

    handle.__name__ = f"gateway_{operation.lower()}"
    handle.__doc__ = f"``{operation}`` through the payment engine."
    return handle


HANDLERS: dict[str, Handler] = {
    "GatewayCharge": _handler(Operation.CHARGE),
    "GatewayAuthorize": _handler(Operation.PRE_AUTH),
    "GatewayCapture": _handler(Operation.CAPTURE),
    "GatewayVoid": _handler(Operation.VOID),
    "GatewayRefund": _handler(Operation.REFUND),
    "GatewayTokenize": _handler(Operation.TOKENIZE),
    "GatewayStatus": _handler(Operation.STATUS),
}
