"""The release workflow (.github/workflows/release.yml) passes actionlint, which knows the
actions' inputs and runtimes, and does what a release needs: build and check the sdist and
the wheel, publish them with trusted publishing, push a multi-arch image."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import REPO_ROOT

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "release.yml"


def actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    """actionlint from this environment (the test extra installs it with its binary)."""
    found = Path(sys.executable).parent / "actionlint"
    command = str(found) if found.exists() else shutil.which("actionlint")
    assert command, "actionlint is missing: pip install -e '.[test]'"
    return subprocess.run([command, "-no-color", str(path)], capture_output=True, text=True, timeout=120)


def test_the_release_workflow_passes_actionlint() -> None:
    result = actionlint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_linter_does_find_a_mistake(tmp_path: Path) -> None:
    """A broken copy fails: the check above is not passing because nothing was read."""
    broken = tmp_path / ".github" / "workflows" / "release.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(WORKFLOW.read_text().replace("needs: build", "needs: bild", 1))
    result = actionlint(broken)
    assert result.returncode == 1
    assert 'job "publish" needs job "bild" which does not exist' in result.stdout


def _steps(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("uses") or step.get("run")) for step in job["steps"])


def test_it_builds_checks_publishes_and_pushes_a_multi_arch_image() -> None:
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    assert "python -m build" in _steps(jobs["build"])
    assert "twine check --strict dist/*" in _steps(jobs["build"])
    assert jobs["publish"]["permissions"] == {"id-token": "write"}  # trusted publishing, no token
    assert "pypa/gh-action-pypi-publish@release/v1" in _steps(jobs["publish"])
    [push] = [step for step in jobs["image"]["steps"] if str(step.get("uses", "")).startswith("docker/build-push")]
    assert set(push["with"]["platforms"].split(",")) == {"linux/amd64", "linux/arm64"}
    assert "docker/setup-buildx-action" in _steps(jobs["image"])
    assert jobs["image"]["permissions"]["packages"] == "write"


def test_the_ci_docs_services_example_passes_actionlint(tmp_path: Path) -> None:
    """docs/ci.md's GitHub Actions `services:` example is a workflow actionlint accepts, and
    tunes the health check the image declares."""
    text = (REPO_ROOT / "docs" / "ci.md").read_text()
    section = text[text.index("## payemu as a CI service") :]
    match = re.search(r"^```yaml\n(.*?)^```$", section, re.S | re.M)
    assert match is not None
    workflow = tmp_path / ".github" / "workflows" / "tests.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(match.group(1))
    result = actionlint(workflow)
    assert result.returncode == 0, result.stdout + result.stderr
    service = yaml.safe_load(match.group(1))["jobs"]["test"]["services"]["payemu"]
    assert service["ports"] == ["8080:8080"]
    assert "--health-interval" in service["options"]
    assert "HEALTHCHECK" in (REPO_ROOT / "Dockerfile").read_text()  # the check those options tune
