"""Control: the caller's ledger, as the engine's masked ``Transaction.to_json()``."""

from __future__ import annotations

from emulator.http.pipeline import Call, Handler, Reply


async def list_transactions(call: Call) -> Reply:
    return Reply(200, {"transactions": [t.to_json() for t in call.tenant.ledger.transactions()]})


HANDLERS: dict[str, Handler] = {"ControlTransactions": list_transactions}
