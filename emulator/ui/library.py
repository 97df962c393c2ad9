"""The endpoints the real eWallet JS library calls, under :data:`LIBRARY_PREFIX`.

Calls carry ``Authorization: Bearer <session token>``, checked by the issuing tenant.
A decline is a 200 whose result token says so: the library turns any status of 400 or
more into a generic failure. The routes sit behind CORS and go through the pipeline
(``emulator/data/library.json``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.routing import BaseRoute, Mount, Route, Router

from emulator.api.ewallet import LIBRARY_PREFIX
from emulator.contract.openapi import OpenApi
from emulator.domain import errors
from emulator.domain.cards import default_table
from emulator.domain.datafiles import data_path
from emulator.domain.masking import mask_pan
from emulator.domain.model import AttemptRecord
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.endpoints.routing import build_routes
from emulator.ewallet import cardform, payment
from emulator.ewallet.cardform import Desk
from emulator.stores import ewallet_sessions as sessions

if TYPE_CHECKING:
    from emulator.tenants.runtime import Runtime
    from emulator.tenants.tenants import Tenant

WALLET = sessions.WALLET
BEARER = "bearer "
CORS_HEADERS = ["authorization", "content-type"]


def bearer(request: Request) -> str:
    given = request.headers.get("authorization", "")
    return given[len(BEARER) :].strip() if given[: len(BEARER)].lower() == BEARER else ""


def owner(runtime: Runtime, token: str) -> tuple[Tenant, sessions.Session] | None:
    """The tenant and session of a bearer token payemu signed, else None."""
    found = sessions.find(runtime, token) if token else None
    if found is None or found[0].open_token(token) is None:
        return None
    return found


def routes(runtime: Runtime) -> list[BaseRoute]:
    api = OpenApi.load(data_path("library.json"))
    api.own = True
    desk = Desk()

    def tenant_of(request: Request) -> Tenant | None:
        found = owner(runtime, bearer(request))
        return found[0] if found else None

    built = build_routes(runtime, api, handlers(runtime, desk), _unhandled, tenant_of=tenant_of)
    inner = [
        Route(r.path[len(LIBRARY_PREFIX) :], r.endpoint, methods=sorted(r.methods or ()), name=r.name)
        for r in built
        if isinstance(r, Route)
    ]
    app = CORSMiddleware(
        Router(inner), allow_origins=["*"], allow_methods=["GET", "POST"], allow_headers=CORS_HEADERS, max_age=600
    )
    return [Mount(LIBRARY_PREFIX, app=app, name="payemu-ewallet-library")]


async def _unhandled(call: Call) -> Reply:
    raise errors.internal(f"payemu bug: no handler for {call.operation.operation_id}.")


def _session(runtime: Runtime, call: Call) -> tuple[Tenant, sessions.Session]:
    found = owner(runtime, bearer(call.request))
    if found is None:
        raise errors.ApiError(
            401,
            [("Authorization", ["Send Authorization: Bearer <session token> with a token payemu issued (unaltered)."])],
        )
    return found


def _open(runtime: Runtime, call: Call) -> tuple[Tenant, sessions.Session]:
    """The call's session, which must still be payable."""
    tenant, session = _session(runtime, call)
    payment.require_payable(session, tenant.now())
    return tenant, session


def _wallet(call: Call) -> None:
    name = call.query.get("eWalletName")
    if name is not None and name != WALLET:
        raise errors.invalid("eWalletName", f"payemu emulates the {WALLET} wallet only, not {name}.")


