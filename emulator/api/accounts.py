"""``/PaymentGatewayAccounts``: stored gateway accounts of the caller's key."""

from __future__ import annotations

from emulator import accounts
from emulator.pipeline import Call, Handler, Reply


async def account_list(call: Call) -> Reply:
    return Reply(200, [account.to_brief() for account in call.tenant.accounts.listing()])


async def account_retrieve(call: Call) -> Reply:
    return Reply(200, call.tenant.accounts.require(call.path["name"]).to_full())


async def account_set(call: Call) -> Reply:
    account = accounts.put(call.tenant, call.runtime.catalog, call.path["name"], call.body)
    return Reply(200, account.to_full())


async def account_delete(call: Call) -> Reply:
    name = call.path["name"]
    call.tenant.accounts.require(name)
    call.tenant.accounts.delete(name)
    return Reply(200)


HANDLERS: dict[str, Handler] = {
    "PaymentGatewayAccountsList": account_list,
    "PaymentGatewayAccountRetrieve": account_retrieve,
    "PaymentGatewayAccountSet": account_set,
    "PaymentGatewayAccountDelete": account_delete,
}
