"""The state file on disk (emulator.state.database): a path payemu cannot write is refused
at start in one line, temporary files of earlier runs are removed, a file of the old
format is refused with the command that converts it, and the writer leaves one file,
writes a large save in chunks with naps (one transaction still; none at a stop) and gives
a new file 16 KiB pages."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from emulator.contract.openapi import OpenApi
from emulator.domain.config import Settings
from emulator.state import database, open_state, schema
from emulator.state.database import CHUNK, PAGE_SIZE, WRITER_NICE, Writer, check_writable, read, remove_orphans
from emulator.state.errors import StateError
from emulator.tenants.runtime import Runtime
from tests.support.paths import REPO_ROOT as ROOT
from tests.support.servers import free_port, payemu

NOW = datetime(2026, 11, 24, tzinfo=UTC)
OLD_FILE = ROOT / "tests" / "data" / "state-before-slotted-transactions.sqlite"


def _serve(path: Path) -> tuple[int, list[str]]:
    result = payemu("serve", "--port", str(free_port()), "--state", str(path))
    return result.returncode, result.stderr.splitlines()


def test_a_missing_directory_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "state.sqlite"
    assert _serve(path) == (2, [f"payemu: --state {path}: the directory {path.parent} does not exist"])
    assert not path.parent.exists()


def test_a_path_under_a_file_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a file, not a directory\n")
    path = tmp_path / "notes.txt" / "state.sqlite"
    assert _serve(path) == (2, [f"payemu: --state {path}: the directory {path.parent} is not a directory"])


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StateError, match="is a directory, not a file"):
        check_writable(tmp_path)


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    path.write_bytes(b"\x80\x05" + b"not a database at all " * 100)
    with pytest.raises(StateError, match=r"state\.sqlite: not a payemu state file$"):
        check_writable(path)
    with pytest.raises(StateError, match=r"state\.sqlite: not a payemu state file$"):
        read(path, Settings())


def test_an_old_format_file_is_refused_with_how_to_migrate(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    path.write_bytes(OLD_FILE.read_bytes())
    status, lines = _serve(path)
    assert status == 2
    assert lines == [
        f"payemu: {path}: a state file of payemu's old pickle format, which is no longer read; convert it once"
        f" with: payemu state migrate {path} NEW.sqlite (then serve with --state NEW.sqlite)"
    ]
    assert path.read_bytes() == OLD_FILE.read_bytes()  # left as it was


def test_orphaned_temporary_files_are_removed(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    orphans = [tmp_path / ".state.sqlite.k2j3h4.tmp", tmp_path / ".state.sqlite.migrate.tmp"]
    for orphan in orphans:
        orphan.write_bytes(b"x" * 1000)
    keep = tmp_path / ".other.sqlite.k2j3h4.tmp"
    keep.write_bytes(b"not ours")
    assert sorted(remove_orphans(path)) == sorted(orphans)
    assert [p.name for p in tmp_path.iterdir()] == [keep.name]


def test_the_writer_leaves_one_file(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    writer = Writer(path)
    writer.submit([(schema.UPSERT_ENTRY, [("k", 1, '{"id":1}')])]).result()
    assert (tmp_path / "state.sqlite-wal").exists()  # write-ahead while running
    writer.close().result()
    assert [p.name for p in tmp_path.iterdir()] == ["state.sqlite"]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert db.execute("SELECT doc FROM journal").fetchall() == [('{"id":1}',)]


def _entries(count: int, start: int = 1) -> list[tuple[str, int, str]]:
    return [("k", number, f'{{"id":{number}}}') for number in range(start, start + count)]


def test_a_large_save_is_written_in_chunks_with_naps_and_lands_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    naps: list[float] = []
    monkeypatch.setattr(database.time, "sleep", naps.append)
    path = tmp_path / "state.sqlite"
    writer = Writer(path)
    try:
        # one statement of 3 chunks and 7 rows, then five of 8 rows (a save's journal entries)
        small = [(schema.UPSERT_ENTRY, _entries(8, 1000 + 8 * number)) for number in range(5)]
        writer.submit([(schema.UPSERT_ENTRY, _entries(3 * CHUNK + 7)), *small]).result()
    finally:
        writer.close().result()
    # a nap once CHUNK rows are written, counted across statements: 3 in the first, then
    # at 7 + 8 + 8 rows and at 8 + 8 + 8
    assert CHUNK == 20 and naps == [database.NAP] * 5
    with sqlite3.connect(path) as db:
        ids = [number for (number,) in db.execute("SELECT id FROM journal ORDER BY id")]
    assert ids == list(range(1, 3 * CHUNK + 8)) + list(range(1000, 1040))


def test_rows_kept_end_to_end_read_as_tuples_and_land_whole(tmp_path: Path) -> None:
    rows = database.Rows(3)
    expected = _entries(CHUNK + 5)
    for row in expected:
        rows.add(*row)
    assert len(rows) == CHUNK + 5
    assert rows[0] == expected[0]
    assert rows[-1] == expected[-1]
    assert rows[CHUNK - 2 : CHUNK + 2] == expected[CHUNK - 2 : CHUNK + 2]
    with pytest.raises(IndexError):
        rows[CHUNK + 5]
    with pytest.raises(ValueError, match="3"):
        rows.add("k", 1)
    path = tmp_path / "state.sqlite"
    writer = Writer(path)
    try:
        writer.submit([(schema.UPSERT_ENTRY, rows)]).result()
    finally:
        writer.close().result()
    with sqlite3.connect(path) as db:
        ids = [number for (number,) in db.execute("SELECT id FROM journal ORDER BY id")]
    assert ids == [row[1] for row in expected]


def test_the_last_save_of_a_stop_takes_no_naps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    naps: list[float] = []
    monkeypatch.setattr(database.time, "sleep", naps.append)
    runtime = Runtime(Settings(state_path=str(tmp_path / "state.sqlite")), OpenApi.load())
    persistence = open_state(runtime, str(tmp_path / "state.sqlite"))
    vault = runtime.tenants.create(key="sandbox-many-tokens").vault
    for number in range(3 * CHUNK):  # one statement of more than CHUNK rows
        vault.store(f"payload {number}", lambda length, n=number: f"{n:0{length}d}", NOW)
    asyncio.run(persistence.stop())
    assert naps == []
    with sqlite3.connect(tmp_path / "state.sqlite") as db:
        assert db.execute("SELECT count(*) FROM records WHERE kind = 'stringToken'").fetchone() == (3 * CHUNK,)
    db.close()


def test_a_save_that_fails_part_way_leaves_none_of_its_chunks(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    writer = Writer(path)
    try:
        writer.submit([(schema.UPSERT_ENTRY, _entries(2))]).result()
        failing = writer.submit(
            [(schema.UPSERT_ENTRY, _entries(5 * CHUNK, 3)), ("INSERT INTO nowhere VALUES (?)", [(1,)])]
        )
        with pytest.raises(sqlite3.OperationalError, match="no such table: nowhere"):
            failing.result()
    finally:
        writer.close().result()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT id FROM journal ORDER BY id").fetchall() == [(1,), (2,)]  # one transaction


def test_a_new_file_gets_larger_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    new, old = tmp_path / "new.sqlite", tmp_path / "old.sqlite"
    with sqlite3.connect(old) as db:
        db.execute("PRAGMA page_size=4096")
        for table in schema.TABLES:
            db.execute(table)
    db.close()
    for path in (new, old):
        writer = Writer(path)
        writer.submit([(schema.UPSERT_ENTRY, _entries(3))]).result()
        writer.close().result()
    for path, size in ((new, PAGE_SIZE), (old, 4096)):
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA page_size").fetchone() == (size,)
            assert db.execute("SELECT count(*) FROM journal").fetchone() == (3,)
        db.close()


@pytest.mark.skipif(
    sys.platform != "linux", reason="a thread's own CPU priority is Linux's (elsewhere nice is per process)"
)
def test_the_writer_thread_yields_the_core_to_requests(tmp_path: Path) -> None:
    """The writer runs WRITER_NICE nice levels below the server's threads, which keep theirs."""
    writer = Writer(tmp_path / "state.sqlite")
    levels: list[int] = []
    try:
        writer.submit([]).result()  # the thread opens the file, lowering its priority
        writer._thread.submit(
            lambda: levels.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        ).result()
    finally:
        writer.close().result()
    ours = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert levels == [min(19, ours + WRITER_NICE)]
    assert ours == os.getpriority(os.PRIO_PROCESS, 0)  # the caller's priority did not move


def test_a_file_another_process_holds_locked_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with sqlite3.connect(path) as holder:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StateError, match=r"cannot be written \(database is locked\)$"):
            check_writable(path)
        holder.rollback()
