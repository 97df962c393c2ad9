"""``payemu state migrate`` on crafted files of the old format: whatever a blob holds
(the allowed types called with what they refuse, a damaged pickle, a hostile schema),
the command ends with one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import gc
import pickle
import sqlite3
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from emulator.cli import main as cli
from tests.state.test_state_migrate import old_format_file
from tests.support.paths import REPO_ROOT as ROOT
from tests.support.servers import payemu

OLD_FILE = ROOT / "tests" / "data" / "state-before-slotted-transactions.sqlite"


def _blob() -> bytes:
    with sqlite3.connect(OLD_FILE) as db:
        (blob,) = db.execute("SELECT stores FROM tenants WHERE key = 'sandbox-api-key'").fetchone()
    db.close()
    return bytes(blob)


BLOB = _blob()


def _call(module: str, name: str, *args: object) -> bytes:
    """A protocol-2 pickle calling ``module.name(*args)`` (the argument pickled as given)."""
    return (
        b"\x80\x02c"
        + f"{module}\n{name}\n".encode()
        + pickle.dumps(args, protocol=2)[2:-1]  # the tuple of arguments, without its frame and STOP
        + b"R."
    )


def _with_blob(path: Path, blob: bytes) -> Path:
    old_format_file(path, None)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE tenants SET stores = ?", (blob,))
    db.close()
    return path


def _migrate(old: Path, new: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    status = cli.main(["state", "migrate", str(old), str(new)])
    return status, capsys.readouterr().err.splitlines()


CRAFTED = [
    _call("datetime", "timedelta", 10**30),
    _call("datetime", "timedelta", 0, 0, 0, 0, 0, 10**12),
    _call("datetime", "datetime", 10**20, 1, 1),
    _call("datetime", "date", -1, 0, 0),
    _call("datetime", "timezone", timedelta(hours=30)),
    _call("decimal", "Decimal", "1e999999999999999999999"),
    _call("itertools", "count", "not a number"),
    _call("collections", "deque", 5),
    pickle.dumps({"clock": Decimal("NaN"), "journal": [1] * 3}),
    pickle.dumps({"ledger": {"_transactions": {"x": 1}}}),
    pickle.dumps([[]] * 10),
    b"\x80\x05" + b"(" * 100_000 + b".",
    b"",
    BLOB[: len(BLOB) // 2],
]


@pytest.mark.parametrize("blob", CRAFTED, ids=range(len(CRAFTED)))
def test_a_crafted_blob_gives_one_line_and_status_2(
    blob: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _with_blob(tmp_path / "old.sqlite", blob)
    status, lines = _migrate(old, tmp_path / "new.sqlite", capsys)
    assert status == 2
    assert len(lines) == 1 and lines[0].startswith(f"payemu: {old}: "), lines
    assert not (tmp_path / "new.sqlite").exists()


def test_a_huge_timedelta_from_the_command_line_is_one_line(tmp_path: Path) -> None:
    old = _with_blob(tmp_path / "old.sqlite", _call("datetime", "timedelta", 10**30))
    result = payemu("state", "migrate", str(old), str(tmp_path / "new.sqlite"))
    assert (result.returncode, result.stderr.splitlines()) == (
        2,
        [
            f"payemu: {old}: refused, the state of key 'sandbox-api-key' cannot be migrated"
            " (Python int too large to convert to C int)"
        ],
    )


class Journal:
    """Pickled under the old journal's name (the global is rewritten in the blob)."""


def _shared_lists(depth: int) -> bytes:
    """A journal entry holding a chain of lists, each holding the next one twice: a few
    hundred bytes that would be written out as 2 ** ``depth`` strings."""
    level: list[object] = ["payemu"]
    for _ in range(depth):
        level = [level, level]
    journal = Journal()
    journal._entries = [{"id": 1, "request": level}]  # type: ignore[attr-defined]
    blob = pickle.dumps({"journal": journal}, protocol=2)
    return blob.replace(f"c{__name__}\nJournal\n".encode(), b"cemulator.payments.journal\nJournal\n")