def _json_text(text: str, field: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise errors.invalid(field, "The body is not the JSON text the card form sends.") from None


def answer(success: bool, message: str = "", data: str | None = None) -> dict[str, Any]:
    return {"success": success, "message": message, "data": data}


def handlers(runtime: Runtime, desk: Desk) -> dict[str, Handler]:
    async def validate_session(call: Call) -> Reply:
        _wallet(call)
        tenant, session = _open(runtime, call)
        form = {
            "authenticationOption": cardform.authentication(runtime, tenant, session),
            "operation": session.operation,
            "amount": session.amount,
            "currency": session.currency,
            "allowedBrands": session.allowed_brands,
            "merchantName": tenant.user_name,
            "storedCards": [
                {
                    "index": index,
                    "brand": card.get("brand") or "Card",
                    "lastDigits": card["lastDigits"],
                    "expirationMonth": card["expirationMonth"],
                    "expirationYear": card["expirationYear"],
                    "nameOnCard": card.get("nameOnCard"),
                }
                for index, card in enumerate(session.stored_cards)
            ],
        }
        return Reply(200, answer(True, "", json.dumps(form)))

    async def brand(call: Call) -> Reply:
        _session(runtime, call)
        found = default_table().lookup(call.query["iin"]).brand
        return Reply(
            200,
            {
                "iin": call.query["iin"],
                "brand": found.name if found else None,
                "brandLogoUrl": found.logo_url if found else None,
            },
        )

    async def enter_card(call: Call) -> Reply:
        tenant, session = _open(runtime, call)
        choice = payment.read_choice(runtime, session, call.body)
        _, view = payment.card_of(tenant, session, choice)
        reference = desk.enter(tenant, session, choice)
        masked = (
            mask_pan(view.number) if view.number else "•••• " + session.stored_cards[choice["storedCard"]]["lastDigits"]
        )
        return Reply(200, {"cardRef": reference, "brand": view.brand, "maskedCard": masked})

    async def pay(call: Call) -> Reply:
        _wallet(call)
        tenant, session = _open(runtime, call)
        wanted = cardform.authentication(runtime, tenant, session)
        if wanted == cardform.NO_AUTHENTICATION:  # the body is the JSON of the form's CardData
            given = _json_text(call.body, "body")
            entry = desk.entry(tenant, session, given.get("cardRef") if isinstance(given, dict) else None)
        elif call.body.lstrip().startswith("{"):
            raise errors.invalid("body", "This session asks for an OTP challenge first: pay with its transactionId.")
        else:  # the body is the transactionId of the challenge
            entry = desk.passed(tenant, session, call.body)
        client_ip = call.request.client.host if call.request.client else None
        attempts: list[AttemptRecord] = []
        try:
            paid = await payment.pay(runtime, tenant, session, entry.choice, client_ip, attempts)
        finally:
            call.attempts.extend(attempt.to_json() for attempt in attempts)
        return Reply(200, {"token": paid.result.token})

    async def start_payment(call: Call) -> Reply:
        _wallet(call)
        tenant, session = _open(runtime, call)
        given = _json_text(call.body, "body")
        entry = desk.entry(tenant, session, given.get("cardRef") if isinstance(given, dict) else None)
        transaction_id = desk.challenge(tenant, session, entry)
        return Reply(200, {"success": True, "message": "", "transactionId": transaction_id})

    async def send_otp(call: Call) -> Reply:
        _wallet(call)
        tenant, session = _session(runtime, call)
        challenge = desk.answer(tenant, session, call.query["transactionId"], call.body)
        return Reply(200, answer(challenge.status == cardform.PASSED, challenge.message, challenge.status))

    async def otp_status(call: Call) -> Reply:
        _wallet(call)
        tenant, session = _session(runtime, call)
        challenge = desk.find_challenge(tenant, session, call.query["transactionId"])
        return Reply(200, answer(True, challenge.message, challenge.status))

    async def covered_countries(call: Call) -> Reply:
        return Reply(200, {"countries": []})

    return {
        "LibraryValidateSession": validate_session,
        "LibraryBrand": brand,
        "LibraryEnterCard": enter_card,
        "LibraryCharge": pay,
        "LibraryTokenize": pay,
        "LibraryGatewayTokenize": pay,
        "LibraryStartPayment": start_payment,
        "LibrarySendOtp": send_otp,
        "LibraryOtpStatus": otp_status,
        "LibraryCoveredCountries": covered_countries,
    }
