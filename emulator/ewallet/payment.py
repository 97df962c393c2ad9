"""Paying a session from its hosted page: the customer's choice → a payment-engine request
→ a stored result and its signed token.

The page sends ``{"storedCard": <index>, "cvv": "123"}`` (a stored card of the session,
paid by entering only its security code) or ``{"card": {cardHolderName, cardNumber,
expirationMonth, expirationYear, cvv}}``. The session's operation maps to an engine
operation (see :data:`emulator.ewallet.sessions.ENGINE_OPERATION`); its gateway account,
certificate and ``fallbackUpgs`` become the engine request's, so failover works as it does
on ``/PaymentGateway/charge``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emulator import engine, errors, tenant_settings, vault
from emulator.ewallet import brands, results
from emulator.ewallet.results import SUCCESSFUL, CardView
from emulator.ewallet.sessions import ENGINE_OPERATION, Session, SessionResult
from emulator.pipeline import DropConnection

if TYPE_CHECKING:
    from emulator.runtime import Runtime
    from emulator.tenants import Tenant

RESULT_ID_LENGTH = 24
_ENGINE_OPERATION_ID = {"Charge": "GatewayCharge", "PreAuth": "GatewayAuthorize", "Tokenize": "GatewayTokenize"}
CHOICE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "storedCard": {"type": "integer", "minimum": 0},
        "cvv": {"type": "string", "pattern": "^[0-9]{3,4}$"},
        "card": {
            "type": "object",
            "additionalProperties": False,
            "required": ["cardHolderName", "cardNumber", "expirationMonth", "expirationYear", "cvv"],
            "properties": {
                "cardHolderName": {"type": "string", "minLength": 1, "maxLength": 100},
                "cardNumber": {"type": "string", "pattern": "^[0-9]{12,19}$"},
                "expirationMonth": {"type": "integer", "minimum": 1, "maximum": 12},
                "expirationYear": {"type": "integer", "minimum": 2000, "maximum": 2100},
                "cvv": {"type": "string", "pattern": "^[0-9]{3,4}$"},
            },
        },
    },
}
_PLAIN_MESSAGES = {
    "card.cardNumber": "Enter the card number: 12 to 19 digits.",
    "card.cvv": "Enter the 3 or 4 digit security code.",
    "cvv": "Enter the 3 or 4 digit security code.",
}


@dataclass(frozen=True)
class Paid:
    """What the page shows after a payment (nothing sensitive)."""

    result: SessionResult
    summary: dict[str, Any]


def read_choice(runtime: Runtime, session: Session, body: Any) -> dict[str, Any]:
    """The validated choice of the page, or a 400 naming the fields to fix."""
    compiled = runtime.api.compiler.compile(CHOICE_SCHEMA)
    if not compiled.is_valid(body):
        problems = compiled.errors(body)
        raise errors.invalid_many(
            (name, [_PLAIN_MESSAGES.get(name or "", messages[0]) if "pattern" in messages[0] else messages[0]])
            for name, messages in problems
        )
    if "card" in body and "storedCard" in body:
        raise errors.invalid("body", "Pay either with a stored card or with a new card, not both.")
    if "storedCard" in body:
        if body["storedCard"] >= len(session.stored_cards):
            raise errors.invalid("storedCard", "This session has no such stored card.")
        if "cvv" not in body:
            raise errors.invalid("cvv", "Enter the security code of the stored card.")
        return body
    if "card" not in body:
        raise errors.invalid("card", "Choose a stored card or enter a card.")
    card = body["card"]
    # The check digit, the expiry and the security code are the gateway's checks
    # (emulator.gateways.checks), reached through the engine as by the API.
    brand = brands.detect(card["cardNumber"])
    allowed = session.allowed_brands
    if allowed and brand not in allowed:
        raise errors.invalid("card.cardNumber", f"{brand} cards are not accepted here; accepted: {', '.join(allowed)}.")
    return body


def card_of(tenant: Tenant, session: Session, choice: dict[str, Any]) -> tuple[dict[str, Any], CardView]:
    """The engine's ``card`` and what results may show of it."""
    if "card" in choice:
        card = dict(choice["card"])
        view = CardView(
            card["cardNumber"], brands.detect(card["cardNumber"]), card["cardHolderName"], None,
            card["expirationMonth"], card["expirationYear"],
        )
        return card, view
    stored = session.stored_cards[choice["storedCard"]]
    card: dict[str, Any] = {
        "cardNumber": "@" + stored["token"],
        "expirationMonth": stored["expirationMonth"],
        "expirationYear": stored["expirationYear"],
        "cvv": choice["cvv"],
    }
    try:
        resolved = vault.resolve_card(tenant, card)  # only to read the holder and mask the number
    except errors.ApiError:
        raise errors.invalid("storedCard", "This stored card is no longer available.") from None
    holder = stored.get("nameOnCard") or resolved.get("cardHolderName") or session.request.get("customerName")
    card["cardHolderName"] = (holder or "Card holder")[:100]
    if stored.get("ownerId"):
        card["ownerID"] = stored["ownerId"]
    number = resolved["cardNumber"]
    brand = stored.get("brand") or brands.detect(number)
    view = CardView(number, brand, holder, stored.get("ownerId"), stored["expirationMonth"], stored["expirationYear"])
    return card, view


