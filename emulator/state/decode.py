"""The state file's documents back into tenants, checked all the way.

Every document is measured (its length, before it is parsed), parsed as JSON, checked
against its schema (:mod:`emulator.state.schema`) and then converted into the typed
stores, which check the rest: enum values, times, amounts, references between records
(a record belongs to a tenant of the file, its id is the document's own, a session's
``paidBy`` names one of its results) and counts against the configured limits. The
first problem raises :class:`StateError`; nothing is handed to the registry until every
tenant of the file has been built.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from emulator.domain.budget import Budget
from emulator.domain.clock import Clock
from emulator.domain.config import KeySpec, Settings
from emulator.domain.errors import ApiError
from emulator.domain.safeparse import has_long_number
from emulator.domain.vocabulary import Operation, ResultCode
from emulator.scenarios.loader import ScenarioError, parse_rules
from emulator.scenarios.model import RUNTIME_SOURCE
from emulator.state import schema
from emulator.stores.accounts import StoredAccount
from emulator.stores.ewallet_sessions import Session, SessionResult
from emulator.stores.ledger import GatewayToken, OperationEntry, Transaction
from emulator.stores.tenant_settings import TenantSettings
from emulator.stores.transaction import token_weight
from emulator.stores.vault import StringToken
from emulator.tenants.tenants import Tenant


class Invalid(ValueError):
    """A document that is not what the format says (the message says where)."""


def document(kind: str, raw: object, limit: int) -> dict[str, Any]:
    """``raw`` (a row's text, or the length of one SQLite found over ``limit``:
    :func:`emulator.state.schema.doc_within`) parsed and checked as a ``kind`` document."""
    if isinstance(raw, int) and raw > limit:
        raise Invalid(f"a {kind} document of {raw} characters is over the {limit} allowed")
    if not isinstance(raw, str):
        raise Invalid(f"a {kind} document is {type(raw).__name__}, not JSON text")
    if len(raw) > limit:
        raise Invalid(f"a {kind} document of {len(raw)} characters is over the {limit} allowed")
    try:
        data = _parsed(raw)
    except (ValueError, RecursionError):
        raise Invalid(f"a {kind} document is not JSON") from None
    found = schema.problem(kind, data)
    if found is not None:
        raise Invalid(f"a {kind} document: {found}")
    assert isinstance(data, dict)
    return data


def _parsed(raw: str) -> Any:
    """JSON text as its value: by orjson (a third of the standard library's time, which
    counts at start-up with a full file), else by the standard library, which keeps
    long integers exact and reads what orjson refuses (the schema then judges it)."""
    if not has_long_number(raw.encode()):  # an integer orjson would read as a float
        with contextlib.suppress(orjson.JSONDecodeError):
            return orjson.loads(raw)
    return json.loads(raw)


def moment(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise Invalid(f"{text[:40]!r} is not a time") from None
    if value.tzinfo is None:
        raise Invalid(f"{text[:40]!r} has no time zone")
    return value


def _maybe_moment(text: str | None) -> datetime | None:
    return moment(text) if text is not None else None


def amount(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        raise Invalid(f"{text[:40]!r} is not an amount") from None


def _enum(kind: type[Operation] | type[ResultCode], value: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        raise Invalid(f"{value[:40]!r} is not a {kind.__name__}") from None


def tenant(key: str, data: dict[str, Any], settings: Settings) -> Tenant:
    """A tenant from its own document (its records come after, by :func:`fill`)."""
    configured = {spec.key: spec for spec in settings.keys}.get(key)
    certificates = configured.certificates if configured else ()
    spec = KeySpec(key, data["userName"], data["accountId"], data["sandbox"], certificates)
    owner = Tenant(spec, settings, settings.seed)
    owner.token_secret = bytes.fromhex(data["tokenSecret"])
    clock = data["clock"]
    owner.clock = Clock(_maybe_moment(clock["start"]))
    owner.clock.advance(timedelta(seconds=clock["offsetSeconds"]))
    owner.ledger.clock = owner.clock  # what the packed transactions it will hold are read on
    chosen = data["settings"]
    owner.overrides = TenantSettings(chosen["strict"], chosen["successStatus"], chosen["failover"])
    try:  # weighed against the key's budget as at run time (limits.memoryBytesPerTenant)
        for account in data["accounts"]:
            pairs = [(name, value) for name, value in account["credentials"]]
            owner.accounts.put(StoredAccount(account["name"], account["gateway"], pairs, moment(account["created"])))
    except ApiError:
        raise Invalid("accounts: more than the key's byte budget holds (limits.memoryBytesPerTenant)") from None
    for name in data["certificates"]:
        try:
            owner.certificates.register(name)
        except ValueError as exc:
            raise Invalid(f"certificates: {exc}") from None
        except ApiError:
            raise Invalid("certificates: more than the key's byte budget holds (limits.memoryBytesPerTenant)") from None
    if data["rules"]:
        try:
            rules = parse_rules(json.dumps(data["rules"]), RUNTIME_SOURCE)
            owner.rules.add(rules)
        except (ScenarioError, ValueError) as exc:
            raise Invalid(f"rules: {str(exc).splitlines()[0][:200]}") from None
    return owner


def transaction(owner: Tenant, data: dict[str, Any]) -> Transaction:
    return Transaction(
        reference=data["reference"],
        operation=_enum(Operation, data["operation"]),
        gateway=data["gateway"],
        account=data["account"],
        amount=amount(data["amount"]),
        currency=data["currency"],
        result_code=_enum(ResultCode, data["resultCode"]),
        reject_reason=data["rejectReason"],
        created_at=moment(data["createdAt"]),
        my_ref=data["myRef"],
        card_number=data["cardNumber"],
        authorization_code=data["authorizationCode"],
        parent=data["parent"],
        attempt_number=data["attemptNumber"],
        attempts=data["attempts"],
        expires_at=_maybe_moment(data["expiresAt"]),
        settles_to=data["settlesTo"],
        settle_at=_maybe_moment(data["settleAt"]),
        captured_amount=amount(data["capturedAmount"]),
        refunded_amount=amount(data["refundedAmount"]),
        captured_by=data["capturedBy"],
        voided_by=data["voidedBy"],
        operations=tuple(
            OperationEntry(
                _enum(Operation, entry["operation"]),
                entry["reference"],
                amount(entry["amount"]),
                _enum(ResultCode, entry["resultCode"]),
                moment(entry["time"]),
            )
            for entry in data["operations"]
        ),
        clock=owner.clock,
    )


def gateway_token(data: dict[str, Any]) -> GatewayToken:
    return GatewayToken(data["token"], data["gateway"], data["account"], data["cardNumber"], moment(data["createdAt"]))


def string_token(data: dict[str, Any]) -> StringToken:
    if not data["payload"]:
        raise Invalid("a string token with an empty payload")
    return StringToken(data["token"], data["payload"], moment(data["createTime"]))


def session(data: dict[str, Any]) -> Session:
    results = {
        result["id"]: SessionResult(
            result["id"], moment(result["createdAt"]), result["success"], result["data"], result["token"]
        )
        for result in data["results"]
    }
    paid_by = data["paidBy"]
    if paid_by is not None and paid_by not in results:
        raise Invalid(f"session paid by {paid_by[:40]!r}, which is none of its results")
    return Session(
        data["token"],
        data["request"],
        moment(data["createdAt"]),
        moment(data["expiresAt"]),
        results,
        paid_by,
        False,
        data["sid"],
    )


def _own_id(kind: str, data: dict[str, Any]) -> str:
    if kind == schema.TRANSACTION:
        return str(data["reference"])
    return str(data["token"])


class Builder:
    """Tenants built from a file's rows; :meth:`tenants` once every row went in.

    Their budgets draw on a process budget of ``limits.memoryBytes`` while they are built,
    so what does not fit goes as it would while serving (journal entries first, then
    finished transactions, the largest tenant's first) and loading never holds more."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        limits = settings.limits
        self.budget = Budget(limits.memory_bytes, "payemu (every API key)", "memoryBytes")
        self._tenants: dict[str, Tenant] = {}
        self._counts: dict[tuple[str, str], int] = {}
        self.read: dict[str, int] = {"journal": 0, "record": 0}  # rows parsed of each
        self.unread = 0  # journal entries past a journal's bounds, left in the file unparsed
        self.dropped_bytes = 0  # weighed and then dropped for the budgets

    def add_tenants(self, rows: Iterable[tuple[object, object]]) -> None:
        bounds = self.settings.limits
        for key, raw in rows:
            if not isinstance(key, str) or not 0 < len(key) <= schema.MAX_KEY:
                raise Invalid("a tenant's key is not 1 to 256 characters of text")
            if len(self._tenants) >= bounds.tenants + len(self.settings.keys):
                raise Invalid(f"more tenants than the {bounds.tenants} allowed (limits.tenants)")
            owner = tenant(key, document("tenant", raw, schema.MAX_TENANT_DOCUMENT), self.settings)
            owner.budget.attach(self.budget)
            self._tenants[key] = owner

    def tenant_keys(self) -> list[str]:
        return list(self._tenants)

    def _owner(self, key: object, what: str) -> Tenant:
        owner = self._tenants.get(key) if isinstance(key, str) else None
        if owner is None:
            raise Invalid(f"a {what} of {str(key)[:40]!r}, a key the file has no tenant for")
        return owner

    def _room(self, owner: Tenant, before: int) -> None:
        """Make the budgets hold again after ``owner`` took more (the process's held
        ``before`` bytes then): what goes is counted as dropped."""
        budget = owner.budget
        if not budget.fits(0):
            budget.make_room(0)
        self.dropped_bytes += max(0, before - self.budget.used)

    def add_journal(self, key: str, rows: Iterable[tuple[object, object]], total: int) -> None:
        """A tenant's journal from its newest entries (``rows`` newest first, as many as
        the journal holds), kept while they fit its bounds; ``total``: the entries the file
        holds for it (those not read are counted as dropped)."""
        owner = self._owner(key, "journal entry")
        journal, limits = owner.journal, self.settings.limits
        room = min(limits.journal_bytes, limits.tenant_bytes)
        kept: list[tuple[int, bytes]] = []
        held = 0
        newer: int | None = None
        read = 0
        for number, raw in rows:
            read += 1
            data = document("journal", raw, schema.MAX_RECORD_DOCUMENT)
            if data["id"] != number or (newer is not None and data["id"] >= newer):
                raise Invalid("journal entries whose ids are not increasing, or not their rows'")
            newer = int(data["id"])
            text = str(raw).encode()  # held as its text (what the journal weighs) until read
            if kept and held + len(text) > room:  # it and everything older would go first
                self.dropped_bytes += len(text)
                break
            kept.append((newer, text))
            held += len(text)
        self.read["journal"] += read
        self.unread += max(0, total - read)
        before = self.budget.used + held
        journal.load(kept[::-1])
        self._room(owner, before)

    def add_record(self, key: object, kind: object, ident: object, raw: object) -> None:
        owner = self._owner(key, "record")
        if kind not in schema.KINDS:
            raise Invalid(f"a record of unknown kind {str(kind)[:40]!r}")
        assert isinstance(kind, str)
        data = document(kind, raw, schema.MAX_RECORD_DOCUMENT)
        if _own_id(kind, data) != ident:
            raise Invalid(f"a {kind} row whose id is not its document's")
        counted = self._counts[owner.key, kind] = self._counts.get((owner.key, kind), 0) + 1
        bounds = self.settings.limits
        limit = {
            schema.TRANSACTION: bounds.transactions,
            schema.GATEWAY_TOKEN: bounds.tokens,
            schema.STRING_TOKEN: bounds.tokens,
            schema.SESSION: bounds.sessions,
        }[kind]
        if counted > limit:
            raise Invalid(f"more {kind} records for one key than the {limit} allowed (limits)")
        self.read["record"] += 1
        used = self.budget.used
        if kind == schema.TRANSACTION:
            owner.ledger.add(transaction(owner, data))
        elif kind == schema.GATEWAY_TOKEN:
            token = gateway_token(data)
            owner.ledger.remember_token(token)  # makes room for itself, as when serving
            used += token_weight(token)
        elif kind == schema.STRING_TOKEN:
            owner.vault.add(string_token(data))
        else:
            held = session(data)
            try:
                owner.sessions.add(held)  # makes room for itself, as when serving
            except ApiError:  # larger than the key's whole budget: left out
                return
            used += held.weight
        self._room(owner, max(used, self.budget.used))

    def held(self) -> tuple[int, int]:
        """Journal entries and records held now."""
        entries = records = 0
        for owner in self._tenants.values():
            entries += len(owner.journal)
            records += len(owner.ledger) + owner.ledger.token_count + len(owner.vault) + len(owner.sessions)
        return entries, records

    def tenants(self) -> list[Tenant]:
        """Every tenant; references between records checked."""
        for owner in self._tenants.values():
            for tx in owner.ledger.values():
                for name in (tx.captured_by, tx.voided_by):
                    if name is not None and name in owner.ledger and owner.ledger[name].parent != tx.reference:
                        raise Invalid(f"transaction {tx.reference[:40]!r} names {name[:40]!r}, not an operation on it")
        return list(self._tenants.values())
