"""The state file's format: its SQLite tables, and the JSON schema of every document.

A state file is an SQLite database. ``payemu_meta`` names the format and its version;
``tenants`` holds one JSON document per API key (identity, clock, settings, accounts,
certificates, runtime rules); ``records`` one JSON document per transaction, gateway
token, string token and eWallet session; ``journal`` one per journal entry. Nothing in it
is code: documents are read with :func:`json.loads` and checked against the schemas here
(types, lengths, counts) before anything is built from them.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs

FORMAT = "payemu-state"
VERSION = 2
OLD_VERSION = 1  # one pickled blob per tenant (payemu before 0.2): read only by `payemu state migrate`
SQLITE_MAGIC = b"SQLite format 3\x00"

# kinds of ``records`` rows
TRANSACTION = "transaction"
GATEWAY_TOKEN = "gatewayToken"
STRING_TOKEN = "stringToken"
SESSION = "session"
KINDS = (TRANSACTION, GATEWAY_TOKEN, STRING_TOKEN, SESSION)

# sizes: a document longer than these is refused before it is parsed
MAX_TENANT_DOCUMENT = 64 * 1024 * 1024  # rules and accounts of one key
MAX_RECORD_DOCUMENT = 16 * 1024 * 1024  # one transaction, token, session or journal entry
MAX_KEY = 256
MAX_TEXT = 4096  # names, references, currencies, gateway names
MAX_PAYLOAD = 16384  # a string token's payload (emulator.stores.vault.MAX_PAYLOAD)


def doc_within(limit: int) -> str:
    """The ``doc`` column as read: its text, or only its length when that is over
    ``limit`` (so a row too long to take is never fetched into memory)."""
    return f"CASE WHEN length(doc) > {int(limit)} THEN length(doc) ELSE doc END"


TABLES = (
    "CREATE TABLE IF NOT EXISTS payemu_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    # rowid tables: a row keeps its rowid when its document is replaced, and new rows come
    # after every other, so ``ORDER BY rowid`` is the order the stores held them in (oldest first)
    "CREATE TABLE IF NOT EXISTS tenants (key TEXT NOT NULL UNIQUE, doc TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS records (tenant TEXT NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL,"
    " doc TEXT NOT NULL, UNIQUE (tenant, kind, id))",
    "CREATE TABLE IF NOT EXISTS journal (tenant TEXT NOT NULL, id INTEGER NOT NULL, doc TEXT NOT NULL,"
    " PRIMARY KEY (tenant, id)) WITHOUT ROWID",
)
UPSERT_META = "INSERT OR REPLACE INTO payemu_meta VALUES (?, ?)"
UPSERT_TENANT = "INSERT INTO tenants (key, doc) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET doc = excluded.doc"
DELETE_TENANT = (
    "DELETE FROM tenants WHERE key = ?",
    "DELETE FROM records WHERE tenant = ?",
    "DELETE FROM journal WHERE tenant = ?",
)
UPSERT_RECORD = (
    "INSERT INTO records (tenant, kind, id, doc) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (tenant, kind, id) DO UPDATE SET doc = excluded.doc"
)
DELETE_ALL_BUT = tuple(  # every tenant's rows but those of the keys in a JSON array
    f"DELETE FROM {table} WHERE {column} NOT IN (SELECT value FROM json_each(?))"
    for table, column in (("tenants", "key"), ("records", "tenant"), ("journal", "tenant"))
)
DELETE_RECORDS_BUT = (  # a tenant's records of one kind but those named in a JSON array
    "DELETE FROM records WHERE tenant = ? AND kind = ? AND id NOT IN (SELECT value FROM json_each(?))"
)
DELETE_RECORD = "DELETE FROM records WHERE tenant = ? AND kind = ? AND id = ?"
UPSERT_ENTRY = "INSERT OR REPLACE INTO journal VALUES (?, ?, ?)"
DROP_ENTRIES_BEFORE = "DELETE FROM journal WHERE tenant = ? AND id < ?"
# each upsert's row read back by its key (every value but the last, its document)
READ_BACK = {
    UPSERT_TENANT: "SELECT doc FROM tenants WHERE key = ?",
    UPSERT_RECORD: "SELECT doc FROM records WHERE tenant = ? AND kind = ? AND id = ?",
    UPSERT_ENTRY: "SELECT doc FROM journal WHERE tenant = ? AND id = ?",
}


def _text(limit: int = MAX_TEXT) -> dict[str, Any]:
    return {"type": "string", "maxLength": limit}


def _maybe(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


TIME = {"type": "string", "minLength": 10, "maxLength": 40}
AMOUNT = {"type": "string", "pattern": r"^-?[0-9]{1,20}(\.[0-9]{1,20})?$"}
COUNT = {"type": "integer", "minimum": 0, "maximum": 1 << 40}


def _object(properties: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": [name for name in properties if name not in optional],
        "additionalProperties": False,
    }


TENANT = _object(
    {
        "userName": _text(MAX_KEY),
        "accountId": {"type": "integer", "minimum": 1, "maximum": 1 << 53},
        "sandbox": {"type": "boolean"},
        "tokenSecret": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "clock": _object({"start": _maybe(TIME), "offsetSeconds": {"type": "number", "minimum": 0}}),
        "settings": _object(
            {
                "strict": _maybe({"type": "boolean"}),
                "successStatus": _maybe(_text(64)),
                "failover": _maybe(_text(64)),
            }
        ),
        "accounts": {
            "type": "array",
            "maxItems": 100_000,
            "items": _object(
                {
                    "name": _text(),
                    "gateway": _text(),
                    "credentials": {
                        "type": "array",
                        "maxItems": 1000,
                        "items": {
                            "type": "array",
                            "prefixItems": [_text(), _maybe(_text(65536))],
                            "minItems": 2,
                            "maxItems": 2,
                        },
                    },
                    "created": TIME,
                }
            ),
        },
        "certificates": {"type": "array", "maxItems": 100_000, "items": _text(128)},
        "rules": {"type": "array", "maxItems": 100_000, "items": {"type": "object"}},
    }
)
_OPERATION_ENTRY = _object(
    {"operation": _text(64), "reference": _text(), "amount": AMOUNT, "resultCode": _text(64), "time": TIME}
)
TRANSACTION_DOC = _object(
    {
        "reference": _text(),
        "operation": _text(64),
        "gateway": _text(),
        "account": _maybe(_text()),
        "amount": AMOUNT,
        "currency": _text(16),
        "resultCode": _text(64),
        "rejectReason": _maybe(_text()),
        "createdAt": TIME,
        "myRef": _maybe(_text(1 << 20)),
        "cardNumber": _maybe(_text(64)),
        "authorizationCode": _maybe(_text()),
        "parent": _maybe(_text()),
        "attemptNumber": COUNT,
        "attempts": COUNT,
        "expiresAt": _maybe(TIME),
        "settlesTo": _maybe(_text(64)),
        "settleAt": _maybe(TIME),
        "capturedAmount": AMOUNT,
        "refundedAmount": AMOUNT,
        "capturedBy": _maybe(_text()),
        "voidedBy": _maybe(_text()),
        "operations": {"type": "array", "maxItems": 100_000, "items": _OPERATION_ENTRY},
    }
)
GATEWAY_TOKEN_DOC = _object(
    {
        "token": _text(),
        "gateway": _text(),
        "account": _maybe(_text()),
        "cardNumber": _maybe(_text(64)),
        "createdAt": TIME,
    }
)
STRING_TOKEN_DOC = _object({"token": _text(64), "payload": _text(MAX_PAYLOAD), "createTime": TIME})
SESSION_DOC = _object(
    {
        "token": _text(),
        "request": {"type": "object"},
        "createdAt": TIME,
        "expiresAt": TIME,
        "results": {
            "type": "array",
            "maxItems": 100_000,
            "items": _object(
                {
                    "id": _text(),
                    "createdAt": TIME,
                    "success": {"type": "boolean"},
                    "data": {"type": "object"},
                    "token": _text(65536),
                }
            ),
        },
        "paidBy": _maybe(_text()),
        "sid": _text(),
    }
)
JOURNAL_DOC = {
    "type": "object",
    "properties": {"id": {"type": "integer", "minimum": 1}, "time": _text(64), "path": _text(1 << 20)},
    "required": ["id", "time", "path"],
}
DOCUMENTS: dict[str, dict[str, Any]] = {
    "tenant": TENANT,
    TRANSACTION: TRANSACTION_DOC,
    GATEWAY_TOKEN: GATEWAY_TOKEN_DOC,
    STRING_TOKEN: STRING_TOKEN_DOC,
    SESSION: SESSION_DOC,
    "journal": JOURNAL_DOC,
}
VALIDATORS = {name: jsonschema_rs.Draft202012Validator(schema) for name, schema in DOCUMENTS.items()}


def problem(kind: str, document: Any) -> str | None:
    """Why ``document`` is not a valid ``kind`` document (one line), or None."""
    for error in VALIDATORS[kind].iter_errors(document):
        where = "/".join(str(part) for part in error.instance_path) or "the document"
        return f"{where}: {error.message[:200]}"
    return None
