"""The sharded deployment's files: deploy/haproxy.cfg passes `haproxy -c`, deploy/docker-compose.yml
passes `docker-compose config` and the Compose schema, and the two agree with each other.

tests/data/compose-spec.json is the Compose specification schema shipped by Debian's
docker-compose 1.29.2 (compose/config/compose_spec.json, Apache License 2.0).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from emulator.cli import main as cli
from tests.support.balancer import HAPROXY_CFG, render
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
COMPOSE = ROOT / "deploy" / "docker-compose.yml"
COMPOSE_SCHEMA = ROOT / "tests" / "data" / "compose-spec.json"
needs_haproxy = pytest.mark.haproxy  # without the tool: skipped with a summary line (tests/conftest.py)
needs_compose = pytest.mark.docker_compose


def _haproxy_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["haproxy", "-c", "-f", str(path)], capture_output=True, text=True, timeout=30)


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def _instances() -> dict[str, dict[str, Any]]:
    return {name: service for name, service in _compose()["services"].items() if name != "haproxy"}


def _servers() -> dict[str, str]:
    lines = [line.split() for line in HAPROXY_CFG.read_text().splitlines()]
    return {words[1]: words[2] for words in lines if words[:1] == ["server"]}


@needs_haproxy
def test_the_haproxy_configuration_passes_haproxy_c() -> None:
    checked = _haproxy_check(HAPROXY_CFG)
    assert checked.returncode == 0, checked.stderr
    assert "Configuration file is valid" in checked.stdout + checked.stderr


@needs_haproxy
def test_its_only_warnings_are_the_instance_names_outside_docker() -> None:
    warnings = [line for line in _haproxy_check(HAPROXY_CFG).stderr.splitlines() if "[WARNING]" in line]
    unresolved = [line for line in warnings if re.search(r"could not resolve address 'payemu\d+'", line)]
    assert warnings == unresolved


@needs_haproxy
def test_the_configuration_the_tests_run_has_no_warnings(tmp_path: Path) -> None:
    config = tmp_path / "haproxy.cfg"
    servers = {"payemu1": "127.0.0.1:18001", "payemu2": "127.0.0.1:18002"}
    config.write_text(render(HAPROXY_CFG.read_text(), "127.0.0.1:18000", servers, tmp_path / "sock"))
    checked = _haproxy_check(config)
    assert checked.returncode == 0, checked.stderr
    assert "[WARNING]" not in checked.stderr


def test_the_tests_change_only_addresses(tmp_path: Path) -> None:
    source = HAPROXY_CFG.read_text()
    rendered = render(source, "127.0.0.1:1", {"a": "127.0.0.1:2"}, tmp_path / "sock")
    kept = {line for line in source.splitlines() if not re.match(r"\s*(bind|server|stats socket) ", line)}
    assert kept <= set(rendered.splitlines())


@needs_compose
def test_the_compose_file_passes_docker_compose_config() -> None:
    env = {**os.environ, "PAYEMU_ADMIN_KEY": "compose-check-key"}
    checked = subprocess.run(
        ["docker-compose", "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, env=env, timeout=60
    )
    assert checked.returncode == 0, checked.stderr


@needs_compose
def test_the_compose_file_wants_an_admin_key() -> None:
    env = {name: value for name, value in os.environ.items() if name != "PAYEMU_ADMIN_KEY"}
    checked = subprocess.run(
        ["docker-compose", "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, env=env, timeout=60
    )
    assert "set PAYEMU_ADMIN_KEY" in checked.stderr


def test_the_compose_file_matches_the_compose_schema() -> None:
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    validator = jsonschema.Draft201909Validator(schema, format_checker=jsonschema.Draft201909Validator.FORMAT_CHECKER)
    assert [error.message for error in validator.iter_errors(_compose())] == []


def test_haproxy_knows_every_instance_of_the_compose_file() -> None:
    assert _servers() == {name: f"{name}:{cli.DEFAULT_PORT}" for name in _instances()}


@pytest.mark.parametrize("name", ["payemu1", "payemu2", "payemu3"])
def test_each_instance_takes_any_key_its_own_state_and_the_shared_admin_key(name: str) -> None:
    service = _instances()[name]
    settings = cli.settings_from(cli.build_parser().parse_args([*service["command"][1:-1], "admin-key-1"]))
    assert (settings.any_key, settings.port, settings.state_path) == (
        True,
        cli.DEFAULT_PORT,
        "/home/payemu/payemu.sqlite",
    )
    assert service["command"][-2:] == [
        "--admin-key",
        "${PAYEMU_ADMIN_KEY:?set PAYEMU_ADMIN_KEY to a secret of at least 8 characters}",
    ]
    assert service["volumes"] == [f"{name}-state:/home/payemu"]


def test_the_balancer_mounts_this_configuration() -> None:
    haproxy = _compose()["services"]["haproxy"]
    assert "./haproxy.cfg:/etc/haproxy/haproxy.cfg:ro" in haproxy["volumes"]
    dockerfile = (COMPOSE.parent / haproxy["build"]["dockerfile"]).read_text()
    assert "/etc/haproxy/haproxy.cfg" in dockerfile
