"""``/PaymentGatewayAccounts``: stored gateway accounts of the caller's key."""

from __future__ import annotations

from typing import Any

from emulator.domain.clock import isoformat
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.stores import accounts
from emulator.stores.accounts import StoredAccount


def full(account: StoredAccount) -> dict[str, Any]:
    """``PaymentGatewayAccountFullOutputModel`` (with credential values)."""
    return {
        "name": account.name,
        "creationTime": isoformat(account.creation_time),
        "paymentGatewayName": account.gateway,
        "credentials": [{"key": key, "value": value} for key, value in account.credentials],
    }


def brief(account: StoredAccount) -> dict[str, Any]:
    """``PaymentGatewayAccountBriefOutputModel`` (no credentials)."""
    return {
        "name": account.name,
        "paymentGatewayName": account.gateway,
        "creationTime": isoformat(account.creation_time),
    }


async def account_list(call: Call) -> Reply:
    return Reply(200, [brief(account) for account in call.tenant.accounts.listing()])


async def account_retrieve(call: Call) -> Reply:
    return Reply(200, full(call.tenant.accounts.require(call.path["name"])))


async def account_set(call: Call) -> Reply:
    account = accounts.put(call.tenant, call.runtime.catalog, call.path["name"], call.body)
    return Reply(200, full(account))


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
