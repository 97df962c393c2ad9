"""The stall benchmark names what ran during a stall of the event loop: a collection
first, then a save's step, then the writer thread (no timing here: speed figures belong
to the benchmark commands, not to the suite)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.benchmarks.stalls import Watch, cause

NOTES: dict[str, list[Any]] = {
    "collections": [(10.0, 10.04, 0)],
    "steps": [(10.02, 10.0205), (20.0, 20.0005)],
    "writes": [(19.0, 21.0), (30.0, 31.0)],
}


@pytest.mark.parametrize(
    ("stall", "label"),
    [
        ((10.001, 10.045), "collection"),  # a save's step overlaps it too: the collection is named
        ((20.0002, 20.004), "save step"),
        ((30.5, 30.51), "writer"),
        ((40.0, 40.01), "other"),
        ((10.04, 10.05), "other"),  # ends touching: not overlapping
    ],
)
def test_a_stall_is_put_down_to_what_ran_during_it(stall: tuple[float, float], label: str) -> None:
    assert cause(stall, NOTES) == label


def test_the_watcher_keeps_a_bounded_number_of_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tests.benchmarks.stalls.KEEP", 3)
    watch = Watch()
    for number in range(10):
        watch.note(watch.stalls, (float(number), number + 0.01))
    assert watch.stalls == [(0.0, 0.01), (1.0, 1.01), (2.0, 2.01)]
