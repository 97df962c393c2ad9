"""`payemu serve` as a harness drives it: ``--port 0`` and ``--card-form-port 0`` take free
ports, the banner names them, and ``--ready-file`` says where they are once requests are
answered."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulator.cli import ready
from emulator.cli.main import CARD_FORM_PORT_ENV, READY_FILE_ENV, build_parser, settings_from
from emulator.domain.config import ConfigError
from tests.support.paths import REPO_ROOT
from tests.support.servers import PayemuProcess


def stop(process: PayemuProcess) -> str:
    status, output = process.stop(signal.SIGTERM, timeout=15)
    assert status == 0, output
    return output


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[dict[str, Any], PayemuProcess, Path]]:
    path = tmp_path / "ready" / "payemu.json"
    path.parent.mkdir()
    options = ("--ready-file", str(path), "--card-form-port", "0", "--log-level", "warning")
    with PayemuProcess("serve", *options, ready_file=path) as process:
        yield process.ready, process, path


def test_port_zero_binds_a_free_port_named_in_the_ready_file_and_banner(
    running: tuple[dict[str, Any], PayemuProcess, Path],
) -> None:
    info, process, path = running
    port = info["port"]
    assert isinstance(port, int) and 0 < port < 65536
    assert info["url"] == f"http://127.0.0.1:{port}"
    # the file appears only once requests are answered: no waiting, no retry
    health = httpx.get(info["url"] + "/_emulator/health", timeout=5)
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    assert [p.name for p in path.parent.iterdir()] == ["payemu.json"]  # written whole, no temporary left
    output = stop(process)
    assert f"listening on   http://127.0.0.1:{port}\n" in output
    assert "Traceback" not in output
    assert not path.exists()  # a stopped payemu is not ready


def test_card_form_port_zero_serves_the_form_on_a_free_port(
    running: tuple[dict[str, Any], PayemuProcess, Path],
) -> None:
    info, process, _ = running
    form_url = info["cardFormUrl"]
    form_port = int(form_url.split(":")[2].split("/")[0])
    assert form_url == f"http://localhost:{form_port}//pay/"
    assert form_port not in (0, 4200, info["port"])
    page = httpx.get(f"http://127.0.0.1:{form_port}//pay/", timeout=5)
    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]
    assert page.text != httpx.get(info["url"] + "/", timeout=5).text  # the form, not payemu's start page
    assert f"  card form      http://localhost:{form_port}//pay/#/cardEntry" in stop(process)


def _api_error_list(body: Any) -> None:
    """``body`` is an error list as the control API's schema declares it."""
    from jsonschema import Draft7Validator

    from emulator.domain.datafiles import data_path

    document = json.loads(data_path("control.json").read_text())
    schema = {"$ref": "#/components/schemas/ValidationErrorMessageList", "components": document["components"]}
    Draft7Validator(schema).validate(body)


def test_the_card_form_ports_404_and_405_are_the_apis_json_errors(
    running: tuple[dict[str, Any], PayemuProcess, Path],
) -> None:
    info, _, _ = running
    form = info["cardFormUrl"].removesuffix("//pay/")
    missing = httpx.get(f"{form}/nowhere", timeout=5)
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/json"
    assert missing.json() == [{"fieldName": "path", "errors": ["payemu's card form has no such page: GET /nowhere."]}]
    file = httpx.get(f"{form}//pay/nothing.js", timeout=5)
    assert file.status_code == 404
    assert file.json()[0]["errors"] == ["payemu's card form has no such file: GET /pay/nothing.js."]
    assert file.headers["cache-control"] == "no-store"
    refused = httpx.post(f"{form}//pay/", timeout=5)
    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET, HEAD"
    assert refused.json() == [
        {"fieldName": "method", "errors": ["Method POST is not allowed here; allowed: GET, HEAD."]}
    ]
    for answer in (missing, file, refused):
        _api_error_list(answer.json())


def test_a_ready_file_that_cannot_be_written_is_one_line_before_the_server_binds(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")
    places = {
        tmp_path / "missing" / "ready.json": f"no directory {tmp_path / 'missing'}",
        tmp_path / "plain" / "ready.json": f"{tmp_path / 'plain'} is not a directory",
        tmp_path: "it is a directory",
        Path("/proc/payemu-ready.json"): "cannot write in /proc (No such file or directory)",
    }
    for place, reason in places.items():
        result = subprocess.run(
            [sys.executable, "-m", "emulator", "serve", "--port", "0", "--ready-file", str(place)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert result.returncode == 2
        assert result.stderr.splitlines() == [f"payemu: --ready-file {place}: {reason}"]
        assert result.stdout == ""  # no banner: nothing was bound


def test_no_card_form_leaves_its_url_null(tmp_path: Path) -> None:
    path = tmp_path / "ready.json"  # here from the environment, as in the Docker image
    options = ("--no-card-form", "--log-level", "warning")
    with PayemuProcess("serve", *options, ready_file=path, env={READY_FILE_ENV: str(path)}) as process:
        info = process.ready
        assert info["cardFormUrl"] is None
        assert httpx.get(info["url"] + "/_emulator/health", timeout=5).status_code == 200
        assert "card form      off (--no-card-form)" in stop(process)


@pytest.mark.parametrize(
    ("text", "port"), [("off", None), ("OFF", None), ("0", 0), ("4300", 4300)], ids=["off", "OFF", "any", "4300"]
)
def test_the_environment_names_a_card_form_port_or_off(
    monkeypatch: pytest.MonkeyPatch, text: str, port: int | None
) -> None:
    monkeypatch.setenv(CARD_FORM_PORT_ENV, text)
    assert settings_from(build_parser().parse_args(["serve"])).card_form_port == port
    monkeypatch.setenv(CARD_FORM_PORT_ENV, "4300")
    assert settings_from(build_parser().parse_args(["serve", "--no-card-form"])).card_form_port is None
    assert settings_from(build_parser().parse_args(["serve", "--card-form-port", "0"])).card_form_port == 0


def test_a_bad_environment_port_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CARD_FORM_PORT_ENV, "70000")
    with pytest.raises(ConfigError, match=f"{CARD_FORM_PORT_ENV}=70000: a port from 0 .* or off"):
        settings_from(build_parser().parse_args(["serve"]))


def test_the_ready_file_is_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "ready.json"
    path.write_text("stale")
    data = ready.contents("::1", 8123, None)
    ready.write(path, data)
    assert json.loads(path.read_text()) == {"url": "http://[::1]:8123", "port": 8123, "cardFormUrl": None}
    assert [p.name for p in tmp_path.iterdir()] == ["ready.json"]
    assert ready.contents("0.0.0.0", 80, 81) == {
        "url": "http://127.0.0.1:80",
        "port": 80,
        "cardFormUrl": "http://localhost:81//pay/",
    }
    assert ready.contents("::", 80, None)["url"] == "http://[::1]:80"


def test_an_unwritable_ready_file_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "ready.json"
    path.mkdir()  # a directory where the file should go: the rename fails
    with pytest.raises(OSError):
        ready.write(path, ready.contents("127.0.0.1", 1, 2))
    assert [p.name for p in tmp_path.iterdir()] == ["ready.json"]
