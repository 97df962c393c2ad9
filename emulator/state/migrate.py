"""``payemu state migrate OLD NEW``: a state file of the old pickle format, converted once.

Unpickling can run any code a blob names, so :class:`OldStateUnpickler` knows only what the
old writer produced (its store classes as inert :class:`Plain` records, the vocabulary's
enums, ``Decimal``, dates and times, a few containers) and refuses any other name. The
records are written as the new format to a temporary file, which is read back through
the same checks as ``serve --state`` before it becomes ``NEW``. Every error is one line.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import pickle
import pickletools
import sqlite3
from collections import OrderedDict, deque
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

from emulator.domain.config import Limits, Settings
from emulator.state import database, encode, schema
from emulator.state import schema_check as shape
from emulator.state.errors import StateError

MAX_BLOB = 1 << 30  # one tenant's pickled stores
# What one tenant's stores, and all of a file's, may weigh once every shared reference is
# written out in full (a character or a value weighs 1): the conversion writes each
# reference as a copy, so a blob of a few hundred bytes sharing lists in a chain would
# expand to gigabytes. A tenant of the old format held at most 64 MiB (its byte budget).
MAX_EXPANDED = 64 * 1024 * 1024
MAX_EXPANDED_FILE = 256 * 1024 * 1024
MAX_TENANTS = 1_000_000
OLD_OBJECTS = {("table", "payemu_state"), ("table", "tenants"), ("index", "sqlite_autoindex_tenants_1")}


class Plain:
    """An object of one of the old writer's classes, as data: its pickled attributes and
    nothing else (no method of the class it stood for)."""

    plain_kind = "Plain"

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (instance dict, slots)
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, list) and self.plain_kind == "Transaction":  # a slotted dataclass's values
            names = [spec.name for spec in _TRANSACTION_FIELDS]
            if len(state) != len(names):
                raise pickle.UnpicklingError("a transaction of another shape")
            state = dict(zip(names, state, strict=True))
        if not isinstance(state, dict) or not all(isinstance(name, str) and name.isidentifier() for name in state):
            raise pickle.UnpicklingError(f"a {self.plain_kind} holding {type(state).__name__}")
        if any(name.startswith("__") or name == "plain_kind" for name in state):
            raise pickle.UnpicklingError(f"a {self.plain_kind} with a special attribute")
        self.__dict__.update(state)


def _plain(name: str) -> type[Plain]:
    return type(name, (Plain,), {"plain_kind": name})


def _count(start: int = 0, step: int = 1) -> int:
    """``itertools.count`` as the journal's next id (an int), nothing more."""
    if not isinstance(start, int):
        raise pickle.UnpicklingError("a counter that is not a number")
    return start


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise pickle.UnpicklingError("an enum value that is not text")
    return value


# The module paths as the old writer pickled them (the package was laid out differently then).
_STORE_CLASSES = {
    "emulator.payments.clock": ("Clock",),
    "emulator.payments.journal": ("Journal",),
    "emulator.payments.certificates": ("Certificates",),
    "emulator.payments.accounts": ("Accounts", "StoredAccount"),
    "emulator.payments.vault": ("Vault", "StringToken"),
    "emulator.payments.ledger": ("Ledger", "Transaction", "OperationEntry", "GatewayToken"),
    "emulator.scenarios.ruleset": ("RuleSet",),
    "emulator.scenarios.model": ("Rule", "Match", "Outcome"),
    "emulator.payments.ewallet.sessions": ("Sessions", "Session", "SessionResult"),
}
ALLOWED: dict[tuple[str, str], Any] = {
    **{(module, name): _plain(name) for module, names in _STORE_CLASSES.items() for name in names},
    **{("emulator.vocabulary", name): _text for name in ("Operation", "ResultCode", "RejectReason", "Fault")},
    ("decimal", "Decimal"): Decimal,
    ("datetime", "datetime"): datetime,
    ("datetime", "date"): date,
    ("datetime", "timedelta"): timedelta,
    ("datetime", "timezone"): timezone,
    ("collections", "deque"): deque,
    ("collections", "OrderedDict"): OrderedDict,
    ("itertools", "count"): _count,
}


def _transaction_fields() -> tuple[dataclasses.Field[Any], ...]:
    from emulator.stores.ledger import Transaction

    return dataclasses.fields(Transaction)


_TRANSACTION_FIELDS = _transaction_fields()


