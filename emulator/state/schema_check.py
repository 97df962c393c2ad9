"""A state file holds payemu's schema and nothing else: the check, and how a file is opened.

A file is untrusted until checked: SQLite runs what its schema holds (a trigger fires on
payemu's own writes, a view or a generated column runs when read). So every object in
``sqlite_master`` is compared with those :data:`~emulator.state.schema.TABLES` make, text
for text, and anything else (a trigger, a view, an index, a column, a changed table) is
refused with one line naming it. The connection that reads the file opens it read-only,
with ``trusted_schema`` off and SQLite's checks of damaged pages on.
"""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path
from typing import Any

from emulator.state import schema
from emulator.state.errors import StateError

Objects = dict[tuple[str, str], tuple[str, str | None]]  # (type, name) → (table, SQL text)
# Findings of SQLite's quick_check it stops at: the first is the one line said. It reads
# every page once (about 0.1 s per 100 MB), so it is bounded by the file's size.
CHECK_FINDINGS = 1


def harden(db: sqlite3.Connection) -> None:
    """What SQLite offers a connection to a file it cannot trust: no function of the
    schema runs with side effects (``trusted_schema``), damaged cells are caught when read
    (``cell_size_check``), no memory-mapped reads of a file another process may change,
    and, where Python has it (3.12), SQLite's defensive mode (no writes to its own tables)."""
    db.execute("PRAGMA trusted_schema = OFF")
    db.execute("PRAGMA cell_size_check = ON")
    db.execute("PRAGMA mmap_size = 0")
    setconfig = getattr(db, "setconfig", None)
    defensive = getattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE", None)
    if setconfig is not None and defensive is not None:
        setconfig(defensive, True)


def open_read_only(path: Path) -> sqlite3.Connection:
    """``path`` opened for reading only (a write through it fails), hardened."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
    try:
        harden(db)
        db.execute("PRAGMA query_only = ON")
    except BaseException:
        db.close()
        raise
    return db


@functools.cache
def expected() -> Objects:
    """The objects payemu's own statements make in an empty database."""
    with sqlite3.connect(":memory:") as db:
        for table in schema.TABLES:
            db.execute(table)
        found = objects(db)
    db.close()
    return found


def objects(db: sqlite3.Connection) -> Objects:
    rows: list[Any] = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return {(str(kind), str(name)): (str(table), sql) for kind, name, table, sql in rows}


def _named(kind: str, name: str) -> str:
    return f"{kind} {name[:80]!r}"


def problem(db: sqlite3.Connection) -> str | None:
    """What in the file's schema is not payemu's (one line), or None."""
    want, found = expected(), objects(db)
    for key, (table, sql) in found.items():
        if key not in want:
            owner = f" on {table[:80]!r}" if key[0] in ("trigger", "index") else ""
            return f"the {_named(*key)}{owner} is not part of payemu's schema"
        if want[key] != (table, sql):
            return f"the {_named(*key)} is not as payemu makes it ({_difference(db, key)})"
    missing = [key for key in want if key not in found]
    if missing:
        return f"the {_named(*missing[0])} of payemu's schema is missing"
    return None


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [str(name) for (name,) in db.execute("SELECT name FROM pragma_table_xinfo(?)", (table,))]


def _difference(db: sqlite3.Connection, key: tuple[str, str]) -> str:
    """How a table of payemu's name differs: its columns, or else its definition."""
    if key[0] == "table":
        with sqlite3.connect(":memory:") as reference:
            for table in schema.TABLES:
                reference.execute(table)
            want = _columns(reference, key[1])
        reference.close()
        found = _columns(db, key[1])
        if found != want:
            return f"columns {', '.join(name[:40] for name in found)[:200]} where payemu makes {', '.join(want)}"
    return f"defined as {str(objects(db)[key][1])[:160]}"


def check(db: sqlite3.Connection, path: Path) -> None:
    """Refuse (:class:`StateError`) a file whose schema is not exactly payemu's, or whose
    pages SQLite finds damaged."""
    found = problem(db)
    if found is not None:
        raise StateError(f"{path}: refused, {found}")
    verdict = db.execute(f"PRAGMA quick_check({CHECK_FINDINGS})").fetchone()
    if verdict is None or verdict[0] != "ok":
        lines = str(verdict[0] if verdict else "no answer").splitlines()
        detail = next((line for line in lines if not line.startswith("***")), lines[0])[:160]  # past its heading
        raise StateError(f"{path}: refused, SQLite finds it damaged ({detail})")
