"""``GET /``: the start page a browser lands on, linking what payemu serves and saying where
the full docs are. A program asking for ``/`` gets the usual JSON 404."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.contract.wire import error_response
from emulator.domain import errors
from emulator.domain.release import INTERFACE_VERSION, __version__

if TYPE_CHECKING:
    from emulator.tenants.runtime import Runtime

SCHEMA = "/swagger/1.0/swagger.json"
CONTROL_SCHEMA = "/_emulator/openapi.json"


def wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


def routes(runtime: Runtime) -> list[BaseRoute]:
    return [Route("/", _home(runtime), methods=["GET"], name="payemu-home")]


def _home(runtime: Runtime) -> Any:
    async def home(request: Request) -> Response:
        if not wants_html(request):
            return error_response(errors.not_found("path", "No resource at GET /."))
        from emulator.catalog.docs_table import by_level  # (the catalog's table: on the first visit)
        from emulator.ui.routes import render

        keys = [k.key for k in runtime.settings.keys if k.is_sandbox]
        return render(
            "home.html",
            version=__version__,
            interface=INTERFACE_VERSION,
            schema=SCHEMA,
            control_schema=CONTROL_SCHEMA,
            sandbox_key=keys[0] if keys and not runtime.settings.admin_key else None,
            admin=bool(runtime.settings.admin_key),
            request_base=str(request.base_url).rstrip("/"),
            levels=by_level(runtime.catalog),
            gateway_count=len(runtime.catalog),
        )

    return home
