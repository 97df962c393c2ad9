"""Result tokens and the answer of ``POST /EWalletOperations/validateResults``.

The token's ``pld`` is the client-side view the JS library's ``parseResultToken`` reads
(no gateway payload, the card masked); the full result stays with the tenant, which
answers it only to the tenant that owns the session."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from emulator.domain import errors
from emulator.domain.clock import isoformat
from emulator.domain.masking import mask_pan
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import SUCCESSFUL
from emulator.stores.ewallet_sessions import TOKENIZING, Session

if TYPE_CHECKING:
    from emulator.tenants.tenants import Tenant

FORMAT_VERSION = 1
PAYMENT_METHOD = "CardPay"
_OPERATION_RESULT_KEYS = (
    "authorizationCode",
    "currency",
    "amount",
    "operationType",
    "operationResultCode",
    "operationResultDescription",
    "customGatewayResponse",
    "gatewayName",
    "gatewayReference",
    "gatewayResultCode",
    "gatewayResultDescription",
    "gatewayResultSubCode",
    "gatewayResultSubDescription",
    "gatewayToken",
    "rejectReasonCode",
)


def issue(tenant: Tenant, session: Session, result_id: str, data: dict[str, Any]) -> str:
    return tenant.sign_token(
        {"v": FORMAT_VERSION, "a": tenant.account_id, "s": session.token, "r": result_id, "pld": client_view(data)}
    )


def redeem(tenant: Tenant, token: str) -> dict[str, Any]:
    """The EWalletResultData of a result token, for the tenant that owns it; else a 400."""
    claims = tenant.open_token(token)
    if claims is None or claims.get("v") != FORMAT_VERSION:
        raise errors.invalid("resultToken", "The result token is not one payemu issued, or it was altered.")
    session_token, result_id = claims.get("s"), claims.get("r")
    session = tenant.sessions.get(session_token) if isinstance(session_token, str) else None
    result = session.results.get(result_id) if session and isinstance(result_id, str) else None
    if claims.get("a") != tenant.account_id or result is None:
        raise errors.invalid("resultToken", "The result token does not belong to a session of this account.")
    return result.data


def client_view(data: dict[str, Any]) -> dict[str, Any]:
    """What the browser may read from the token: no gateway payload, card masked."""
    final = data.get("upgChargeResults")
    if final is not None:
        final = {**final, "customGatewayResponse": None}
    return {
        "clientSuccess": True,
        "clientErrorMessage": None,
        "selectedPaymentMethod": data["selectedPaymentMethod"],
        "upgChargeResults": final,
        "directChargeResults": None,
        "tokenAndMaskedCardModel": data["tokenAndMaskedCardModel"],
        # the failed attempts of a failover, as the merchant's server will see them
        "failedUpgChargeResults": [
            {**failed, "customGatewayResponse": None} for failed in data.get("failedUpgChargeResults") or []
        ],
    }


@dataclass(frozen=True)
class CardView:
    """A card as a payment page shows it (the full number only to mask it)."""

    number: str | None  # the full number, only to mask it here
    brand: str
    holder: str | None
    owner_id: str | None
    expiration_month: int
    expiration_year: int

    def bank_card(self) -> dict[str, Any]:
        return {
            "type": self.brand,
            "nameOnCard": self.holder,
            "issueNumber": None,
            "ownerId": self.owner_id,
            "securityCode": None,
            "number": mask_pan(self.number) if self.number else None,
            "expirationMonth": self.expiration_month,
            "expirationYear": self.expiration_year,
        }


def operation_result(value: dict[str, Any]) -> dict[str, Any]:
    """Exactly the OperationResult keys, never anything extra."""
    return {key: value.get(key) for key in _OPERATION_RESULT_KEYS}


def _moment(value: Any, fallback: datetime) -> str:
    if isinstance(value, datetime):
        return isoformat(value)
    return value if isinstance(value, str) and value else isoformat(fallback)


def build(
    session: Session, final: dict[str, Any], attempts: list[dict[str, Any]], card: CardView, now: datetime
) -> dict[str, Any]:
    """The EWalletResultData of one payment from the engine's result and attempt records."""
    final = operation_result(final)
    listed = [
        {
            **operation_result(a["result"]),
            "attemptNumber": int(a["attemptNumber"]),
            "paymentGatewayAccountId": a.get("paymentGatewayAccountName"),
            "isFallback": bool(a.get("isFallback")),
            "timestamp": _moment(a.get("timestamp"), now),
        }
        for a in attempts
    ]
    succeeded = final["operationResultCode"] in SUCCESSFUL
    winner = next((a for a in reversed(listed) if a["operationResultCode"] in SUCCESSFUL), None)
    token = final.get("gatewayToken") if succeeded else None
    if token is not None and not isinstance(token, str):
        token = json.dumps(token, separators=(",", ":"))
    tokenizing = session.operation in TOKENIZING
    return {
        "upgChargeResults": final,
        "directChargeResults": None,
        "tokenAndMaskedCardModel": {
            "bankCard": card.bank_card(),
            "threeDS": None,
            "errorMessage": None if succeeded or not tokenizing else final.get("operationResultDescription"),
            "token": token if tokenizing else None,
            "tokenLocation": final.get("gatewayName") if tokenizing and token else None,
        },
        "failedUpgChargeResults": [
            operation_result(a["result"]) for a in attempts if a["result"].get("operationResultCode") not in SUCCESSFUL
        ],
        "selectedPaymentMethod": PAYMENT_METHOD,
        "transactionAmount": final["amount"],
        "transactionCurrency": final["currency"],
        "transactionTimestamp": (winner or (listed[-1] if listed else {})).get("timestamp") or isoformat(now),
        "providerTransactionId": winner["gatewayReference"] if winner else None,
        "providerAuthorizationCode": winner["authorizationCode"] if winner else None,
        "providerAccountId": winner["paymentGatewayAccountId"] if winner else None,
        "attempts": listed,
    }
