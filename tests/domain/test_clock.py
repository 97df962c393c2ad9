from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from emulator.domain.clock import Clock, isoformat, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8d", timedelta(days=8)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("250ms", timedelta(milliseconds=250)),
        ("2w", timedelta(weeks=2)),
        ("1d12h", timedelta(days=1, hours=12)),
        ("45", timedelta(seconds=45)),
        (90, timedelta(seconds=90)),
        ("0.5s", timedelta(milliseconds=500)),
    ],
)
def test_parse_duration(text: str | int, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "8x", "d8", "-1", "1d-2h", "abc", True, -5])
def test_parse_duration_refuses(text: str | int) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_frozen_clock_moves_only_when_advanced() -> None:
    start = datetime(2030, 1, 1, tzinfo=UTC)
    clock = Clock(start)
    assert clock.now() == start
    assert clock.advance(timedelta(days=8)) == start + timedelta(days=8)
    assert clock.now() == start + timedelta(days=8)
    with pytest.raises(ValueError):
        clock.advance(timedelta(seconds=-1))


def test_real_clock_follows_time_plus_offset() -> None:
    clock = Clock()
    clock.advance(timedelta(days=1))
    drift = clock.now() - datetime.now(UTC) - timedelta(days=1)
    assert abs(drift) < timedelta(seconds=1)


def test_isoformat() -> None:
    moment = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert isoformat(moment) == "2030-01-02T03:04:05.678Z"


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC),  # no fraction: still three digits
        datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),  # a year of three digits, padded
        datetime(2026, 11, 24, 1, 30, 0, 1500, tzinfo=timezone(timedelta(hours=-5))),  # another zone: in UTC
    ],
)
def test_isoformat_matches_the_standard_library(moment: datetime) -> None:
    expected = moment.astimezone(UTC).isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"
    assert isoformat(moment) == expected
