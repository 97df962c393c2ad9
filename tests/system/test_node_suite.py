"""The Node.js example suite (examples/node-suite): ten ``node:test`` tests against one
``payemu serve --port 0 --ready-file …``, each with a fresh tenant; run here as a user
runs it (``node --test``), with this checkout's ``payemu`` command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
SUITE = ROOT / "examples" / "node-suite"


def payemu_command() -> str:
    installed = Path(sys.executable).parent / "payemu"
    return str(installed) if installed.exists() else "payemu"


@pytest.mark.node
def test_the_node_suite_passes() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYEMU_")}
    done = subprocess.run(
        ["node", "--test"],
        cwd=SUITE,
        env={**env, "PAYEMU_COMMAND": payemu_command()},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"^# pass 10$", done.stdout, re.M), done.stdout[-2000:]
    assert re.search(r"^# fail 0$", done.stdout, re.M)
    assert "payemu bug" not in done.stderr  # a response that broke the schema is logged so
    assert "Traceback" not in done.stderr


def test_the_docs_show_the_node_suite_beside_the_plugin() -> None:
    guide = (ROOT / "docs" / "ci.md").read_text()
    assert "examples/node-suite" in guide
    assert "node --test" in guide
    helper = (SUITE / "payemu.mjs").read_text()
    assert '"--port", "0"' in helper and "--ready-file" in helper
    excerpt = guide.split("```js\n", 1)[1].split("```\n", 1)[0]
    assert excerpt in (SUITE / "payments.test.mjs").read_text()  # shown as it runs