def engine_request(session: Session, card: dict[str, Any],
                   client_ip: str | None) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """(engine operation, request body in the shape of the matching /PaymentGateway call,
    fallback entries). Charge and authorize requests carry the fallbacks themselves; the
    tokenize body has no such field, so :func:`run` walks them for it."""
    operation, generate = ENGINE_OPERATION[session.operation]
    asked = session.request
    request: dict[str, Any] = {"card": card, "paymentGatewayAccountName": asked["paymentGatewayAccountId"]}
    if asked.get("paymentGatewayCertName"):
        request["certificateName"] = asked["paymentGatewayCertName"]
    if asked.get("countryCode"):
        request["payerDetails"] = {"countryCode": asked["countryCode"], "clientIPAddress": client_ip or "127.0.0.1"}
    fallbacks = [
        {"paymentGatewayAccountName": f["paymentGatewayAccountId"],
         **({"paymentGatewayCertName": f["paymentGatewayCertName"]} if f.get("paymentGatewayCertName") else {})}
        for f in asked.get("fallbackUpgs") or []
    ]
    if operation != "Tokenize":
        request.update(amount=session.amount, currency=session.currency, myRef=session.token)
        request["orderDesc"] = asked.get("paymentNote") or "Payment page order"
        if generate:
            request["generateToken"] = True
        if fallbacks:
            request["fallbackUpgs"] = fallbacks
    return operation, request, fallbacks


async def run(runtime: Runtime, tenant: Tenant, operation: str, request: dict[str, Any],
              fallbacks: list[dict[str, Any]], attempts_log: list[dict[str, Any]]) -> engine.Outcome:
    """The engine's outcome; for a tokenize with fallbacks, one engine call per account in
    order until one succeeds (attempts numbered across the calls)."""
    if operation != "Tokenize" or not fallbacks:
        return await engine.process(runtime, tenant, operation, request, attempts_log)
    chain = [(request["paymentGatewayAccountName"], request.get("certificateName"))]
    chain += [(f["paymentGatewayAccountName"], f.get("paymentGatewayCertName")) for f in fallbacks]
    attempts: list[dict[str, Any]] = []
    outcome: engine.Outcome | None = None
    for number, (name, certificate) in enumerate(chain, start=1):
        single = {k: v for k, v in request.items() if k != "certificateName"}
        single["paymentGatewayAccountName"] = name
        if certificate:
            single["certificateName"] = certificate
        outcome = await engine.process(runtime, tenant, operation, single, attempts_log)
        for entry in outcome.attempts:
            entry["attemptNumber"], entry["isFallback"] = number, number > 1
        attempts += outcome.attempts
        if not _falls_over(runtime, tenant, outcome.result):
            break
    assert outcome is not None
    return engine.Outcome(outcome.result, outcome.status, outcome.headers, attempts)


def _falls_over(runtime: Runtime, tenant: Tenant, result: dict[str, Any]) -> bool:
    code = result["operationResultCode"]
    if code in SUCCESSFUL:
        return False
    if tenant_settings.failover(runtime, tenant) == "recoverable-only" and code == "Rejected":
        return result.get("rejectReasonCode") not in engine.HARD_DECLINES
    return True


async def pay(runtime: Runtime, tenant: Tenant, session: Session, body: Any,
              client_ip: str | None, attempts_log: list[dict[str, Any]]) -> Paid:
    """Run the session's operation for the customer's choice; store and sign the result."""
    state = session.state(tenant.now())
    if state == "paid":
        raise errors.ApiError(409, [("sessionToken", ["This session has already been paid."])])
    if state == "expired":
        raise errors.ApiError(410, [("sessionToken", ["This session has expired; ask the merchant for a new one."])])
    if session.busy:
        raise errors.ApiError(409, [("sessionToken", ["A payment of this session is already running."])])
    choice = read_choice(runtime, session, body)
    card, view = card_of(tenant, session, choice)
    operation, request, fallbacks = engine_request(session, card, client_ip)
    check_engine_request(runtime, operation, request)
    session.busy = True
    try:
        outcome = await run(runtime, tenant, operation, request, fallbacks, attempts_log)
    except DropConnection as exc:
        raise errors.ApiError(
            503, [(None, [f"The payment service did not answer ({exc.reason}); check the dashboard before retrying."])]
        ) from None
    finally:
        session.busy = False
    now = tenant.now()
    data = results.build(session, outcome.result, outcome.attempts, view, now)
    result_id = tenant.random_string(RESULT_ID_LENGTH)
    token = results.issue(runtime, tenant, session, result_id, data)
    success = data["upgChargeResults"]["operationResultCode"] in SUCCESSFUL
    stored = SessionResult(result_id, now, success, data, token)
    session.results[result_id] = stored
    if success:
        session.paid_by = result_id
    return Paid(stored, summary(stored))


def summary(result: SessionResult) -> dict[str, Any]:
    """The page's answer: the token to hand on and a short account of the outcome."""
    data = result.data
    final = data["upgChargeResults"]
    return {
        "resultToken": result.token,
        "success": result.success,
        "operationType": final["operationType"],
        "operationResultCode": final["operationResultCode"],
        "operationResultDescription": final["operationResultDescription"],
        "gatewayName": final["gatewayName"],
        "gatewayReference": final["gatewayReference"],
        "amount": final["amount"],
        "currency": final["currency"],
        "providerAccountId": data["providerAccountId"],
        "attempts": len(data["attempts"]),
        "maskedCard": data["tokenAndMaskedCardModel"]["bankCard"]["number"],
    }


def check_engine_request(runtime: Runtime, operation: str, request: dict[str, Any]) -> None:
    """Fail loudly (a payemu bug) if the request breaks the published body schema."""
    op = runtime.api.by_id().get(_ENGINE_OPERATION_ID[operation])
    if op is None or op.body is None:
        return
    if not op.body.is_valid(request):
        raise errors.invalid_many(op.body.errors(request))
