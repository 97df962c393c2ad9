"""--watch: scenario files reloaded when they change, state kept, no watcher otherwise."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.scenarios.watcher import Watcher
from tests.conftest import SANDBOX


def _write(path: Path, *names: str, result: str = "Success") -> None:
    rules = [{"name": n, "when": {"amount": 1}, "then": {"operationResultCode": result}} for n in names]
    path.write_text(json.dumps({"scenarios": rules}))


def _first_names(app: Starlette, count: int) -> list[str]:
    runtime = app.state.runtime
    return [r.name for r in runtime.scenarios.rules(runtime.tenants.get("sandbox-api-key"))][:count]


def test_no_watcher_unless_asked(app: Starlette) -> None:
    assert app.state.runtime.watcher is None


def test_check_reloads_on_change_only(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    _write(rules, "one")
    app = make_app(scenario_paths=[str(rules)])
    watcher = Watcher(app.state.runtime)
    assert watcher.check() is False
    _write(rules, "two", "three")
    assert watcher.check() is True
    assert watcher.check() is False
    assert watcher.reloads == 1
    assert _first_names(app, 2) == ["two", "three"]


def test_a_broken_file_is_logged_once_and_the_old_rules_stay(
    make_app: Callable[..., Starlette], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rules = tmp_path / "rules.yaml"
    _write(rules, "good")
    app = make_app(scenario_paths=[str(rules)])
    watcher = Watcher(app.state.runtime)
    _write(rules, "bad", result="Nope")
    with caplog.at_level(logging.ERROR, logger="payemu"):
        assert watcher.check() is False
        assert watcher.check() is False
    assert len([r for r in caplog.records if "do not check out" in r.message]) == 1
    assert watcher.problems
    assert watcher.problems[0].startswith(f"{rules}:")
    assert _first_names(app, 1) == ["good"]
    _write(rules, "fixed")
    assert watcher.check() is True
    assert watcher.problems == []
    assert _first_names(app, 1) == ["fixed"]


def test_watch_reloads_in_the_background_keeping_state(
    make_app: Callable[..., Starlette], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("emulator.scenarios.watcher.INTERVAL_SECONDS", 0.02)
    rules = tmp_path / "rules.yaml"
    _write(rules, "before")
    app = make_app(scenario_paths=[str(tmp_path)], watch=True)
    assert app.state.runtime.watcher is None, "the watcher starts with the server's lifespan, not with the routes"
    with TestClient(app, headers=SANDBOX) as client:
        watcher = app.state.runtime.watcher
        assert watcher is not None
        assert watcher.running
        client.post("/_emulator/scenarios", json={"name": "mine", "then": {"operationResultCode": "Success"}})
        client.get("/Utils/apiKey")
        _write(rules, "after")
        deadline = time.monotonic() + 5
        while _first_names(app, 2) != ["mine", "after"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _first_names(app, 2) == ["mine", "after"]
        assert len(client.get("/_emulator/requests").json()["requests"]) == 1
    assert not watcher.running, "the lifespan stops the watcher"
    assert app.state.runtime.watcher is None
