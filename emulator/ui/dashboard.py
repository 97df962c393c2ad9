"""What the dashboard at ``/_emulator/?key=...`` shows of one tenant.

Everything is read straight from the tenant's stores and masked on the way out (journal
bodies once more); stored accounts show credential names, never values. Long lists come
a page at a time (:mod:`~emulator.ui.paging`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from emulator.domain.clock import isoformat
from emulator.domain.masking import references
from emulator.domain.vocabulary import RESULT_CODES
from emulator.stores import ewallet_sessions as sessions
from emulator.ui import chart, paging, payments, rules
from emulator.ui import format as pagefmt

if TYPE_CHECKING:
    from emulator.tenants.runtime import Runtime
    from emulator.tenants.tenants import Tenant

T = TypeVar("T")

FILTERS = {"state": "state", "gateway": "gateway", "result": "resultCode"}  # query parameter → field
# rows per page of each list (see paging.py): the page's height stays bounded
PAGE_SIZES = {"payments": 20, "sessions": 10, "tokens": 10, "journal": 20}


def default_key(runtime: Runtime) -> str:
    """The key the dashboard opens without ``?key=``: the first sandbox key configured."""
    keys = runtime.settings.keys
    return next((k.key for k in keys if k.is_sandbox), keys[0].key if keys else "")


pretty = pagefmt.pretty


def _short(value: Any) -> str:
    return pagefmt.short(value) if isinstance(value, datetime) else str(value or "")


def _moment(value: Any) -> Any:
    return isoformat(value) if isinstance(value, datetime) else value


def view(
    runtime: Runtime,
    tenant: Tenant,
    base_url: str,
    filters: Mapping[str, str] | None = None,
    pages: Mapping[str, str] | None = None,
    links: tuple[str, Mapping[str, str]] = ("", {}),
) -> dict[str, Any]:
    """Everything the dashboard shows of ``tenant`` (``pages``: each list's page; ``links``: kept query)."""
    now = tenant.now()
    chosen = {name: value for name, value in (filters or {}).items() if name in FILTERS and value}
    asked = {param: value for param, value in (pages or {}).items() if param in paging.PARAMS.values()}
    base, keep = links

    def paged(rows: Sequence[T], name: str) -> paging.Pager[T]:
        return paging.paginate(rows, paging.PARAMS[name], asked, base, keep, PAGE_SIZES[name])

    options = filter_options(tenant)  # settles Accepted operations whose time has come
    transactions = tenant.ledger.transactions()
    # the journal is read as a stream, each entry parsed and let go; its page renders only
    # the entries it shows (by id), so a render holds no more than a page of them
    found = payments.rows(transactions, tenant.journal, now, chosen)
    return {
        "tenant": {
            "userName": tenant.user_name,
            "accountId": tenant.account_id,
            "isSandbox": tenant.is_sandbox,
        },
        "clock": {
            "now": isoformat(now),
            "frozen": tenant.clock.frozen,
            "offset": str(tenant.clock.offset),
        },
        "payments": _rows_of(paged(found, "payments"), now),
        "filters": chosen,
        "filter_options": options,
        "chart": chart.outcomes((tx.created_at, chart.answered(tx)) for tx in transactions),
        "result_codes": RESULT_CODES,
        "glyphs": chart.GLYPHS,
        "sessions": paged([session_row(s, now, base_url) for s in sessions.iter_sessions(tenant)], "sessions"),
        "tokens": paged(
            [
                {"token": t.token, "createTime": _moment(t.create_time), "createdText": _short(t.create_time)}
                for t in reversed(list(tenant.vault.values()))
            ],
            "tokens",
        ),
        "accounts": [
            {
                "name": a.name,
                "gateway": a.gateway,
                "creationTime": _moment(a.creation_time),
                "createdText": _short(a.creation_time),
                "credentialKeys": [key for key, _ in a.credentials],
            }
            for a in tenant.accounts.values()
        ],
        "certificates": tenant.certificates.names(),
        "journal": _journal_page(tenant, paged(tenant.journal.ids()[::-1], "journal")),
        "journal_total": len(tenant.journal),
        "journal_dropped": tenant.journal.dropped,
        "rule_groups": rules.view(runtime, tenant),
    }


def _rows_of(page: paging.Pager[payments.Payment], now: datetime) -> paging.Pager[dict[str, Any]]:
    """The page's payments as rows (only those shown are looked at closely)."""
    return page.shown_as([payment_row(p, now) for p in page.items])


def _journal_page(tenant: Tenant, page: paging.Pager[int]) -> paging.Pager[dict[str, Any]]:
    """The page's entries (its ids, newest first), rendered and masked now."""
    shown = tenant.journal.entries(sorted(page.items))
    return page.shown_as([journal_row(entry) for entry in reversed(shown)])


def payment_row(payment: payments.Payment, now: datetime) -> dict[str, Any]:
    final = payments.state(payment, now)
    code = payments.code(payment, now)
    return {
        "p": payment,
        "state": final,
        "code": code,
        "rejectReason": payment.last.reject_reason if code != "Success" else None,
        "failed": code not in ("Success", "Accepted"),
    }


def filter_options(tenant: Tenant) -> dict[str, list[str]]:
    """The values each filter can take: those present in the tenant's transactions."""
    found: dict[str, set[str]] = {name: set() for name in FILTERS}
    for transaction in tenant.ledger.transactions():
        data = transaction.to_json()
        for name, field in FILTERS.items():
            if data.get(field) is not None:
                found[name].add(str(data[field]))
    return {name: sorted(values) for name, values in found.items()}


def session_row(session: sessions.Session, now: datetime, base_url: str) -> dict[str, Any]:
    paid = session.paid_result()
    final = paid.data["upgChargeResults"] if paid else None
    return {
        "token": session.token,
        "operation": session.operation,
        "amount": session.amount,
        "currency": session.currency,
        "state": session.state(now),
        "expiresAt": isoformat(session.expires_at),
        "expiresText": pagefmt.short(session.expires_at),
        "amountText": pagefmt.money(session.amount, session.currency),
        "pageUrl": f"{base_url}/_emulator/pay/{session.token}",
        "payments": len(session.results),
        "gatewayReference": final["gatewayReference"] if final else None,
        "account": paid.data["providerAccountId"] if paid else None,
    }


def _result_code(response: Any) -> str | None:
    if not isinstance(response, dict):
        return None
    nested = response.get("upgChargeResults")
    code = response.get("operationResultCode") or (
        nested.get("operationResultCode") if isinstance(nested, dict) else None
    )
    return str(code) if code else None


def _is_error(status: Any, result_code: str | None) -> bool:
    """4xx/5xx, a dropped connection or a declined or failed operation."""
    return not isinstance(status, int) or status >= 400 or result_code not in (None, "Success", "Accepted")


def journal_row(entry: dict[str, Any]) -> dict[str, Any]:
    keep = references(entry.get("request"), entry.get("response"), entry.get("attempts"))
    result_code = _result_code(entry.get("response"))
    return {
        "id": entry.get("id"),
        "time": entry.get("time"),
        "timeText": pagefmt.readable_short(entry.get("time")),
        "method": entry.get("method"),
        "path": entry.get("path"),
        "status": entry.get("status"),
        "fault": entry.get("fault"),
        "operationId": entry.get("operationId"),
        "latencyMs": entry.get("latencyMs"),
        "resultCode": result_code,
        "error": _is_error(entry.get("status"), result_code),
        "request": pretty(entry.get("request"), keep),
        "response": pretty(entry.get("response"), keep),
        "attempts": pretty(entry.get("attempts") or [], keep),
        "warnings": "; ".join(entry.get("warnings") or []),
    }


def scenario_rows(runtime: Runtime, tenant: Tenant) -> list[dict[str, Any]]:
    return [{**row, "file": group["file"]} for group in rules.view(runtime, tenant) for row in group["rules"]]