def test_shared_references_are_counted_as_written_out_within_a_memory_limit(tmp_path: Path) -> None:
    import resource
    import subprocess
    import sys

    blob = _shared_lists(60)
    assert b"emulator.payments.journal" in blob and len(blob) < 600
    old = _with_blob(tmp_path / "old.sqlite", blob)
    limit = 256 * 1024 * 1024

    def limited() -> None:  # what crashed the command before: it expanded the chain in C
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    started = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    result = subprocess.run(
        [sys.executable, "-m", "emulator", "state", "migrate", str(old), str(tmp_path / "new.sqlite")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limited,
    )
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - started
    assert (result.returncode, result.stderr.splitlines()) == (
        2,
        [
            f"payemu: {old}: refused, the state of key 'sandbox-api-key' cannot be migrated"
            " (stores that expand to over 67108864 values and characters)"
        ],
    )
    assert cpu < 5, f"{cpu:.1f} s of CPU"
    assert not (tmp_path / "new.sqlite").exists()


def test_a_shared_reference_is_weighed_each_time_and_a_cycle_is_refused() -> None:
    from emulator.state.migrate import expanded_weight

    text = "abc"  # 1 + 3
    pair = [text, text]  # 1 + 4 + 4
    assert expanded_weight([pair, pair, pair]) == 1 + 3 * 9
    assert expanded_weight({"k": pair}) == 1 + 2 + 9
    looped: list[object] = []
    looped.append([looped])
    with pytest.raises(pickle.UnpicklingError, match="refer to themselves"):
        expanded_weight(looped)
    with pytest.raises(pickle.UnpicklingError, match="over 20"):
        expanded_weight([pair, pair, pair], limit=20)


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE VIEW everything AS SELECT * FROM tenants",
        "CREATE TRIGGER gone AFTER INSERT ON tenants BEGIN DELETE FROM tenants; END",
        "DROP TABLE payemu_state",
        "UPDATE payemu_state SET version = 'one'",
        "UPDATE tenants SET account_id = 'many' WHERE key = 'live-api-key'",
        "UPDATE tenants SET stores = 'text' WHERE key = 'live-api-key'",
    ],
)
def test_a_crafted_old_file_gives_one_line_and_status_2(
    sql: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.sqlite"
    old.write_bytes(OLD_FILE.read_bytes())
    with sqlite3.connect(old) as db:
        db.execute(sql)
    db.close()
    status, lines = _migrate(old, tmp_path / "new.sqlite", capsys)
    assert status == 2
    assert len(lines) == 1 and lines[0].startswith(f"payemu: {old}: "), lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cuts=st.lists(
        st.tuples(st.integers(0, len(BLOB) - 1), st.integers(0, 8), st.binary(max_size=8)), min_size=1, max_size=4
    )
)
# a bytearray whose declared length runs past the blob: CPython's unpickler printed a
# SystemError of its own beside payemu's line
@example(cuts=[(3564, 6, b"\x96\x81\xf4\xa13j\xa2\x14")])
def test_a_mutated_blob_migrates_or_gives_one_line_and_status_2(
    cuts: list[tuple[int, int, bytes]], tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bytes of a real old blob replaced, dropped or inserted: either it still converts
    (and serves: the file written passed the loader's checks) or one line and status 2."""
    blob = bytearray(BLOB)
    for at, length, put in cuts:
        blob[at : at + length] = put
    where = tmp_path_factory.mktemp("fuzz")
    old = _with_blob(where / "old.sqlite", bytes(blob))
    status, lines = _migrate(old, where / "new.sqlite", capsys)
    if status == 0:
        assert (where / "new.sqlite").exists()
    else:
        assert status == 2
        assert len(lines) == 1 and lines[0].startswith(f"payemu: {old}: "), lines


def test_a_length_past_the_blob_is_refused_before_anything_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    from emulator.state.migrate import unpickle

    blob = bytearray(BLOB)
    blob[3564:3570] = b"\x96\x81\xf4\xa13j\xa2\x14"  # a bytearray of about 6 PB
    with pytest.raises(pickle.UnpicklingError, match="bytearray8"):
        unpickle(bytes(blob))
    gc.collect()  # (what the unpickler left half made is gone by now)
    assert capsys.readouterr().err == ""
