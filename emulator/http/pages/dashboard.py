"""What the dashboard at ``/_emulator/?key=...`` shows of one tenant.

Read straight from the tenant's stores, masked on the way out: transactions (with the
operations on them), eWallet sessions (with their payment-page links), string tokens
(metadata only), stored accounts (credential names, never values), certificates, the
journal (bodies are masked when recorded and masked again here), the scenario rules in
force and the virtual clock.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from emulator.http.pages import chart
from emulator.http.pages import format as pagefmt
from emulator.payments.clock import isoformat
from emulator.payments.ewallet import sessions
from emulator.payments.masking import mask, references

if TYPE_CHECKING:
    from emulator.payments.tenants import Tenant
    from emulator.runtime import Runtime

JOURNAL_SHOWN = 50
FILTERS = {"state": "state", "gateway": "gateway", "result": "resultCode"}  # query parameter → field
ROWS_SHOWN = 200
# Columns shown first when a transaction has them; other plain fields follow.
_LEADING_COLUMNS = (
    "reference",
    "gatewayReference",
    "operation",
    "operationType",
    "state",
    "amount",
    "currency",
    "gateway",
    "gatewayName",
    "account",
    "resultCode",
    "operationResultCode",
    "createdAt",
)


def default_key(runtime: Runtime) -> str:
    """The key the dashboard opens without ``?key=``: the first sandbox key configured."""
    keys = runtime.settings.keys
    return next((k.key for k in keys if k.is_sandbox), keys[0].key if keys else "")


def pretty(value: Any, keep: Collection[str] = ()) -> str:
    """``value`` masked (gateway references in ``keep`` stay) as indented JSON."""
    return json.dumps(mask(value, keep=keep), indent=2, ensure_ascii=False, default=str)


def _moment(value: Any) -> Any:
    return isoformat(value) if isinstance(value, datetime) else value


def view(runtime: Runtime, tenant: Tenant, base_url: str, filters: Mapping[str, str] | None = None) -> dict[str, Any]:
    now = tenant.now()
    chosen = {name: value for name, value in (filters or {}).items() if name in FILTERS and value}
    transactions = transaction_rows(tenant, chosen)
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
        "transactions": transactions,
        "transaction_columns": _columns(transactions),
        "filters": chosen,
        "filter_options": filter_options(tenant),
        "chart": chart.outcomes(tenant.ledger.transactions()),
        "sessions": [session_row(s, now, base_url) for s in list(sessions.iter_sessions(tenant))[:ROWS_SHOWN]],
        "tokens": [
            {"token": t.token, "createTime": _moment(t.create_time)} for t in reversed(list(tenant.vault.values()))
        ][:ROWS_SHOWN],
        "accounts": [
            {
                "name": a.name,
                "gateway": a.gateway,
                "creationTime": _moment(a.creation_time),
                "credentialKeys": [key for key, _ in a.credentials],
            }
            for a in tenant.accounts.values()
        ],
        "certificates": tenant.certificates.names(),
        "journal": [journal_row(e) for e in reversed(list(tenant.journal))][:JOURNAL_SHOWN],
        "journal_total": len(tenant.journal),
        "journal_dropped": tenant.journal.dropped,
        "scenarios": scenario_rows(runtime, tenant),
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


def _matches(data: Mapping[str, Any], filters: Mapping[str, str]) -> bool:
    return all(str(data.get(FILTERS[name])) == value for name, value in filters.items())


def transaction_rows(tenant: Tenant, filters: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The newest transactions first (at most ``ROWS_SHOWN``), those matching ``filters``
    (``state``, ``gateway``, ``result``) only; references stay readable, card numbers masked."""
    rows: list[dict[str, Any]] = []
    for transaction in reversed(tenant.ledger.transactions()):
        raw = transaction.to_json()
        if filters and not _matches(raw, filters):
            continue
        data = mask(raw, keep=references(raw) | {transaction.reference, str(raw.get("parent"))})
        plain = {k: v for k, v in data.items() if not isinstance(v, dict | list)}
        nested = {k: v for k, v in data.items() if isinstance(v, dict | list)}
        key = str(data.get("reference") or data.get("gatewayReference") or len(rows))
        rows.append(
            {
                "key": key,
                "plain": plain,
                "nested": {k: pretty(v) for k, v in nested.items()},
                "reference": transaction.reference,
                "time": pagefmt.short(transaction.created_at),
                "timeIso": isoformat(transaction.created_at),
                "amountText": pagefmt.money(float(transaction.amount), transaction.currency),
                "failed": raw["resultCode"] != "Success",
            }
        )
        if len(rows) >= ROWS_SHOWN:
            break
    return rows


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    seen: list[str] = []
    for row in rows:
        for key in row["plain"]:
            if key not in seen:
                seen.append(key)
    leading = [c for c in _LEADING_COLUMNS if c in seen]
    return leading + [c for c in seen if c not in leading]


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
    """The operation's result code in a journal entry's response (the page's payment nests it)."""
    if not isinstance(response, dict):
        return None
    nested = response.get("upgChargeResults")
    code = response.get("operationResultCode") or (
        nested.get("operationResultCode") if isinstance(nested, dict) else None
    )
    return str(code) if code else None


def _is_error(status: Any, result_code: str | None) -> bool:
    """4xx/5xx, a dropped connection (no status) or a declined or failed operation."""
    return not isinstance(status, int) or status >= 400 or result_code in ("Rejected", "Failed")


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
    rows = []
    for rule in runtime.scenarios.rules(tenant):
        data = mask(rule.to_json())
        rows.append(
            {
                "name": data.get("name"),
                "source": data.get("source"),
                "when": json.dumps(data.get("when") or {}, ensure_ascii=False),
                "then": json.dumps(data.get("then") if "then" in data else data.get("sequence"), ensure_ascii=False),
            }
        )
    return rows
