"""The in-process benchmark's two harnesses answer every benchmarked path for real (no
timing here: speed figures belong to the benchmark commands, not to the suite)."""

from __future__ import annotations

import asyncio
import json

from emulator.app.build import create_app
from emulator.domain.config import Settings
from tests.benchmarks.inprocess import split, through_app, through_protocol, timed
from tests.benchmarks.run import PATHS


def test_both_harnesses_answer_every_path() -> None:
    settings = Settings(log_level="warning")
    app = create_app(settings)

    async def run() -> dict[str, tuple[bytes, bytes]]:
        found = {}
        for name in PATHS:
            by_app = await through_app(app, name)()
            by_protocol = await through_protocol(app, settings, name)()
            found[name] = (by_app, by_protocol)
        return found

    answers = asyncio.run(run())
    assert set(answers) == {"charge", "string-token", "api-key"}
    for by_app, by_protocol in answers.values():
        status = by_protocol.split(b"\r\n", 1)[0]
        assert by_app.split(b" ")[1] == status.split(b" ")[1] in (b"200", b"201")
    charge = json.loads(answers["charge"][1].partition(b"\r\n\r\n")[2])
    assert charge["operationResultCode"] == "Success"


def test_split_times_each_call_of_the_app_by_either_harness() -> None:
    settings = Settings(log_level="warning")
    app = create_app(settings)
    times: list[int] = []
    wrapped = timed(app, times)

    async def run() -> tuple[bytes, bytes, tuple[float, float, float]]:
        by_app = await through_app(wrapped, "api-key")()
        by_protocol = await through_protocol(wrapped, settings, "api-key")()
        return by_app, by_protocol, await split(app, settings, "api-key", 5)

    by_app, by_protocol, (alone, inside, rest) = asyncio.run(run())
    assert by_app.startswith(b"HTTP/1.1 200 ") and by_protocol.startswith(b"HTTP/1.1 200 ")
    assert json.loads(by_protocol.partition(b"\r\n\r\n")[2])["status"] == "OK"
    assert len(times) == 2 and min(times) > 0  # one duration per call, through either harness
    assert alone > 0 and inside > 0 and isinstance(rest, float)
