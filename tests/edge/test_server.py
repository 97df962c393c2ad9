"""emulator.edge.server: what serve_forever sets up before uvicorn runs."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from emulator.domain.config import Settings
from emulator.edge import server


def test_serve_forever_freezes_start_up_and_collects_less_often(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[Any] = []
    monkeypatch.setattr(server.Server, "run", lambda self, sockets=None: ran.append(sockets))
    before = gc.get_threshold()
    try:
        server.serve_forever(object(), Settings(port=1))  # type: ignore[arg-type]
        assert gc.get_threshold() == server.GC_THRESHOLDS
        assert gc.get_freeze_count() > 0
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
    assert ran == [None]
