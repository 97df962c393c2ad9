"""The generated docs pages (scripts/docs-gen) are what the code says now."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
SCRIPT = ROOT / "scripts" / "docs-gen"


def test_generated_pages_match_the_code() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_every_serve_option_is_on_the_cli_page() -> None:
    from emulator.cli.main import build_parser

    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    serve = next(a for a in build_parser()._actions if a.dest == "command").choices["serve"]  # type: ignore[attr-defined]
    options = [s for a in serve._actions for s in a.option_strings if s.startswith("--") and s != "--help"]
    assert len(options) >= 18
    for option in options:
        assert f"`{option}`" in page, option


def test_every_control_operation_is_on_the_control_page() -> None:
    import json

    page = (ROOT / "docs" / "reference" / "control-api.md").read_text()
    document = json.loads((ROOT / "emulator" / "data" / "control.json").read_text())
    for path, item in document["paths"].items():
        for method in item:
            if method in ("get", "put", "post", "delete", "patch"):
                assert f"| `{method.upper()}` | `{path}` |" in page
