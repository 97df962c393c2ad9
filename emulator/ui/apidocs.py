"""``GET /docs``: an interactive page over the served schema (Swagger UI, offline).

Swagger UI's files come from ``swagger-ui-bundle``; the start script is payemu's own (no
inline code under the page's policy). Without an admin key the page fills in the first
sandbox key, which the start page shows anyway."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from emulator.endpoints.deferred import OnFirstCall
from emulator.ui.home import SCHEMA

if TYPE_CHECKING:
    from starlette.staticfiles import StaticFiles

    from emulator.tenants.runtime import Runtime

PATH = "/docs"
ASSETS = PATH + "/static"


def _assets() -> StaticFiles:
    """Swagger UI's files (the package and Starlette's file serving imported by the first
    request for one)."""
    import swagger_ui_bundle  # type: ignore[import-untyped]
    from starlette.staticfiles import StaticFiles

    return StaticFiles(directory=swagger_ui_bundle.swagger_ui_path)


def routes(runtime: Runtime) -> list[BaseRoute]:
    return [
        Route(PATH, _page(runtime), methods=["GET"], name="payemu-apidocs"),
        Mount(ASSETS, app=OnFirstCall(_assets), name="payemu-apidocs-static"),
    ]


def _page(runtime: Runtime) -> Any:
    async def page(request: Request) -> Response:
        from emulator.ui.routes import render

        keys = [k.key for k in runtime.settings.keys if k.is_sandbox]
        key = keys[0] if keys and not runtime.settings.admin_key else ""
        return render("apidocs.html", assets=ASSETS, schema=SCHEMA, key=key)

    return page