class OldStateUnpickler(pickle.Unpickler):
    """Reads the old writer's blobs and nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        found = ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"{module}.{name} is not something the old state format held")
        return found

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not something the old state format held")


def unpickle(blob: bytes) -> dict[str, Any]:
    """One tenant's stores from the old format, as :class:`Plain` records (shared
    references still shared: :func:`expanded_weight` weighs them before they are written)."""
    if len(blob) > MAX_BLOB:
        raise pickle.UnpicklingError(f"a blob of {len(blob)} bytes")
    _check_lengths(blob)
    stores = OldStateUnpickler(io.BytesIO(blob)).load()
    if not isinstance(stores, dict):
        raise pickle.UnpicklingError("the stores are not a mapping")
    return stores


def _check_lengths(blob: bytes) -> None:
    """Every opcode of ``blob`` known and every length it declares present, read by
    :func:`pickletools.genops` (which allocates nothing past the blob): a length no blob
    holds is refused before the unpickler allocates for it. CPython's unpickler, reading a
    bytearray that runs past the end, also prints a SystemError of its own to stderr."""
    try:
        for _ in pickletools.genops(blob):
            pass
    except ValueError as exc:
        raise pickle.UnpicklingError(str(exc).splitlines()[0][:200] if str(exc) else "a malformed pickle") from None


_LEAVES = (str, bytes, bytearray)


def expanded_weight(root: object, limit: int = MAX_EXPANDED) -> int:
    """What ``root`` weighs written out in full: each shared reference counted every time
    it is referred to (a DAG as the tree it expands to), computed once per object, without
    recursion. Raises :class:`pickle.UnpicklingError` past ``limit`` or on a cycle."""
    weights: dict[int, int] = {}
    keep: list[object] = []  # the objects weighed stay alive, so their ids stay theirs
    stack: list[tuple[object, bool]] = [(root, False)]
    open_ids: set[int] = set()
    while stack:
        item, done = stack.pop()
        ident = id(item)
        if done:
            total = 1 + sum(weights[id(child)] for child in _children(item))
            if total > limit:
                raise pickle.UnpicklingError(f"stores that expand to over {limit} values and characters")
            weights[ident] = total
            open_ids.discard(ident)
            continue
        if ident in weights:
            continue
        if isinstance(item, _LEAVES):
            weights[ident] = 1 + len(item)
            keep.append(item)
            continue
        children = _children(item)
        if not children:
            weights[ident] = 1
            keep.append(item)
            continue
        if ident in open_ids:
            raise pickle.UnpicklingError("stores that refer to themselves")
        open_ids.add(ident)
        keep.append(item)
        stack.append((item, True))
        stack.extend((child, False) for child in children if id(child) not in weights)
    return weights[id(root)]


def _children(item: object) -> list[object]:
    if isinstance(item, dict):
        return [*item.keys(), *item.values()]
    if isinstance(item, list | tuple | deque | set | frozenset):
        return list(item)
    if isinstance(item, Plain):
        return [*item.__dict__.keys(), *item.__dict__.values()]
    return []


def _store(stores: dict[str, Any], name: str, kind: str) -> Plain | None:
    found = stores.get(name)
    if found is not None and (not isinstance(found, Plain) or found.plain_kind != kind):
        raise pickle.UnpicklingError(f"{name} is not a {kind}")
    return found


def _transaction(record: Plain) -> Any:  # read by encode.transaction as a Transaction
    for spec in _TRANSACTION_FIELDS:  # fields added since the file was written take their default
        if spec.name not in record.__dict__:
            if spec.default is not dataclasses.MISSING:
                setattr(record, spec.name, spec.default)
            elif spec.default_factory is not dataclasses.MISSING:
                setattr(record, spec.name, spec.default_factory())
    return record


def convert(
    key: str, user_name: str, account_id: int, sandbox: bool, stores: dict[str, Any]
) -> list[database.Statement]:
    """The new format's rows of one old tenant."""
    clock = _store(stores, "clock", "Clock")
    accounts = _store(stores, "accounts", "Accounts")
    certificates = _store(stores, "certificates", "Certificates")
    rules = _store(stores, "rules", "RuleSet")
    secret = stores.get("token_secret")
    start = getattr(clock, "_start", None)
    head = {
        "userName": user_name,
        "accountId": account_id,
        "sandbox": sandbox,
        "tokenSecret": secret.hex() if isinstance(secret, bytes) else os.urandom(32).hex(),
        "clock": {
            "start": start.isoformat() if start is not None else None,
            "offsetSeconds": getattr(clock, "_offset", timedelta(0)).total_seconds(),
        },
        "settings": {"strict": None, "successStatus": None, "failover": None},
        "accounts": [encode.account(stored) for stored in getattr(accounts, "_accounts", {}).values()],
        "certificates": sorted(getattr(certificates, "_names", ())),
        "rules": [rule.data for rule in getattr(rules, "_rules", ())],
    }
    records: list[tuple[Any, ...]] = []
    ledger = _store(stores, "ledger", "Ledger")
    for tx in getattr(ledger, "_transactions", {}).values():
        records.append((key, schema.TRANSACTION, tx.reference, encode.text(encode.transaction(_transaction(tx)))))
    for token in getattr(ledger, "_tokens", {}).values():
        records.append((key, schema.GATEWAY_TOKEN, token.token, encode.text(encode.gateway_token(token))))
    vault = _store(stores, "vault", "Vault")
    for entry in getattr(vault, "_tokens", {}).values():
        document = encode.string_token(entry)
        if document is not None:
            records.append((key, schema.STRING_TOKEN, entry.token, encode.text(document)))
    sessions = _store(stores, "sessions", "Sessions")
    for held in getattr(sessions, "_sessions", {}).values():
        records.append((key, schema.SESSION, held.token, encode.text(encode.session(held))))
    journal = _store(stores, "journal", "Journal")
    entries = [
        (key, entry["id"], encode.text(entry))
        for entry in getattr(journal, "_entries", ())
        if isinstance(entry, dict) and isinstance(entry.get("id"), int)  # stored masked by the old writer
    ]
    return [
        (schema.UPSERT_TENANT, [(key, encode.text(head))]),
        (schema.UPSERT_RECORD, records),
        (schema.UPSERT_ENTRY, entries),
    ]


