"""Handlers of the published interface, one module per resource family."""

from __future__ import annotations

from emulator.api import accounts, apikey, ewallet, gateways, payments, tokens, tools
from emulator.endpoints.pipeline import Handler


def handlers() -> dict[str, Handler]:
    """operationId → handler, for every operation payemu has built."""
    table: dict[str, Handler] = {}
    for module in (apikey, ewallet, gateways, accounts, tokens, tools, payments):
        for operation_id, handler in module.HANDLERS.items():
            if operation_id in table:
                raise RuntimeError(f"{operation_id} is handled twice")
            table[operation_id] = handler
    return table
