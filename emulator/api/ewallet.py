"""``POST /EWalletOperations`` and ``POST /EWalletOperations/validateResults``.

A session's hosted payment page is ``<base>/_emulator/pay/<token>``, also given in the
``X-Payemu-Payment-Page`` header."""

from __future__ import annotations

import logging

from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.ewallet import results
from emulator.stores import ewallet_sessions as sessions

log = logging.getLogger("payemu")
PAGE_HEADER = "X-Payemu-Payment-Page"
LIBRARY_PREFIX = "/_emulator/ewallet/v1"  # the eWallet JS library's endpoints (the token's pld.url)


def page_url(base_url: str, token: str) -> str:
    return f"{base_url}/_emulator/pay/{token}"


async def start_session(call: Call) -> Reply:
    session = sessions.create(call.tenant, call.body, call.runtime, call.base_url + LIBRARY_PREFIX)
    url = page_url(call.base_url, session.token)
    log.info("eWallet %s session for %s %s: payment page %s", session.operation, session.amount, session.currency, url)
    return Reply(200, {"token": session.token}, {PAGE_HEADER: url})


async def validate_results(call: Call) -> Reply:
    return Reply(200, results.redeem(call.tenant, call.body))


HANDLERS: dict[str, Handler] = {"StartSession": start_session, "ValidateResults": validate_results}