def _old_rows(old: Path) -> list[tuple[Any, ...]]:
    if not old.is_file():
        raise StateError(f"{old}: no such file")
    with old.open("rb") as handle:
        if handle.read(len(schema.SQLITE_MAGIC)) != schema.SQLITE_MAGIC:
            raise StateError(f"{old}: not a payemu state file")
    try:
        with contextlib.closing(shape.open_read_only(old)) as db:
            objects = shape.objects(db)
            if ("table", "payemu_state") not in objects:
                raise StateError(f"{old}: not a state file of the old format (nothing to migrate)")
            for kind, name in objects:
                if (kind, name) not in OLD_OBJECTS:
                    raise StateError(f"{old}: refused, the {kind} {name[:80]!r} is not part of payemu's old format")
            found = db.execute("SELECT format, version FROM payemu_state").fetchone()
            if found is None or found[0] != schema.FORMAT or found[1] != schema.OLD_VERSION:
                raise StateError(f"{old}: not a state file of the old format (nothing to migrate)")
            rows = db.execute(
                "SELECT key, user_name, account_id, is_sandbox, stores FROM tenants LIMIT ?", (MAX_TENANTS + 1,)
            ).fetchall()
    except sqlite3.Error:
        raise StateError(f"{old}: not a state file of the old format (nothing to migrate)") from None
    if len(rows) > MAX_TENANTS:
        raise StateError(f"{old}: more than {MAX_TENANTS} tenants")
    return rows


def migrate(old: Path, new: Path) -> int:
    """Convert ``old`` into ``new`` (which must not exist); returns the tenants converted."""
    if new.exists():
        raise StateError(f"{new}: already exists; name a new file")
    statements: list[database.Statement] = []
    rows = _old_rows(old)
    left = MAX_EXPANDED_FILE
    for key, user_name, account_id, sandbox, blob in rows:
        if not isinstance(key, str) or not isinstance(blob, bytes):
            raise StateError(f"{old}: refused, a tenant row of the wrong types")
        try:
            stores = unpickle(blob)
            left -= expanded_weight(stores, min(MAX_EXPANDED, left))
            statements += convert(key, str(user_name), int(account_id), bool(sandbox), stores)
        except Exception as exc:  # whatever the crafted data makes the allowed types raise
            raise StateError(
                f"{old}: refused, the state of key {key[:40]!r} cannot be migrated ({_said(exc)})"
            ) from None
    database.check_writable(new)
    temporary = new.with_name(f".{new.name}.migrate.tmp")
    try:
        new.unlink()  # check_writable made it empty
        database.write_all(temporary, statements)
        everything = Limits(**{spec.name: 1 << 40 for spec in dataclasses.fields(Limits)})
        database.read(temporary, Settings(limits=everything))  # the same checks as serve --state
        os.replace(temporary, new)
    except StateError:
        temporary.unlink(missing_ok=True)
        raise
    except Exception as exc:  # text SQLite cannot hold (a lone surrogate), a disk that is full
        temporary.unlink(missing_ok=True)
        raise StateError(f"{old}: refused, its state cannot be written to {new} ({_said(exc)})") from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return len(rows)


def _said(exc: BaseException) -> str:
    """An exception in one line: its message's first line, else its type's name."""
    lines = str(exc).splitlines()
    return lines[0][:200] if lines and lines[0].strip() else type(exc).__name__


def run(args: argparse.Namespace) -> int:
    count = migrate(args.old, args.new)
    print(f"{args.old} → {args.new}: {count} tenant(s) migrated; serve with --state {args.new}")
    return 0
