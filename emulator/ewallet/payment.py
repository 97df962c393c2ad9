"""Paying a session from its hosted page: the customer's choice → a
:class:`~emulator.domain.model.PaymentRequest` → a stored result and its signed token.

The session's accounts and ``fallbackUpgs`` become the request's, so the engine fails over
exactly as it does on ``/PaymentGateway/charge``."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from emulator.domain import budget as weights
from emulator.domain import errors
from emulator.domain.cards import brand_of
from emulator.domain.model import AccountRef, AttemptRecord, Card, DropConnection, PaymentRequest, decimal_of
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import SUCCESSFUL, Operation
from emulator.engine import engine
from emulator.ewallet import results
from emulator.ewallet.results import CardView
from emulator.stores import vault
from emulator.stores.ewallet_sessions import ENGINE_OPERATION, Session, SessionResult

if TYPE_CHECKING:
    from emulator.tenants.services import Services
    from emulator.tenants.tenants import Tenant

RESULT_ID_LENGTH = 24
UNSPECIFIED_BRAND = "Unspecified"
DEFAULT_ORDER_DESC = "Payment page order"
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


def brand(number: str) -> str:
    return brand_of(number) or UNSPECIFIED_BRAND


def require_payable(session: Session, now: datetime) -> None:
    """Refuse a session that is paid (409) or expired (410)."""
    state = session.state(now)
    if state == "paid":
        raise errors.conflict("sessionToken", "This session has already been paid.")
    if state == "expired":
        raise errors.gone("sessionToken", "This session has expired; ask the merchant for a new one.")


def read_choice(runtime: Services, session: Session, body: Any) -> dict[str, Any]:
    """The validated choice of the page, or a 400 naming the fields to fix."""
    compiled = runtime.compiler.compile(CHOICE_SCHEMA)
    if not compiled.is_valid(body):
        problems = compiled.errors(body)
        raise errors.invalid_many(
            (name, [_PLAIN_MESSAGES.get(name or "", messages[0]) if "pattern" in messages[0] else messages[0]])
            for name, messages in problems
        )
    if "card" in body and "storedCard" in body:
        raise errors.invalid("body", "Pay either with a stored card or with a new card, not both.")
    choice: dict[str, Any] = body
    if "storedCard" in choice:
        if choice["storedCard"] >= len(session.stored_cards):
            raise errors.invalid("storedCard", "This session has no such stored card.")
        if "cvv" not in choice:
            raise errors.invalid("cvv", "Enter the security code of the stored card.")
        return choice
    if "card" not in choice:
        raise errors.invalid("card", "Choose a stored card or enter a card.")
    card = choice["card"]
    # The check digit, the expiry and the security code are the gateway's own checks
    # (emulator.engine.checks), reached through the engine as by the API.
    paying = brand(card["cardNumber"])
    allowed = session.allowed_brands
    if allowed and paying not in allowed:
        accepted = ", ".join(allowed)
        raise errors.invalid("card.cardNumber", f"{paying} cards are not accepted here; accepted: {accepted}.")
    return choice


def card_of(tenant: Tenant, session: Session, choice: dict[str, Any]) -> tuple[Card, CardView]:
    """The engine's card (a stored card as its ``@token``) and what results may show of it."""
    if "card" in choice:
        given = choice["card"]
        card = Card(
            number=given["cardNumber"],
            holder=given["cardHolderName"],
            expiration_month=given["expirationMonth"],
            expiration_year=given["expirationYear"],
            cvv=given["cvv"],
        )
        number = given["cardNumber"]
        view = CardView(number, brand(number), card.holder, None, given["expirationMonth"], given["expirationYear"])
        return card, view
    stored = session.stored_cards[choice["storedCard"]]
    card = Card(
        number="@" + stored["token"],
        expiration_month=stored["expirationMonth"],
        expiration_year=stored["expirationYear"],
        cvv=choice["cvv"],
        owner_id=stored.get("ownerId") or None,
    )
    try:
        resolved = vault.resolve_card(tenant, card)  # only to read the holder and mask the number
    except errors.ApiError:
        raise errors.invalid("storedCard", "This stored card is no longer available.") from None
    holder = stored.get("nameOnCard") or resolved.holder or session.request.get("customerName")
    card = Card(
        number=card.number,
        holder=(holder or "Card holder")[:100],
        expiration_month=card.expiration_month,
        expiration_year=card.expiration_year,
        cvv=card.cvv,
        owner_id=card.owner_id,
    )
    number = resolved.number or ""
    view = CardView(
        number,
        stored.get("brand") or brand(number),
        holder,
        stored.get("ownerId"),
        stored["expirationMonth"],
        stored["expirationYear"],
    )
    return card, view


def engine_request(session: Session, card: Card, client_ip: str | None) -> PaymentRequest:
    operation, generate = ENGINE_OPERATION[session.operation]
    asked = session.request
    fallbacks = tuple(
        AccountRef(entry["paymentGatewayAccountId"], entry.get("paymentGatewayCertName") or None)
        for entry in asked.get("fallbackUpgs") or []
    )
    paying = operation != Operation.TOKENIZE
    return PaymentRequest(
        operation=operation,
        account_name=asked["paymentGatewayAccountId"],
        certificate=asked.get("paymentGatewayCertName") or None,
        fallbacks=fallbacks,
        amount=decimal_of(asked["amount"]) if paying else None,
        currency=session.currency if paying else None,
        card=card,
        my_ref=session.reference if paying else None,
        order_desc=(asked.get("paymentNote") or DEFAULT_ORDER_DESC) if paying else None,
        client_ip=(client_ip or "127.0.0.1") if asked.get("countryCode") else None,
        generate_token=generate and paying,
    )


async def pay(
    runtime: Services,
    tenant: Tenant,
    session: Session,
    body: Any,
    client_ip: str | None,
    attempts_log: list[AttemptRecord],
) -> Paid:
    """Run the session's operation for the customer's choice; store and sign the result."""
    require_payable(session, tenant.now())
    if session.busy:
        raise errors.conflict("sessionToken", "A payment of this session is already running.")
    choice = read_choice(runtime, session, body)
    card, view = card_of(tenant, session, choice)
    request = engine_request(session, card, client_ip)
    session.busy = True
    try:
        outcome = await engine.process(runtime, tenant, request, attempts_log)
    except DropConnection as exc:
        raise errors.unavailable(
            f"The payment service did not answer ({exc.reason}); check the dashboard before retrying."
        ) from None
    finally:
        session.busy = False
    now = tenant.now()
    attempts = [attempt.to_json() for attempt in outcome.attempts]
    data = results.build(session, outcome.result.to_json(), attempts, view, now)
    result_id = tenant.random_string(RESULT_ID_LENGTH)
    token = results.issue(tenant, session, result_id, data)
    success = data["upgChargeResults"]["operationResultCode"] in SUCCESSFUL
    stored = SessionResult(result_id, now, success, data, token)
    session.results[result_id] = stored
    tenant.sessions.grow(session, weights.SESSION_RESULT + weights.text(token) + weights.weigh(data))
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
