"""Time buckets and the legend of the dashboard's outcome chart (emulator/ui/chart.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from emulator.domain.vocabulary import RESULT_CODES
from emulator.ui import chart

T0 = datetime(2026, 11, 24, 9, 0, 0, tzinfo=UTC)


def spread(span: timedelta, count: int = 10) -> list[datetime]:
    return [T0 + span * index / (count - 1) for index in range(count)]


def test_payments_in_one_second_make_one_bar_among_a_few() -> None:
    moments = [T0 + timedelta(milliseconds=90 * i) for i in range(10)]
    drawn = chart.outcomes([(m, "Rejected" if i == 3 else "Success") for i, m in enumerate(moments)])
    assert drawn["step"] == 1
    assert drawn["stepText"] == "1 second"
    assert len(drawn["bars"]) == chart.MIN_BUCKETS
    filled = [bar for bar in drawn["bars"] if bar["total"]]
    assert len(filled) == 1 and filled[0] is drawn["bars"][-1]  # the newest bucket is on the right
    assert [(s["code"], s["count"]) for s in filled[0]["segments"]] == [("Success", 9), ("Rejected", 1)]
    assert sum(s["height"] for s in filled[0]["segments"]) == pytest.approx(chart.HEIGHT)


@pytest.mark.parametrize(
    ("span", "step"),
    [
        (timedelta(seconds=0), 1),
        (timedelta(seconds=90), 5),
        (timedelta(minutes=20), 60),
        (timedelta(hours=3), 600),
        (timedelta(days=2), 3 * 3600),
        (timedelta(days=60), 7 * 86400),
    ],
)
def test_the_step_is_the_shortest_round_one_that_fits(span: timedelta, step: int) -> None:
    moments = spread(span)
    assert chart.bucket_step(min(moments), max(moments)) == step
    found, origin, count = chart.buckets(moments)
    assert chart.MIN_BUCKETS <= count <= chart.MAX_BUCKETS
    assert (
        origin <= min(moments) < max(moments) + timedelta(microseconds=1) <= origin + timedelta(seconds=count * found)
    )
    assert (origin - chart.EPOCH).total_seconds() % found == 0  # aligned to whole steps
    shorter = chart.STEPS[chart.STEPS.index(step) - 1] if step > 1 else None
    if shorter:  # the step before would need more bars than fit
        first = int((min(moments) - chart.EPOCH).total_seconds() // shorter)
        last = int((max(moments) - chart.EPOCH).total_seconds() // shorter)
        assert last - first + 1 > chart.MAX_BUCKETS


def test_every_operation_lands_in_a_bar() -> None:
    moments = spread(timedelta(hours=5), 50)
    drawn = chart.outcomes([(m, "Success") for m in moments])
    assert sum(bar["total"] for bar in drawn["bars"]) == 50
    assert drawn["stepText"] == "15 minutes"
    assert drawn["bars"][0]["label"].startswith("24 Nov 09:00:00 (+15 minutes): ")


def test_the_legend_has_every_result_code_with_its_own_glyph() -> None:
    drawn = chart.outcomes([(T0, "TemporaryFailure"), (T0, "TemporaryFailure"), (T0, "Success")])
    assert [item["code"] for item in drawn["legend"]] == list(RESULT_CODES)
    counts = {item["code"]: item["count"] for item in drawn["legend"]}
    assert counts == {
        "Success": 1,
        "Accepted": 0,
        "Rejected": 0,
        "TemporaryFailure": 2,
        "FatalFailure": 0,
        "NotImplemented": 0,
    }
    assert set(chart.GLYPHS) == set(RESULT_CODES)
    assert len(set(chart.GLYPHS.values())) == len(RESULT_CODES)


def test_without_operations_no_bars_but_the_legend() -> None:
    drawn = chart.outcomes([])
    assert drawn["bars"] == []
    assert len(drawn["legend"]) == len(RESULT_CODES)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(1, "1 second"), (30, "30 seconds"), (60, "1 minute"), (900, "15 minutes"), (7200, "2 hours"), (86400, "1 day")],
)
def test_step_text(seconds: int, text: str) -> None:
    assert chart.step_text(seconds) == text
