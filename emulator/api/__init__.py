"""Handlers of the published interface, one module per resource family.

A handler module is imported by the first call of one of its operations: the payment engine
and what it drives cost ``payemu serve`` 17.5 million instructions before its first answer,
and a run that never pays never needs them. :data:`MODULES` says which module answers which operations; each module's
``HANDLERS`` holds the functions.
"""

from __future__ import annotations

import functools
import importlib

from emulator.endpoints.deferred import OnFirstCall
from emulator.endpoints.pipeline import Handler

# module under emulator.api → the operation ids its HANDLERS answer
MODULES: dict[str, tuple[str, ...]] = {
    "apikey": ("ValidateApiKey",),
    "ewallet": ("StartSession", "ValidateResults"),
    "gateways": ("GatewayList",),
    "accounts": (
        "PaymentGatewayAccountsList",
        "PaymentGatewayAccountRetrieve",
        "PaymentGatewayAccountSet",
        "PaymentGatewayAccountDelete",
    ),
    "tokens": ("StoreStringToken", "StringTokenRetrieve", "StringTokenRetrieveMetaData", "Delete"),
    "tools": ("CountryLookup", "BrandLookup", "IinLookup", "LuhnCheck", "CardValidate"),
    "payments": (
        "GatewayCharge",
        "GatewayAuthorize",
        "GatewayCapture",
        "GatewayVoid",
        "GatewayRefund",
        "GatewayTokenize",
        "GatewayStatus",
    ),
}


def handlers() -> dict[str, Handler]:
    """operationId → handler, for every operation payemu has built (each imported by its first call)."""
    table: dict[str, Handler] = {}
    for module, operation_ids in MODULES.items():
        for operation_id in operation_ids:
            if operation_id in table:
                raise RuntimeError(f"{operation_id} is handled twice")
            table[operation_id] = OnFirstCall(functools.partial(_imported, module, operation_id))
    return table


def _imported(module: str, operation_id: str) -> Handler:
    handlers: dict[str, Handler] = importlib.import_module(f"{__name__}.{module}").HANDLERS
    return handlers[operation_id]
