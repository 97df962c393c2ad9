"""The pages payemu serves outside the published interface: the hosted payment page
(``/_emulator/pay/{token}``), its static files and the dashboard (``/_emulator/?key=``).

Errors a program gets are JSON (:mod:`emulator.domain.errors`); a browser gets the same
message as a small HTML page."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from emulator.contract.openapi import OpenApi
from emulator.contract.wire import error_response
from emulator.domain import errors
from emulator.domain.datafiles import data_path
from emulator.domain.model import AttemptRecord
from emulator.endpoints import admin
from emulator.endpoints import origins as origins_
from emulator.endpoints.pipeline import Call, Reply
from emulator.endpoints.routing import build_routes
from emulator.ewallet import payment
from emulator.stores import ewallet_sessions as sessions
from emulator.ui import format as pagefmt
from emulator.ui import library, security

if TYPE_CHECKING:
    from jinja2 import Environment

    from emulator.tenants.runtime import Runtime
    from emulator.tenants.tenants import Tenant

PREFIX = "/_emulator"
STATIC = PREFIX + "/static"
HERE = Path(__file__).resolve().parent
PAGE_HEADERS = security.headers(embeddable=False)  # the dashboard, messages, JSON answers
OPERATION_LABELS = {
    "CHARGE": "Payment",
    "CHARGE_AND_TOKENIZE": "Payment; the card is saved",
    "PREAUTH_AND_TOKENIZE": "Authorization (captured later); the card is saved",
    "TOKENIZE": "The card is saved for later payments",
}


@cache
def templates() -> Environment:
    """The page templates (jinja2 is imported on the first page, not at start-up)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    return Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def routes(runtime: Runtime) -> list[BaseRoute]:
    return [
        Route(PREFIX + "/", _dashboard(runtime), methods=["GET"], name="payemu-dashboard"),
        Route(PREFIX + "/pay/{token}", _page(runtime), methods=["GET"], name="payemu-pay"),
        *_page_calls(runtime),
        *library.routes(runtime),
        Mount(STATIC, app=StaticFiles(directory=HERE / "static"), name="payemu-static"),
        Route("/favicon.ico", pagefmt.favicon, methods=["GET"], name="payemu-favicon"),
    ]


def wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


