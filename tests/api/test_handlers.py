"""The table of which handler module answers which operation, and the import on first call."""

from __future__ import annotations

import asyncio
import importlib

import pytest

from emulator import api
from emulator.endpoints.pipeline import Call, Reply


@pytest.mark.parametrize("module", sorted(api.MODULES))
def test_the_table_names_exactly_the_operations_each_module_handles(module: str) -> None:
    handlers = importlib.import_module(f"emulator.api.{module}").HANDLERS
    assert sorted(api.MODULES[module]) == sorted(handlers)


def test_no_operation_has_two_modules() -> None:
    listed = [op for operation_ids in api.MODULES.values() for op in operation_ids]
    assert len(listed) == len(set(listed)) == len(api.handlers())


def test_a_handler_is_the_modules_own_once_called(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []

    async def answer(call: Call) -> Reply:
        seen.append(call)
        return Reply(200, {"called": True})

    module = importlib.import_module("emulator.api.tools")
    monkeypatch.setitem(module.HANDLERS, "LuhnCheck", answer)
    handler = api.handlers()["LuhnCheck"]
    call = object()
    reply = asyncio.run(handler(call))  # type: ignore[arg-type]
    assert (reply.status, reply.body, seen) == (200, {"called": True}, [call])
    assert handler.load() is answer  # type: ignore[attr-defined]
