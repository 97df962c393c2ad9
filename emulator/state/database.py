"""The state file on disk: checks at start, reading it, and the one thread that writes it.

Writes go through SQLite in write-ahead-log mode with ``synchronous=FULL``: a committed
batch is in the ``-wal`` file and flushed to the disk when :meth:`Writer.apply` returns,
and a crash at any point leaves the file as of the last committed batch (SQLite replays
its log on the next open). On close the log is checkpointed into the file and the file
goes back to rollback-journal mode, so a stopped payemu leaves one file and no ``-wal``,
``-shm`` or ``-journal`` beside it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emulator.domain.budget import MIB
from emulator.domain.config import Settings
from emulator.domain.release import __version__
from emulator.state import schema
from emulator.state import schema_check as shape
from emulator.state.decode import Builder, Invalid
from emulator.state.errors import StateError
from emulator.tenants.tenants import Tenant


class Rows(Sequence[tuple[Any, ...]]):
    """Rows of ``width`` values each, kept end to end in one list: one object for the
    garbage collector where a tuple per row made thousands. A save's rows wait for the
    writer for seconds under load, and each tuple made then was walked by the next
    young-generation collection (a pause of tens of milliseconds with tens of thousands).
    A slice of rows is a list of tuples, made when the writer asks for it."""

    __slots__ = ("values", "width")

    def __init__(self, width: int) -> None:
        self.width = width
        self.values: list[Any] = []

    def add(self, *row: Any) -> None:
        if len(row) != self.width:
            raise ValueError(f"a row of {len(row)} values where there are {self.width}")
        self.values.extend(row)

    def __len__(self) -> int:
        return len(self.values) // self.width

    def __getitem__(self, index: Any) -> Any:
        width, values = self.width, self.values
        if isinstance(index, slice):
            return [tuple(values[at * width : at * width + width]) for at in range(*index.indices(len(self)))]
        at = range(len(self))[index]  # an IndexError past the end
        return tuple(values[at * width : at * width + width])


log = logging.getLogger("payemu")
Statement = tuple[str, Sequence[tuple[Any, ...]]]  # its SQL and its rows (a list of tuples, or Rows)
BUSY_TIMEOUT = 1.0  # seconds a write waits for a lock another process holds on the file
# How much lower than the server's the writer thread's CPU priority is (Linux's nice is
# per thread): where requests and the writer share a core, requests go first and the
# file catches up in the gaps. 0 turns it off.
WRITER_NICE = 10
# Rows written between two naps of the writer thread, and the nap (seconds). Once it has
# the core, the writer keeps it until it waits: where it shares a core with requests, a
# statement of thousands of rows written in one go held them up a scheduler slice at a
# time (4-6 ms). Writing 20 rows (about 0.2 ms) and then sleeping hands the core back.
CHUNK = 20
NAP = 0.0005
# Bytes per page of a file payemu creates. A save's rows (a journal entry is 1-2 KB) fill
# a fraction of the pages that SQLite's default 4 KiB gives, so a commit writes, syncs
# and checkpoints fewer pages: 17 ms of CPU in place of 53 for a save of ~17,000 rows.
PAGE_SIZE = 16384


TENANT_DOC, RECORD_DOC = schema.doc_within(schema.MAX_TENANT_DOCUMENT), schema.doc_within(schema.MAX_RECORD_DOCUMENT)


def migrate_hint(path: Path | str) -> str:
    return f"convert it once with: payemu state migrate {path} NEW.sqlite (then serve with --state NEW.sqlite)"


def check_writable(path: Path) -> None:
    """Refuse (:class:`StateError`) a ``--state`` path payemu could not write to."""
    parent = path.parent
    if not parent.is_dir():
        reason = "does not exist" if not parent.exists() else "is not a directory"
        raise StateError(f"--state {path}: the directory {parent} {reason}")
    if path.is_dir():
        raise StateError(f"--state {path}: is a directory, not a file")
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=1)) as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("ROLLBACK")
    except sqlite3.Error as exc:
        if "not a database" in str(exc) or "malformed" in str(exc):
            raise StateError(f"{path}: not a payemu state file") from None
        raise StateError(f"--state {path}: cannot be written ({exc})") from None


def remove_orphans(path: Path) -> list[Path]:
    """Delete the temporary files an older payemu killed mid-save left beside ``path``
    (``.NAME.*.tmp``); SQLite's own ``-wal`` and ``-journal`` are replayed on open instead."""
    removed = []
    for orphan in path.parent.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(OSError):
            orphan.unlink()
            removed.append(orphan)
    return removed