def render(name: str, status: int = 200, headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
    html = templates().get_template(name).render(static=STATIC, **context)
    return HTMLResponse(html, status_code=status, headers=headers or PAGE_HEADERS)


def _problem(request: Request, error: errors.ApiError, heading: str, key_form: str | None = None) -> Response:
    if not wants_html(request):
        return error_response(error)
    text = " ".join(" ".join(messages) for _, messages in error.entries)
    return render("message.html", error.status, heading=heading, text=text, key_form=key_form)


# -- the hosted payment page --------------------------------------------------------------
def _page(runtime: Runtime) -> Any:
    async def endpoint(request: Request) -> Response:
        token = request.path_params["token"]
        found = sessions.find(runtime, token)
        if found is None:
            return _problem(
                request, errors.not_found("sessionToken", "No payment session has this token."), "Unknown session"
            )
        tenant, session = found
        return _render_page(request, tenant, session, runtime.settings.return_origins)

    return endpoint


def safe_return_url(raw: str | None, origins: tuple[str, ...] = ()) -> tuple[str, str | None]:
    """(URL to redirect to, warning): only http(s) URLs of allowed origins."""
    return origins_.return_url(raw, origins)


def _money(amount: float, currency: str) -> str:
    return pagefmt.money(amount, currency)


def _render_page(request: Request, tenant: Tenant, session: sessions.Session, origins: tuple[str, ...]) -> HTMLResponse:
    asked = session.request
    state = session.state(tenant.now())
    return_url, warning = safe_return_url(request.query_params.get("returnUrl"), origins)
    target = origins_.message_origin(request.query_params.get("origin"), return_url, origins)
    tokenize_only = session.operation == "TOKENIZE"
    amount_text = _money(session.amount, session.currency)
    stored = [
        {
            "index": index,
            "brand": card.get("brand") or "Card",
            "lastDigits": card["lastDigits"],
            "expiry": f"{card['expirationMonth']:02d}/{card['expirationYear']}",
            "name": card.get("nameOnCard"),
        }
        for index, card in enumerate(session.stored_cards)
    ]
    customer = " · ".join(v for v in (asked.get("customerName"), asked.get("customerEmail")) if v)
    paid = session.paid_result()
    return render(
        "pay.html",
        headers=security.headers(embeddable=True, configured=origins),
        target_origin=target,
        action=request.url.path,
        return_url=return_url,
        return_warning=warning,
        state=state,
        merchant=tenant.user_name,
        mode=asked["mode"],
        tokenize_only=tokenize_only,
        amount_text=amount_text,
        operation_label=OPERATION_LABELS[session.operation],
        note=asked.get("paymentNote"),
        customer=customer,
        brands=session.allowed_brands,
        stored_cards=stored,
        button="Save card" if tokenize_only else f"Pay {amount_text}",
        expires_at=pagefmt.readable(session.expires_at),
        paid=paid.data if paid else None,
    )


def _page_calls(runtime: Runtime) -> list[Route]:
    """``POST /_emulator/pay/{token}`` through the same pipeline as every documented operation."""
    api = OpenApi.load(data_path("pages.json"))
    api.own = True

    def tenant_of(request: Request) -> Tenant | None:
        found = sessions.find(runtime, request.path_params.get("token", ""))
        return found[0] if found else None

    async def pay(call: Call) -> Reply:
        found = sessions.find(runtime, call.path["token"])
        if found is None:
            raise errors.not_found("sessionToken", "No payment session has this token.")
        tenant, session = found
        client_ip = call.request.client.host if call.request.client else None
        attempts: list[AttemptRecord] = []
        try:
            paid = await payment.pay(runtime, tenant, session, call.body, client_ip, attempts)
        finally:
            call.attempts.extend(attempts)  # rendered when the journal is first read
        return Reply(200, paid.summary, dict(PAGE_HEADERS))

    async def unhandled(call: Call) -> Reply:
        raise errors.internal(f"payemu bug: no handler for {call.operation.operation_id}.")

    return build_routes(runtime, api, {"HostedPagePay": pay}, unhandled, tenant_of=tenant_of)


# -- the dashboard -------------------------------------------------------------------------
def _dashboard(runtime: Runtime) -> Any:
    async def endpoint(request: Request) -> Response:
        # the dashboard's modules load on its first request, not at start-up
        from emulator.ui import chart, dashboard, paging, story

        given = request.headers.get(admin.HEADER) or request.query_params.get("admin")
        if not admin.allowed(runtime.settings, given):
            return _problem(
                request,
                errors.ApiError(
                    401,
                    [
                        (
                            admin.HEADER,
                            [
                                "This payemu is protected by an admin key: send X-Admin-Key "
                                "or open /_emulator/?admin=<admin key>."
                            ],
                        )
                    ],
                ),
                "Admin key needed",
            )
        key = request.query_params.get("key") or dashboard.default_key(runtime)
        tenant = runtime.tenants.get(key)
        if tenant is None:
            return _problem(
                request,
                errors.unauthenticated("The API key is not valid. Open /_emulator/?key=<your API key>."),
                "Unknown API key",
                key_form=PREFIX + "/",
            )
        keep = {"key": key, **({"admin": given} if runtime.settings.admin_key and given else {})}
        reference = request.query_params.get("tx")
        if reference:
            told = story.timeline(tenant, reference)
            if told is None:
                return _problem(
                    request,
                    errors.not_found("tx", "No transaction of this tenant has this reference."),
                    "Unknown transaction",
                )
            return render(
                "transaction.html",
                key=key,
                dashboard=PREFIX + "/",
                back=f"{PREFIX}/?{urlencode(keep)}",
                tenant_name=tenant.user_name,
                story=told,
                glyphs=chart.GLYPHS,
            )
        filters = {name: request.query_params.get(name, "") for name in dashboard.FILTERS}
        chosen = {name: value for name, value in filters.items() if value}
        pages = {p: request.query_params[p] for p in paging.PARAMS.values() if request.query_params.get(p)}
        base_url = str(request.base_url).rstrip("/")
        context = dashboard.view(runtime, tenant, base_url, filters, pages, (PREFIX + "/", {**keep, **chosen}))
        context["detail_url"] = f"{PREFIX}/?{urlencode(keep)}&tx="
        if request.query_params.get("partial"):
            return render("dashboard_live.html", **context)
        partial_url = f"{PREFIX}/?{urlencode({**keep, **chosen, **pages, 'partial': '1'})}"
        return render(
            "dashboard.html",
            key=key,
            admin=keep.get("admin"),
            dashboard=PREFIX + "/",
            partial_url=partial_url,
            **context,
        )

    return endpoint
