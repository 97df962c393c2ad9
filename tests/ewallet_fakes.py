"""Shared set-up for the eWallet tests: stored accounts, a vault card, and a stand-in for
the payment engine (NULLFailure declines, anything else approves; fallbacks in order)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from emulator import vault
from emulator.accounts import StoredAccount
from emulator.clock import isoformat
from emulator.tenants import Tenant

CARD = "4111111111111111"


@dataclass
class FakeOutcome:
    result: dict[str, Any]
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    attempts: list[dict[str, Any]] = field(default_factory=list)


def operation_result(operation: str, code: str, gateway: str, amount: float, currency: str,
                     reference: str | None, token: str | None = None) -> dict[str, Any]:
    return {
        "authorizationCode": "AUTH42" if code == "Success" else None,
        "currency": currency,
        "amount": amount,
        "operationType": operation,
        "operationResultCode": code,
        "operationResultDescription": "Approved" if code == "Success" else "Declined",
        "customGatewayResponse": {"raw": "gateway payload"},
        "gatewayName": gateway,
        "gatewayReference": reference,
        "gatewayResultCode": "00" if code == "Success" else "05",
        "gatewayResultDescription": None,
        "gatewayResultSubCode": None,
        "gatewayResultSubDescription": None,
        "gatewayToken": token,
        "rejectReasonCode": None if code == "Success" else "CardDeclined",
    }


def setup_tenant(tenant: Tenant) -> str:
    """Accounts ``primary`` (NULLFailure) and ``backup`` (NULLSuccess); returns the vault
    token of a stored Visa card."""
    tenant.accounts["primary"] = StoredAccount("primary", "NULLFailure", [], tenant.now())
    tenant.accounts["backup"] = StoredAccount("backup", "NULLSuccess", [], tenant.now())
    return vault.store(tenant, CARD).token


class FakeEngine:
    """Records every call; answers like the contract's ``engine.process``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def process(self, runtime: Any, tenant: Tenant, operation: str, request: dict[str, Any],
                      call_attempts: list[dict[str, Any]]) -> FakeOutcome:
        self.calls.append((operation, request))
        names = [request["paymentGatewayAccountName"]]
        names += [f["paymentGatewayAccountName"] for f in request.get("fallbackUpgs") or []]
        attempts: list[dict[str, Any]] = []
        result: dict[str, Any] = {}
        for number, name in enumerate(names, 1):
            gateway = tenant.accounts[name].gateway
            code = "Rejected" if gateway == "NULLFailure" else "Success"
            reference = f"ref{number}{tenant.random_string(8)}" if code == "Success" else None
            tokenizing = request.get("generateToken") or operation == "Tokenize"
            token = "gwtok_1" if code == "Success" and tokenizing else None
            result = operation_result(operation, code, gateway, request.get("amount", 0.0),
                                      request.get("currency", "USD"), reference, token)
            attempts.append({
                "attemptNumber": number, "paymentGatewayAccountName": name, "gatewayName": gateway,
                "isFallback": number > 1, "timestamp": isoformat(tenant.now()), "result": result,
            })
            call_attempts.append({"attempt": number, "account": name, "card": request["card"]})
            if code == "Success":
                break
        return FakeOutcome(result, 200 if result["operationResultCode"] == "Success" else 409, {}, attempts)
