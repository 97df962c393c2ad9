"""The memory ceiling (384 MiB, docs/reference/limits.md) under what clients can make
payemu hold beyond its HTTP edge, each probe on a real server (tests/support/probes.py):
journal reads of entries that parse to many times their text, stored gateway accounts
with long credentials, per-key interface documents. Each probe, unweighed, went past the
ceiling; the peak (VmHWM) must now stay under it with room to spare, and the budget the
control API reports must be what the stores hold (within the documented overhead)."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import REPO_ROOT
from tests.support.probes import CEILING_MIB, MIB, Probe, accounts, interfaces, journal_reads, run

MARGIN_MIB = 24  # the peak stays this far under the ceiling
OVERHEAD_MIB = 128  # what the process holds besides the budgets (docs/reference/limits.md)


def _within(probe: Probe, overhead: bool = True) -> None:
    """The peak under the ceiling with the margin; with ``overhead``, no further above the
    budget the control API reports than the documented overhead."""
    assert probe.peak_mib < CEILING_MIB - MARGIN_MIB, probe.line()
    if overhead:
        assert probe.peak_mib - probe.budget_mib < OVERHEAD_MIB, probe.line()


def test_reading_the_journal_keeps_no_entry_parsed() -> None:
    # 6 keys: 48 entries of 1 MiB text, counted and listed (before: about 70 MiB a key)
    probe = run("journal", journal_reads(keys=6, posts=8))
    assert probe.statuses == {400: 48, 200: 12}, probe.line()
    _within(probe)


def test_stored_accounts_are_weighed_and_stop_at_the_process_budget(tmp_path: Path) -> None:
    # five 4,096-character credentials an account (about 21 KB weighed): the default budget
    # takes some 12,000 of them to fill (20 keys x 1,000 at the defaults peaked at 720 MiB
    # before they were weighed; python -m tests.benchmarks.held --only accounts runs that);
    # with memoryBytes at 8 MiB, 1,000 of them reach it
    config = tmp_path / "limits.yaml"
    config.write_text(f"limits:\n  memoryBytes: {8 * MIB}\n")
    probe = run("accounts", accounts(keys=2, per_key=500), REPO_ROOT, "--config", str(config))
    assert probe.statuses.get(507, 0) > 0, probe.line()
    assert 300 < probe.statuses.get(200, 0) < 500, probe.line()
    assert 6 < probe.budget_mib <= 8, probe.line()
    _within(probe)


def test_interface_documents_are_weighed_per_key(tmp_path: Path) -> None:
    # 0.95 MB documents, about 4 MiB each once compiled and weighed above that (before: 45
    # keys held 456 MiB, the budget said 0, and compiling one held 145 MiB no budget saw);
    # with memoryBytes at 32 MiB the fifth key's is refused
    config = tmp_path / "limits.yaml"
    config.write_text(f"limits:\n  memoryBytes: {32 * MIB}\n")
    probe = run("interface", interfaces(keys=9), REPO_ROOT, "--config", str(config))
    assert probe.statuses.get(200, 0) >= 3, probe.line()
    assert probe.statuses.get(507, 0) >= 3, probe.line()
    assert 16 < probe.budget_mib <= 32, probe.line()
    _within(probe)
