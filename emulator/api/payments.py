"""The seven payment operations of ``/PaymentGateway``: thin handlers over the engine.

:func:`status_of` is the one place a payment answer's HTTP status is decided from its
``operationResultCode`` and the tenant's success-status switch."""

from __future__ import annotations

from emulator.domain.model import PaymentRequest
from emulator.domain.vocabulary import HTTP_STATUS, SUCCESSFUL, Operation
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.engine import engine
from emulator.stores import tenant_settings
from emulator.tenants.services import Services
from emulator.tenants.tenants import Tenant


def status_of(
    runtime: Services, tenant: Tenant | None, operation: Operation, outcome: engine.OperationOutcome
) -> tuple[int, dict[str, str]]:
    code = outcome.result.code
    if outcome.lookup is None:  # a payment operation
        # the gateway refused the request itself: a gateway result, not an internal error
        status = 409 if outcome.refused else HTTP_STATUS[code]
    elif outcome.lookup == engine.LOOKUP_FOUND:  # a status lookup answered with the ledger's state
        status = 200 if code in SUCCESSFUL else 409
    else:  # a status lookup the gateway did not answer (status is documented with 200, 400, 401 and 409 only)
        status = 409
    headers = {"Retry-After": "1"} if status == 503 else {}  # a TemporaryFailure: when to try again
    return tenant_settings.http_status(runtime, tenant, operation, status), headers


def _handler(operation: Operation) -> Handler:
    async def handle(call: Call) -> Reply:
        request = PaymentRequest.from_body(operation, call.body or {})
        # each attempt goes to the call's journal entry as it is made (rendered when the journal
        # is first read), so the journal keeps them even when a fault drops the connection
        outcome = await engine.process(call.runtime, call.tenant, request, call.attempts)
        status, headers = status_of(call.runtime, call.tenant, operation, outcome)
        return Reply(status, outcome.result.to_json(), headers)

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
