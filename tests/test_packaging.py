"""The built wheel carries everything `payemu serve` needs outside the source tree
(the schemas and built-in scenarios behind the emulator/data links, pages, scripts)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_ships_data_pages_and_scripts(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = tmp_path.glob("payemu-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        schema = archive.read("emulator/data/openapi.json")
        scenarios = archive.read("emulator/data/default-scenarios.yaml")
    assert schema == (ROOT / "schemas" / "openapi.json").read_bytes()
    assert scenarios == (ROOT / "scenarios" / "default.yaml").read_bytes()
    for name in ("control.json", "bins.yaml", "catalog.yaml", "ip-ranges.yaml"):
        assert f"emulator/data/{name}" in names
    for page in ("pay.html", "dashboard.html", "dashboard_live.html", "message.html", "base.html"):
        assert f"emulator/http/pages/templates/{page}" in names
    for script in ("payments-library.js", "pay.js", "dashboard.js", "payemu.css"):
        assert f"emulator/http/pages/static/{script}" in names
