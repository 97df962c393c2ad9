"""The yardstick: plain Starlette answering a constant JSON on payemu's paths."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

RESULT = {
    "authorizationCode": "123456",
    "currency": "USD",
    "amount": 10.5,
    "operationType": "Charge",
    "operationResultCode": "Success",
    "operationResultDescription": "Approved",
    "customGatewayResponse": None,
    "gatewayName": "NULLSuccess",
    "gatewayReference": "NULL-ABCDEFGHIJKLMNOPQRST",
    "gatewayResultCode": "0",
    "gatewayResultDescription": "Approved",
    "gatewayResultSubCode": None,
    "gatewayResultSubDescription": None,
    "gatewayToken": None,
    "rejectReasonCode": None,
}
TOKEN = {"token": "A" * 32, "createTime": "2030-01-01T00:00:00.000Z"}


async def charge(request: Request) -> JSONResponse:
    await request.body()
    return JSONResponse(RESULT)


async def token(request: Request) -> JSONResponse:
    await request.body()
    return JSONResponse(TOKEN, status_code=201)


async def api_key(request: Request) -> JSONResponse:
    return JSONResponse({"status": "OK", "userName": "x", "accountId": 1, "isSandbox": True})


app = Starlette(
    routes=[
        Route("/PaymentGateway/charge", charge, methods=["POST"]),
        Route("/StringTokens", token, methods=["POST"]),
        Route("/Utils/apiKey", api_key, methods=["GET"]),
    ]
)
