"""``/StringTokens``: the string-token vault of the caller's key."""

from __future__ import annotations

from emulator import vault
from emulator.pipeline import Call, Handler, Reply


async def token_store(call: Call) -> Reply:
    entry = vault.store(call.tenant, call.body["payload"])
    return Reply(201, entry.to_meta(), {"Location": f"{call.base_url}/StringTokens/{entry.token}"})


async def token_retrieve(call: Call) -> Reply:
    return Reply(200, call.tenant.vault.require(call.path["token"]).to_full())


async def token_meta(call: Call) -> Reply:
    return Reply(200, call.tenant.vault.require(call.path["token"]).to_meta())


async def token_delete(call: Call) -> Reply:
    token = call.path["token"]
    call.tenant.vault.require(token)
    call.tenant.vault.delete(token)
    return Reply(200)


HANDLERS: dict[str, Handler] = {
    "StoreStringToken": token_store,
    "StringTokenRetrieve": token_retrieve,
    "StringTokenRetrieveMetaData": token_meta,
    "Delete": token_delete,  # the published export names it so
}
