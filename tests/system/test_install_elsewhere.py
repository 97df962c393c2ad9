"""How another project installs payemu, checked the documented way: the example CI
project's requirements into a fresh venv from a path, and the demo's docker-compose file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import yaml

from emulator.domain.config import load_config_file
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
PROJECT = ROOT / "examples" / "ci-suite"
COMPOSE = ROOT / "examples" / "docker-compose.yml"
ENTRY_POINTS = "import importlib.metadata as m; print([e.value for e in m.entry_points(group='pytest11')])"
SKIP = shutil.ignore_patterns(".venv", ".git", "tests", "examples", "__pycache__", "build", "*.egg-info", ".*cache")


def test_docs_document_the_requirements_way() -> None:
    readme = (ROOT / "docs" / "ci.md").read_text()
    assert "PAYEMU_SOURCE=git+https://" in readme
    assert "pip install -r requirements.txt" in readme


def install_requirements(python: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``-r requirements.txt`` into the venv of ``python``: with uv when it is there (its
    cache first, offline: seconds), else with the venv's own pip (from the index: minutes)."""
    requirements = str(PROJECT / "requirements.txt")
    if shutil.which("uv"):
        command = ["uv", "pip", "install", "-q", "--python", str(python), "-r", requirements]
        done = subprocess.run([*command, "--offline"], cwd=PROJECT, env=env, capture_output=True, text=True)
        if done.returncode == 0:
            return done
    else:
        command = [str(python), "-m", "pip", "install", "-q", "-r", requirements]
    return subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)


def test_example_requirements_install_into_a_fresh_venv(tmp_path: Path) -> None:
    source = tmp_path / "payemu"
    shutil.copytree(ROOT, source, symlinks=True, ignore=SKIP)
    target = tmp_path / "venv"
    venv.create(target, with_pip=shutil.which("uv") is None)
    python = target / "bin" / "python"
    env = {**os.environ, "PAYEMU_SOURCE": source.as_uri(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("VIRTUAL_ENV", None)
    installed = install_requirements(python, env)
    assert installed.returncode == 0, installed.stderr[-3000:]
    plugin = subprocess.run(
        [str(python), "-c", ENTRY_POINTS],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "emulator.testing" in plugin.stdout
    cli = subprocess.run([str(target / "bin" / "payemu"), "--version"], capture_output=True, text=True, timeout=60)
    assert cli.stdout.startswith("payemu ")
    assert sys.prefix != str(target)


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def test_compose_runs_payemu_serve_on_8080_with_state() -> None:
    service = _compose()["services"]["payemu"]
    command = service["command"]
    assert command[:2] == ["payemu", "serve"]
    assert command[command.index("--port") + 1] == "8080"
    assert service["ports"] == ["8080:8080"]
    assert "--state" in command


def test_compose_state_lives_on_a_declared_volume() -> None:
    compose = _compose()
    service = compose["services"]["payemu"]
    state_dir = str(Path(service["command"][service["command"].index("--state") + 1]).parent)
    mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in service["volumes"]}
    assert mounts[state_dir] in compose["volumes"]


def test_compose_demo_config_is_valid() -> None:
    service = _compose()["services"]["payemu"]
    config = service["command"][service["command"].index("--config") + 1]
    mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in service["volumes"]}
    directory = str(Path(config).parent)
    local = COMPOSE.parent / mounts[directory] / Path(config).name
    settings = load_config_file(local)
    assert "demo-key" in settings.preload


def test_compose_builds_from_the_repository() -> None:
    context = COMPOSE.parent / _compose()["services"]["payemu"]["build"]["context"]
    assert (context / "Dockerfile").is_file()
