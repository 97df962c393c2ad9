"""The state file on disk (emulator.state.database): a path payemu cannot write is refused
at start in one line, temporary files of earlier runs are removed, a file of the old
format is refused with the command that converts it, and the writer leaves one file."""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
from pathlib import Path

import pytest

from emulator.config import Settings
from emulator.state import schema
from emulator.state.database import WRITER_NICE, Writer, check_writable, read, remove_orphans
from emulator.state.errors import StateError
from tests.serving import free_port
from tests.stateserver import ROOT, payemu

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