def read(path: Path, settings: Settings) -> list[Tenant]:
    """Every tenant of the state file at ``path`` (none for an absent or empty file)."""
    return load(path, settings)[0]


def load(path: Path, settings: Settings) -> tuple[list[Tenant], bool]:
    """:func:`read`, and whether the bounds dropped some of what the file holds."""
    if not path.exists() or path.stat().st_size == 0:
        return [], False
    with path.open("rb") as handle:
        if handle.read(len(schema.SQLITE_MAGIC)) != schema.SQLITE_MAGIC:
            raise StateError(f"{path}: not a payemu state file")
    try:
        with contextlib.closing(shape.open_read_only(path)) as db:
            if not _check_format(db, path):
                return [], False
            builder = Builder(settings)
            builder.add_tenants(db.execute(f"SELECT key, {TENANT_DOC} FROM tenants ORDER BY rowid"))
            _add_journals(db, builder)  # first: what goes first for the budgets is there to go
            for key, kind, ident, doc in db.execute(
                f"SELECT tenant, kind, id, {RECORD_DOC} FROM records ORDER BY rowid"
            ):
                builder.add_record(key, kind, ident, doc)
            return builder.tenants(), _say_dropped(path, builder)
    except Invalid as exc:
        raise StateError(f"{path}: refused, {exc}") from None
    except sqlite3.Error as exc:
        raise StateError(f"{path}: not a payemu state file ({str(exc).splitlines()[0]})") from None


def _add_journals(db: sqlite3.Connection, builder: Builder) -> None:
    """Each tenant's newest journal entries, as many as its journal holds (the older ones
    would be dropped first: they are counted, not read)."""
    stray = db.execute("SELECT tenant FROM journal WHERE tenant NOT IN (SELECT key FROM tenants) LIMIT 1").fetchone()
    if stray is not None:
        raise Invalid(f"a journal entry of {str(stray[0])[:40]!r}, a key the file has no tenant for")
    size = builder.settings.journal_size
    for key in builder.tenant_keys():
        (count,) = db.execute("SELECT count(*) FROM journal WHERE tenant = ?", (key,)).fetchone()
        rows = db.execute(
            f"SELECT id, {RECORD_DOC} FROM journal WHERE tenant = ? ORDER BY id DESC LIMIT ?", (key, size)
        )
        builder.add_journal(key, rows, count)


def _say_dropped(path: Path, builder: Builder) -> bool:
    """One log line for what the bounds dropped while loading; whether anything was."""
    entries, records = builder.held()
    gone_entries = builder.read["journal"] + builder.unread - entries
    gone_records = builder.read["record"] - records
    if not gone_entries and not gone_records:
        return False
    log.warning(
        "%s: %d journal entries and %d records were over the journal's bounds or the byte budgets (limits) and"
        " were dropped, oldest first (%.1f MiB read, %d entries not read); the file drops them too",
        path,
        gone_entries,
        gone_records,
        builder.dropped_bytes / MIB,
        builder.unread,
    )
    return True


def _check_format(db: sqlite3.Connection, path: Path) -> bool:
    """Whether the file holds anything (False: an empty database, which payemu starts);
    :class:`StateError` for a file that is not exactly a state file of this format."""
    found = shape.objects(db)
    if not found:
        return False
    if ("table", "payemu_state") in found and ("table", "payemu_meta") not in found:
        row = db.execute("SELECT format, version FROM payemu_state").fetchone()
        if row is not None and row[0] == schema.FORMAT and row[1] == schema.OLD_VERSION:
            raise StateError(
                f"{path}: a state file of payemu's old pickle format, which is no longer read; {migrate_hint(path)}"
            )
        raise StateError(f"{path}: not a payemu state file")
    meta = ("table", "payemu_meta")
    if found.get(meta) != shape.expected()[meta]:  # read only once it is payemu's table
        raise StateError(f"{path}: not a payemu state file")
    values = dict(db.execute("SELECT name, value FROM payemu_meta").fetchall())
    if values.get("format") != schema.FORMAT:
        raise StateError(f"{path}: not a payemu state file")
    if values.get("version") != str(schema.VERSION):
        raise StateError(
            f"{path}: state format version {str(values.get('version'))[:20]} is not the version {schema.VERSION}"
            " this payemu reads; move the file away to start empty"
        )
    shape.check(db, path)
    return True


