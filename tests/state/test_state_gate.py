"""``--state``'s gate (emulator.state.gate): answers wait while the file trails the
acknowledgements, and never once the saving has stopped."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.state.gate import LAG_SECONDS, Durable
from tests.conftest import SANDBOX


def test_the_file_trails_once_no_save_came_for_longer_than_the_lag() -> None:
    durable = Durable()
    assert not durable.behind()
    durable.until -= LAG_SECONDS + 0.1
    assert durable.behind()
    durable.saved(time.monotonic())
    assert not durable.behind()


@pytest.mark.parametrize("end", ["failed", "stop"])
def test_a_failed_or_stopped_saving_holds_no_answer(end: str) -> None:
    async def waits() -> float:
        durable = Durable()
        durable.until -= LAG_SECONDS + 0.1
        waiting = asyncio.ensure_future(durable.catch_up())
        await asyncio.sleep(0.05)
        assert not waiting.done()  # behind, and no save comes: it waits
        began = time.monotonic()
        getattr(durable, end)()
        await asyncio.wait_for(waiting, 5)
        assert not durable.behind()
        return time.monotonic() - began

    assert asyncio.run(waits()) < LAG_SECONDS  # woken, not timed out


def test_an_answer_after_the_lifespan_ended_is_not_held(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    client = TestClient(make_app(state_path=str(tmp_path / "s.sqlite")), headers=SANDBOX)
    with client:
        assert client.get("/Utils/apiKey").status_code == 200
    time.sleep(LAG_SECONDS + 0.2)  # the last save is now older than the lag
    answers: list[int] = []
    asking = threading.Thread(target=lambda: answers.append(client.get("/Utils/apiKey").status_code), daemon=True)
    asking.start()
    asking.join(10)
    assert answers == [200]
