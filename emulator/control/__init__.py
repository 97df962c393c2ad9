"""The control API under ``/_emulator``: what CI suites use to drive payemu.

It has its own OpenAPI document (``/_emulator/openapi.json``) and goes through the same
pipeline as the published interface, but is not journaled. Calls act on the tenant of
the caller's ``X-Api-Key``. A query parameter an operation does not document is refused
(a JSON 400 naming it, the allowed ones and the closest), never ignored: a mistyped
filter would otherwise answer as if it were not there."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.contract.openapi import OpenApi
from emulator.contract.wire import json_response
from emulator.control import certificates, clock, interface, journal, scenarios, settings, tenants, transactions
from emulator.control.strict import refuse_unknown_query
from emulator.domain import errors
from emulator.domain.datafiles import data_path
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.endpoints.routing import build_routes

if TYPE_CHECKING:
    from emulator.tenants.runtime import Runtime

PREFIX = "/_emulator"
DOCUMENT_PATH = PREFIX + "/openapi.json"
MODULES = (tenants, scenarios, journal, transactions, clock, certificates, interface, settings)


def control_schema_path() -> Path:
    return data_path("control.json")


def handlers() -> dict[str, Handler]:
    table: dict[str, Handler] = {}
    for module in MODULES:
        for operation_id, handler in module.HANDLERS.items():
            if operation_id in table:
                raise RuntimeError(f"{operation_id} is handled twice")
            table[operation_id] = _known_query(handler)
    return table


def _known_query(handler: Handler) -> Handler:
    """``handler``, called once every query parameter of the request is one its operation documents."""

    async def checked(call: Call) -> Reply:
        refuse_unknown_query(call)
        return await handler(call)

    return checked


async def _unhandled(call: Call) -> Reply:
    raise errors.internal(f"payemu bug: no handler for {call.operation.operation_id}.")


def routes(runtime: Runtime) -> list[BaseRoute]:
    api = OpenApi.load(control_schema_path())
    api.own = True
    runtime.control_api = api

    async def document(request: Request) -> Response:
        return json_response(200, api.document)

    table: list[BaseRoute] = [Route(DOCUMENT_PATH, document, methods=["GET"])]
    table += build_routes(runtime, api, handlers(), _unhandled, journal=False)
    return table
