"""The plugin as a CI engineer meets it: a mistake it can see before the tests run (a bad
scenarios or config file, a --payemu-url where nothing answers, a port in use) stops the
run with exit status 4 and one error line, no traceback; --payemu-port is honoured."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.plugins_off import BLOCKED
from tests.support.servers import free_port

SUITE = "def test_pays(payemu):\n    assert payemu.client.get('/Utils/apiKey').status_code == 200\n"


def _pytest(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    (folder / "test_suite.py").write_text(SUITE)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *BLOCKED, *options, "test_suite.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The run's only error line (exit status 4), checked to be alone and without a traceback."""
    output = result.stdout + result.stderr
    assert result.returncode == 4, output
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("ERROR: ")
    return lines[0]


def test_a_bad_scenarios_file(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("- name: a\n  when: {gateway: Strip}\n  then: {operationResultCode: Rejected}\n")
    line = _one_error_line(_pytest(tmp_path, "--payemu-scenarios", str(rules)))
    assert line.startswith(f"ERROR: --payemu-scenarios: {rules}:2: rule 'a': when.gateway: unknown gateway 'Strip'")
    assert "did you mean 'Stripe'?" in line


def test_a_missing_scenarios_file(tmp_path: Path) -> None:
    line = _one_error_line(_pytest(tmp_path, "--payemu-scenarios", "nope.yaml"))
    assert line == "ERROR: --payemu-scenarios: nope.yaml: no such file or directory"


def test_a_bad_config_file(tmp_path: Path) -> None:
    config = tmp_path / "payemu.yaml"
    config.write_text("seed: 1\njornalSize: 5\n")
    line = _one_error_line(_pytest(tmp_path, "--payemu-config", str(config)))
    assert line.startswith(f"ERROR: --payemu-config: {config}:2: config: unknown key 'jornalSize'; did you mean")


def test_a_url_where_nothing_answers(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    line = _one_error_line(_pytest(tmp_path, "--payemu-url", url))
    assert line.startswith(f"ERROR: --payemu-url: no payemu answers at {url} after 5 s: ")


def test_payemu_port_is_honoured(tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "test_port.py").write_text(
        f"def test_port(payemu_server):\n    assert payemu_server.base_url == 'http://127.0.0.1:{port}'\n"
    )
    result = _pytest(tmp_path, "--payemu-port", str(port), "test_port.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    assert f"payemu: in-process server at http://127.0.0.1:{port} started in" in result.stdout


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_a_port_out_of_range(tmp_path: Path, port: str) -> None:
    line = _one_error_line(_pytest(tmp_path, f"--payemu-port={port}"))
    assert line == f"ERROR: --payemu-port {port}: a port is a number from 0 (any free port) to 65535"
