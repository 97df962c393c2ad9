"""``/StringTokens``: the string-token vault of the caller's key."""

from __future__ import annotations

from typing import Any

from emulator.domain.clock import isoformat
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.stores import vault
from emulator.stores.vault import StringToken


def meta(entry: StringToken) -> dict[str, Any]:
    """``StringTokenMetaDataOutputModel``: the token without its contents."""
    return {"token": entry.token, "createTime": isoformat(entry.create_time)}


def full(entry: StringToken) -> dict[str, Any]:
    """``StringTokenOutputModel``: the token with its contents."""
    return {"clearPayload": entry.payload, **meta(entry)}


async def token_store(call: Call) -> Reply:
    entry = vault.store(call.tenant, call.body["payload"])
    return Reply(201, meta(entry), {"Location": f"{call.base_url}/StringTokens/{entry.token}"})


async def token_retrieve(call: Call) -> Reply:
    return Reply(200, full(call.tenant.vault.require(call.path["token"])))


async def token_meta(call: Call) -> Reply:
    return Reply(200, meta(call.tenant.vault.require(call.path["token"])))


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
