"""Executable docs: every shell example of README.md and docs/ runs against a live
``payemu serve`` (a subprocess on a free port, its address replacing 127.0.0.1:8080), and
the output each shows is checked; every Python example runs in a temporary project, every
YAML one loads as the file it shows. Blocks that cannot run here are marked in the
markdown with ``<!-- not-run: reason -->``; nothing is skipped silently."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from emulator import scenarios
from emulator.cli.main import CARD_FORM_PORT_ENV
from emulator.domain.config import load_config_file
from tests.support.docsexamples import (
    RUNNABLE,
    Example,
    examples,
    heading_of,
    localised,
    pattern,
    run_python,
    unmatched,
)
from tests.support.servers import PayemuProcess

ALL = examples()
RUN = [example for example in ALL if example.not_run is None]
# README's "In CI" block runs in tests/docs/test_readme.py (verbatim, in a fresh project)
PYTHON = [
    e for e in examples("python") if e.not_run is None and not (e.path == "README.md" and heading_of(e) == "In CI")
]
YAML = [e for e in examples("yaml") if e.not_run is None]
SANDBOX = {"X-Api-Key": "sandbox-api-key"}


@pytest.fixture(scope="module")
def payemu() -> Iterator[str]:
    with PayemuProcess("serve", env={CARD_FORM_PORT_ENV: "0"}) as process:
        yield process.url


def test_examples_are_found_and_each_unrun_one_says_why() -> None:
    assert len(RUN) >= 12, [e.id for e in RUN]
    for example in ALL:
        assert example.not_run is None or example.not_run.strip(), example.id
    reasons = {e.id: e.not_run for e in ALL if e.not_run}
    print(f"\n{len(RUN)} shell examples run, {len(reasons)} marked not-run: {reasons}")


@pytest.mark.curl  # a container with only Python may lack it: skipped with a summary line (tests/support/tools.py)
@pytest.mark.parametrize("example", RUN, ids=[e.id for e in RUN])
def test_example(example: Example, payemu: str, tmp_path: Path) -> None:
    # curl prints no newline after a body: one is added (write-out) so each answer is a line
    (tmp_path / ".curlrc").write_text('write-out = "\\n"\n')
    reset = httpx.post(f"{payemu}/_emulator/reset", headers=SANDBOX, timeout=10)
    assert reset.status_code == 200, reset.text
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", localised(example.script, payemu)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        # this environment's `payemu` and `python3` first, as in an activated virtual environment
        env={**os.environ, "HOME": str(tmp_path), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
        check=False,
    )
    assert done.returncode == 0, f"{example.id} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    missing = unmatched([localised(line, payemu) for line in example.expected()], done.stdout)
    assert not missing, f"{example.id}: output lacks {missing}\n--- output:\n{done.stdout}"


def test_every_code_block_runs_or_says_why() -> None:
    every = examples("*")
    unrun = [e.id for e in every if e.language not in RUNNABLE and not (e.not_run or "").strip()]
    assert unrun == [], "a block the tests do not run needs <!-- not-run: reason -->"
    assert len(PYTHON) >= 2 and len(YAML) >= 3


@pytest.mark.parametrize("example", PYTHON, ids=[e.id for e in PYTHON])
def test_python_example(example: Example, tmp_path: Path) -> None:
    done = run_python(example, tmp_path, sys.executable)
    assert done.returncode == 0, f"{example.id}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    if "def test_" in example.script:
        assert " passed" in done.stdout and "skipped" not in done.stdout, done.stdout


@pytest.mark.parametrize("example", YAML, ids=[e.id for e in YAML])
def test_yaml_example(example: Example, tmp_path: Path) -> None:
    """A config file loads (options as the start would take them); a scenario file passes
    ``payemu scenarios check``."""
    import yaml

    path = tmp_path / "example.yaml"
    path.write_text(example.script)
    loaded = yaml.safe_load(example.script)
    if isinstance(loaded, dict) and "keys" in loaded:
        settings = load_config_file(path)
        assert [spec.key for spec in settings.keys] == [item["key"] for item in loaded["keys"]]
    else:
        assert scenarios.check_files([str(path)]) == []


def test_matching_rules() -> None:
    assert pattern('{..."a":1,...}').fullmatch('{"x":0,"a":1,"b":2}')
    assert not pattern('{..."a":1}').fullmatch('{"a":2}')
    assert unmatched(["b", "a"], "a\nb\n") == ["a"]
    assert unmatched(["HTTP 409"], "body\r\nHTTP 409\r\n") == []
    block = Example("x.md", 1, "# a comment first\ncurl x\n# shown\n", None)
    assert block.expected() == ["shown"]