class Writer:
    """The one thread that writes the state file, through one SQLite connection."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="payemu-state")
        self._db: sqlite3.Connection | None = None
        self.nap = NAP  # 0 once no request is left to make way for (the last save at a stop)
        self._schema_version = -1  # SQLite's count of schema changes when the schema was last checked

    def submit(self, statements: list[Statement]) -> concurrent.futures.Future[None]:
        return self._thread.submit(self.apply, statements)

    def close(self) -> concurrent.futures.Future[None]:
        done = self._thread.submit(self._close)
        self._thread.shutdown(wait=False)
        return done

    def apply(self, statements: list[Statement]) -> None:
        """Run ``statements`` as one transaction and commit it to the disk, with a nap
        (:data:`NAP`) after every :data:`CHUNK` rows, counted across statements (see
        there: a save's journal entries come 8 to a statement, and hundreds of those
        written back to back took the core for a scheduler tick, 4 ms). :class:`Unsaved`
        when the file's schema is no longer payemu's or a row written is not there."""
        db = self._db if self._db is not None else self._open()
        self._check_schema(db)
        since_nap = 0
        with db:
            for sql, rows in statements:
                landed = schema.READ_BACK.get(sql)
                for start in range(0, len(rows), CHUNK):
                    chunk = rows[start : start + CHUNK]
                    db.executemany(sql, chunk)
                    if landed is not None:
                        _check_landed(db, landed, chunk[-1])
                    since_nap += len(chunk)
                    if since_nap >= CHUNK and self.nap:
                        time.sleep(self.nap)
                        since_nap = 0

    def _check_schema(self, db: sqlite3.Connection) -> None:
        """The schema as the writer left it (SQLite counts every change of it in
        ``schema_version``: one read where a comparison of every object costs more)."""
        version = db.execute("PRAGMA schema_version").fetchone()[0]
        if version != self._schema_version:
            found = shape.problem(db)
            if found is not None:
                raise Unsaved(None, f"{self.path} was changed by another program: {found}")
            self._schema_version = version

    def _open(self) -> sqlite3.Connection:
        lower_priority(WRITER_NICE)
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level="DEFERRED")
        shape.harden(db)
        db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new file's (one that exists keeps its own)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        with db:
            for table in schema.TABLES:
                db.execute(table)
            db.executemany(
                schema.UPSERT_META,
                [("format", schema.FORMAT), ("version", str(schema.VERSION)), ("payemu", __version__)],
            )
        self._db = db
        return db

    def _close(self) -> None:
        db = self._db
        if db is None:
            return
        self._db = None
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.execute("PRAGMA journal_mode=DELETE")  # one file at rest: the -wal and -shm go
        finally:
            db.close()


class Unsaved(Exception):
    """A save that did not land: the rows of the tenant ``key`` (None: of every tenant)
    are not what was written."""

    def __init__(self, key: str | None, reason: str) -> None:
        super().__init__(reason)
        self.key = key


def _check_landed(db: sqlite3.Connection, query: str, row: tuple[Any, ...]) -> None:
    """The last row of a chunk, read back (a point lookup by its key): its document is
    the one just written, else :class:`Unsaved` naming its tenant."""
    found = db.execute(query, row[:-1]).fetchone()
    if found is None or found[0] != row[-1]:
        raise Unsaved(str(row[0]), "a row written was not in the file when read back")


def lower_priority(steps: int) -> None:
    """Lower the calling thread's CPU priority by ``steps`` nice levels, on Linux (where
    the nice value belongs to each thread; elsewhere it would be the whole process's)."""
    if sys.platform != "linux" or steps <= 0:
        return
    thread = threading.get_native_id()
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + steps))


def write_all(path: Path, statements: list[Statement]) -> None:
    """Create the state file ``path`` holding ``statements`` (``payemu state migrate``)."""
    writer = Writer(path)
    try:
        writer.submit(statements).result()
    finally:
        writer.close().result()
