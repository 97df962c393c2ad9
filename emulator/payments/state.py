"""``payemu serve --state FILE``: every tenant's state in an embedded SQLite file.

The file has a ``payemu_state`` table naming the format and its version, and one row per
tenant in ``tenants`` holding that tenant's stores (clock, journal, certificates, gateway
accounts, string tokens, transactions and gateway tokens, eWallet sessions and runtime
scenario rules, and the key that signs its eWallet tokens) as one pickled blob, so the
references between them (a transaction's clock is its tenant's clock) survive. It is
restored at start, and written at shutdown and every ``stateIntervalSeconds``: to a
temporary file next to it, then moved over it with :func:`os.replace`, so a crash
mid-write never leaves half a file.

At rest, card data is no more than payemu shows anywhere: the journal is stored masked,
card numbers of transactions and gateway tokens keep the first six and last four digits,
and security codes are never written (a string token's JSON payload loses its ``cvv``;
a token holding only a security code is not kept). The blob is pickled: only load state
files you wrote yourself, as with any local database of a development tool.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import pickle
import sqlite3
import tempfile
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from emulator import __version__
from emulator.config import ConfigError, KeySpec
from emulator.payments.masking import mask_pan
from emulator.payments.vault import StringToken

if TYPE_CHECKING:
    from emulator.payments.tenants import Tenant, TenantRegistry

FORMAT = "payemu-state"
VERSION = 1
STORES = ("clock", "journal", "certificates", "accounts", "vault", "ledger", "rules", "sessions", "token_secret")
log = logging.getLogger("payemu")
_SECURITY_CODE_NAMES = frozenset({"cvv", "cvc", "cvv2", "securitycode"})


class StateError(ConfigError):
    """A state file payemu cannot use; the message is one line naming the file."""


def save(tenants: TenantRegistry, path: str | Path) -> int:
    """Write every tenant to ``path`` atomically; returns the number of tenants written."""
    target = Path(path)
    rows = [_row(tenant) for tenant in tenants]
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    os.close(handle)
    try:
        with closing(sqlite3.connect(temporary)) as db, db:
            db.execute("CREATE TABLE payemu_state (format TEXT NOT NULL, version INTEGER NOT NULL, payemu TEXT)")
            db.execute("INSERT INTO payemu_state VALUES (?, ?, ?)", (FORMAT, VERSION, __version__))
            db.execute(
                "CREATE TABLE tenants (key TEXT PRIMARY KEY, user_name TEXT NOT NULL, account_id INTEGER NOT NULL,"
                " is_sandbox INTEGER NOT NULL, stores BLOB NOT NULL)"
            )
            db.executemany("INSERT INTO tenants VALUES (?, ?, ?, ?, ?)", rows)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return len(rows)


def restore(tenants: TenantRegistry, path: str | Path) -> int:
    """Load ``path`` into ``tenants`` (nothing when it does not exist yet); returns the
    number of tenants restored. Raises :class:`StateError` for a file of another kind or
    format version."""
    source = Path(path)
    if not source.exists():
        return 0
    rows = _read(source)
    for key, user_name, _account_id, is_sandbox, blob in rows:
        tenant = tenants.get(key)
        if tenant is None:
            tenant = tenants.create(sandbox=bool(is_sandbox), user_name=user_name, key=key)
        try:
            stores = pickle.loads(blob)  # the user's own state file, checked above
        except Exception as exc:  # any unpickling problem means the file is not ours to read
            raise StateError(f"{source}: the state of key {key!r} cannot be read ({type(exc).__name__})") from None
        for name in STORES:
            if name in stores:
                setattr(tenant, name, stores[name])
    return len(rows)


def _read(source: Path) -> list[tuple[str, str, int, int, bytes]]:
    try:
        with closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as db:
            try:
                found = db.execute("SELECT format, version FROM payemu_state").fetchone()
            except sqlite3.DatabaseError:
                raise StateError(f"{source}: not a payemu state file") from None
            if found is None or found[0] != FORMAT:
                raise StateError(f"{source}: not a payemu state file")
            if found[1] != VERSION:
                raise StateError(
                    f"{source}: state format version {found[1]} is not the version {VERSION} this payemu reads;"
                    " move the file away to start empty"
                )
            rows: list[tuple[str, str, int, int, bytes]] = db.execute(
                "SELECT key, user_name, account_id, is_sandbox, stores FROM tenants"
            ).fetchall()
            return rows
    except sqlite3.DatabaseError as exc:
        raise StateError(f"{source}: not a payemu state file ({exc})") from None


def _row(tenant: Tenant) -> tuple[str, str, int, int, bytes]:
    list(tenant.journal)  # entries are masked on first read; store them masked
    stores = copy.deepcopy({name: getattr(tenant, name) for name in STORES})
    for tx in stores["ledger"].values():
        if tx.card_number:
            tx.card_number = mask_pan(tx.card_number)
    for token in stores["ledger"].gateway_tokens():
        if token.card_number:
            stores["ledger"].remember_token(replace(token, card_number=mask_pan(token.card_number)))
    vault = stores["vault"]
    for token in list(vault):
        entry = vault[token]
        payload = _without_security_code(entry.payload)
        vault.delete(token)
        if payload is not None:
            vault.add(StringToken(entry.token, payload, entry.create_time))
    spec = KeySpec(tenant.key, tenant.user_name, tenant.account_id, tenant.is_sandbox)
    blob = pickle.dumps(stores, protocol=pickle.HIGHEST_PROTOCOL)
    return spec.key, spec.user_name, spec.account_id, int(spec.is_sandbox), blob


def _without_security_code(payload: str) -> str | None:
    """The payload as stored at rest: a JSON object without its security code; None for a
    payload that is only a security code."""
    text = payload.strip()
    if text.isdigit() and 3 <= len(text) <= 4:
        return None
    if not text.startswith("{"):
        return payload
    try:
        data = json.loads(text)
    except ValueError:
        return payload
    if not isinstance(data, dict):
        return payload
    kept = {name: value for name, value in data.items() if name.lower() not in _SECURITY_CODE_NAMES}
    return payload if len(kept) == len(data) else json.dumps(kept)


async def keep_saving(tenants: TenantRegistry, path: str | Path, interval: float) -> None:
    """Save every ``interval`` seconds until cancelled (a failed save is logged, not fatal)."""
    while True:
        await asyncio.sleep(interval)
        try:
            save(tenants, path)
        except (OSError, sqlite3.Error) as exc:
            log.warning("could not save the state to %s: %s", path, exc)
