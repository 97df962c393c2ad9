"""The Docker image (checked without Docker): base, user, port, command, health check."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.cli import main as cli
from tests.support.paths import REPO_ROOT
from tests.support.servers import PayemuProcess

ROOT = REPO_ROOT


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    found: list[tuple[str, str]] = []
    pending = ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, rest = whole.partition(" ")
        found.append((keyword.upper(), rest.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return found


def one(name: str) -> str:
    values = [rest for keyword, rest in instructions() if keyword == name]
    assert len(values) == 1, f"expected one {name}, found {len(values)}"
    return values[0]


def exec_form(text: str) -> list[str]:
    value = json.loads(text)
    assert isinstance(value, list), "use the JSON (exec) form"
    assert all(isinstance(v, str) for v in value), "use the JSON (exec) form"
    return value


def test_slim_python_base() -> None:
    assert one("FROM") == "python:3.11-slim"


def test_runs_as_a_non_root_user() -> None:
    order = [keyword for keyword, _ in instructions()]
    user = one("USER")
    assert user not in ("root", "0")
    assert not user.startswith("0:")
    assert order.index("USER") < order.index("CMD")
    assert any(
        keyword == "RUN" and f"useradd --system --uid 10001 --create-home --shell /usr/sbin/nologin {user}" in rest
        for keyword, rest in instructions()
    )


def test_command_matches_the_cli_defaults() -> None:
    command = exec_form(one("CMD"))
    assert command[:2] == ["payemu", "serve"]
    args = cli.build_parser().parse_args(command[1:])
    settings = cli.settings_from(args)
    assert settings.host == "0.0.0.0"
    assert settings.port == cli.DEFAULT_PORT
    assert one("EXPOSE") == str(cli.DEFAULT_PORT)
    assert settings.scenario_paths == ["/scenarios"]
    assert any(keyword == "RUN" and "mkdir /scenarios" in rest for keyword, rest in instructions())


def env() -> dict[str, str]:
    """The image's environment (ENV KEY=VALUE pairs)."""
    return dict(
        pair.split("=", 1) for keyword, rest in instructions() if keyword == "ENV" for pair in shlex.split(rest)
    )


def run_health_check(ready_file: Path) -> subprocess.CompletedProcess[str]:
    check = one("HEALTHCHECK")
    options, _, command = check.partition("CMD ")
    assert "--interval=" in options
    assert "--timeout=" in options
    argv = exec_form(command)
    assert argv[:2] == ["python", "-c"]
    return subprocess.run(
        [sys.executable, *argv[1:]],
        env={**os.environ, cli.READY_FILE_ENV: str(ready_file)},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_payemu_in_the_image_writes_the_ready_file() -> None:
    assert env()[cli.READY_FILE_ENV].startswith("/tmp/")


def test_health_check_follows_the_port_payemu_serves(tmp_path: Path) -> None:
    """The image's health check, run as Docker runs it, against `payemu serve` on another
    port than the image's default: healthy once payemu is up there, unhealthy before."""
    command = exec_form(one("CMD"))
    args = [*command[1:], "--port", "0", "--log-level", "warning"]  # the image's command on another port
    args[args.index("--host") + 1] = "127.0.0.1"
    args[args.index("--scenarios") + 1] = str(tmp_path)
    ready_file = tmp_path / "ready.json"
    assert run_health_check(ready_file).returncode != 0  # not up: unhealthy
    with PayemuProcess(*args, ready_file=ready_file, env={cli.READY_FILE_ENV: str(ready_file)}) as process:
        assert process.port != cli.DEFAULT_PORT
        checked = run_health_check(ready_file)
        assert checked.returncode == 0, checked.stderr
        process.stop(timeout=15)
    assert run_health_check(ready_file).returncode != 0  # stopped: unhealthy again


@pytest.mark.parametrize("source", ["pyproject.toml", "README.md", "LICENSE", "emulator", "schemas", "scenarios"])
def test_copied_sources_exist_and_are_not_ignored(source: str) -> None:
    copied = [src for keyword, rest in instructions() if keyword == "COPY" for src in shlex.split(rest)[:-1]]
    assert source in copied
    assert (ROOT / source).exists()
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert source not in ignored


def test_dockerignore_keeps_the_context_small() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    for heavy in (".git", ".venv", "tests", "test-artifacts"):
        assert heavy in ignored
