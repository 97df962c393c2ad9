"""`payemu serve` as a newcomer runs it: a real server on a real port."""

from __future__ import annotations

import contextlib
import io
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from emulator.cli.main import DEFAULT_HOST, DEFAULT_PORT, build_parser, settings_from
from emulator.domain.config import ConfigError, load_config_file
from tests.support.paths import REPO_ROOT
from tests.support.servers import PayemuProcess, payemu

ROOT = REPO_ROOT


@pytest.fixture
def server() -> Iterator[PayemuProcess]:
    with PayemuProcess("serve", "--log-level", "warning") as process:
        yield process


def test_serve_answers_the_key_status_and_stops_cleanly(server: PayemuProcess) -> None:
    base = server.url
    ok = httpx.get(base + "/Utils/apiKey", headers={"X-Api-Key": "sandbox-api-key"})
    assert ok.status_code == 200
    assert ok.json()["isSandbox"] is True
    denied = httpx.get(base + "/Utils/apiKey")
    assert denied.status_code == 401
    assert denied.json()[0]["fieldName"] == "X-Api-Key"
    status, output = server.stop(signal.SIGTERM, timeout=10)
    assert status == 0
    assert f"listening on   {base}" in output
    assert "sandbox-api-key (sandbox), live-api-key (live)" in output
    assert "Prod" in output
    assert "Traceback" not in output


def test_sigint_also_stops_cleanly(server: PayemuProcess) -> None:
    assert server.stop(signal.SIGINT, timeout=10)[0] == 0


def test_defaults_and_flags() -> None:
    args = build_parser().parse_args(["serve"])
    settings = settings_from(args)
    assert (settings.host, settings.port) == (DEFAULT_HOST, DEFAULT_PORT) == ("127.0.0.1", 8080)
    args = build_parser().parse_args(
        ["serve", "--host", "0.0.0.0", "--port", "9000", "--seed", "7", "--any-key", "--log-level", "debug"]
    )
    settings = settings_from(args)
    assert (settings.host, settings.port, settings.seed, settings.any_key, settings.log_level) == (
        "0.0.0.0",
        9000,
        7,
        True,
        "debug",
    )


def test_bad_config_is_refused_with_file_and_field(tmp_path: Path) -> None:
    config = tmp_path / "payemu.yaml"
    config.write_text("keys:\n  - key: k1\n    isSandbox: maybe\n")
    result = payemu("serve", "--config", str(config))
    assert result.returncode == 2
    assert f"{config}:3: keys[0].isSandbox" in result.stderr  # the file and the line


def test_a_mistyped_config_key_or_value_names_line_allowed_and_closest(tmp_path: Path) -> None:
    config = tmp_path / "payemu.yaml"
    config.write_text("seed: 1\njornalSize: 5\nfailover: al\nlimits:\n  tokenPerTenant: 4\n")
    with pytest.raises(ConfigError) as caught:
        load_config_file(config)
    assert str(caught.value).splitlines() == [
        f"{config}:2: config: unknown key 'jornalSize'; did you mean 'journalSize'? (allowed: keys, anyKey, "
        "anyKeyNeedsAdmin, seed, clockStart, failover, strict, successStatus, mockTokenization, journalSize, "
        "scenarios, openapi, limits, requestTimeoutSeconds, shutdownTimeoutSeconds, maxConnections, "
        "writeTimeoutSeconds, adminKey, returnOrigins)",
        f"{config}:3: failover: unknown value 'al'; did you mean 'all'? (allowed: all, recoverable-only)",
        f"{config}:5: limits: unknown key 'tokenPerTenant'; did you mean 'tokensPerTenant'? (allowed: tenants, "
        "tenantIdleSeconds, tokensPerTenant, tokenBytesPerTenant, transactionsPerTenant, journalBytesPerTenant, "
        "sessionsPerTenant, namedItemsPerTenant, sequencesPerTenant, memoryBytesPerTenant, memoryBytes)",
    ]


def test_python_dash_m_help() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "emulator", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0
    assert "serve" in result.stdout
    assert "scenarios" in result.stdout


def test_the_banner_is_human_text() -> None:
    from emulator.app.build import create_app
    from emulator.cli.main import banner, build_parser, settings_from

    settings = settings_from(build_parser().parse_args(["serve", "--access-log"]))
    text = banner(settings, create_app(settings).state.runtime, "http://localhost:4200//pay/#/cardEntry")
    assert "Limits(" not in text and "=" not in text  # no Python repr
    assert "tokenBytesPerTenant 16 MiB" in text and "tenantIdleSeconds 300 s" in text
    assert "  card form      http://localhost:4200//pay/#/cardEntry" in text
    assert "  API page       http://127.0.0.1:8080/docs" in text
    assert "  access log     on" in text


@pytest.mark.parametrize(
    ("keys", "any_key", "line"),
    [
        (
            ["demo-key"],
            False,
            "  not served     sandbox-api-key, live-api-key: the config file's keys: replace them "
            "(answered 401); list them there to keep them",
        ),
        (
            ["demo-key", "sandbox-api-key"],
            True,
            "  not served     live-api-key: the config file's keys: replace them "
            "(fresh sandbox tenants (--any-key)); list them there to keep them",
        ),
        (["sandbox-api-key", "live-api-key", "demo-key"], False, None),
    ],
    ids=["both-dropped", "one-dropped", "both-kept"],
)
def test_the_banner_names_the_built_in_keys_a_config_file_drops(
    tmp_path: Path, keys: list[str], any_key: bool, line: str | None
) -> None:
    from starlette.testclient import TestClient

    from emulator.app.build import create_app
    from emulator.cli.main import banner, build_parser, settings_from

    config = tmp_path / "payemu.yaml"
    config.write_text("keys:\n" + "".join(f"  - key: {key}\n" for key in keys))
    args = ["serve", "--config", str(config), *(["--any-key"] if any_key else [])]
    settings = settings_from(build_parser().parse_args(args))
    app = create_app(settings)
    text = banner(settings, app.state.runtime)
    shown = [row for row in text.splitlines() if row.startswith("  not served")]
    assert shown == ([line] if line else [])
    with TestClient(app) as client:  # what the line says is what a request finds
        for key in ("sandbox-api-key", "live-api-key"):
            status = client.get("/Utils/apiKey", headers={"X-Api-Key": key}).status_code
            assert status == (200 if key in keys or any_key else 401)
    assert not app.state.runtime.violations


def test_clock_start_flag() -> None:
    from datetime import UTC, datetime

    settings = settings_from(build_parser().parse_args(["serve", "--seed", "7", "--clock-start", "2028-02-29"]))
    assert settings.clock_start == datetime(2028, 2, 29, tzinfo=UTC)
    with pytest.raises(ConfigError, match="--clock-start"):
        settings_from(build_parser().parse_args(["serve", "--clock-start", "soon"]))


# what ``payemu serve`` leaves for later: the HTTP client (httpx, whose command line pulls in
# rich), SQLite (--state), a WebSocket library (a fifth of the start-up once), PyYAML (no YAML
# file is read before the first answer: not the gateways' files, not the built-in test cards),
# the URL parser of the payment pages, Faker and Jinja (the dashboard), jsonschema (the
# wording of a validation error), difflib (a mistyped name), the proxy, and what the start
# page and /docs need only when first visited (the catalog's table, Starlette's file serving)
NOT_AT_START = (
    "httpx",
    "sqlite3",
    "websockets",
    "rich",
    "yaml",
    "ada_url",
    "faker",
    "jinja2",
    "jsonschema",
    "difflib",
    "emulator.proxy.forward",
    "emulator.ui.dashboard",
    "emulator.catalog.docs_table",
    "starlette.staticfiles",
    "emulator.state",
    "emulator.scenarios.watcher",
    "emulator.tenants.preload",
)


def test_serving_loads_no_module_it_does_not_use() -> None:
    """What ``payemu serve`` imports and builds without --state, --replay or a proxy, its
    banner printed: none of :data:`NOT_AT_START`."""
    code = (
        "import sys\n"
        "from emulator.cli import main as cli\nfrom emulator.edge import server\n"
        "from emulator.cli.banner import banner\n"
        "from emulator.domain.config import Settings\n"
        "from emulator.app.build import create_app\n"
        "from emulator.proxy.commands import replay_note, wrap_replay\n"
        "cli.build_parser(serving=True)\n"  # as main() builds it for serve
        "settings = Settings()\n"
        "app = create_app(settings)\n"
        "banner(settings, app.state.runtime)\n"
        "replay_note(wrap_replay(app, None, False))\n"
        "server.config_for(app, settings).load()\n"
        f"print(sorted(name for name in {NOT_AT_START!r} if name in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_payemu_does_not_ask_for_a_file_watcher_or_a_websocket_library() -> None:
    """uvicorn imports watchfiles whenever it is installed (a tenth of payemu's start-up
    once), and its ``[standard]`` extra installs it: payemu names uvicorn's parser and loop
    itself instead. A dependency that brings them back fails here."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    wanted = {Requirement(line).name: Requirement(line) for line in requires("payemu") or []}
    assert wanted["uvicorn"].extras == set()
    assert {"httptools", "uvloop"} <= wanted.keys()
    assert not {"watchfiles", "websockets", "python-dotenv"} & wanted.keys()


def test_serve_reads_its_command_line_as_the_whole_parser_does() -> None:
    """``payemu serve`` makes only its own command's parser: the same options, defaults,
    help and errors as with every command's."""
    from emulator.domain.didyoumean import parse, subparser

    whole, serving = build_parser(), build_parser(serving=True)
    args = ["serve", "--port", "0", "--seed", "3", "--scenarios", "a.yaml", "b.yaml", "--no-card-form"]
    assert vars(serving.parse_args(args)) == vars(whole.parse_args(args))
    helps = [subparser(parser, parser.parse_args(["serve"])).format_help() for parser in (whole, serving)]
    assert helps[0] == helps[1]
    errors = []
    for parser in (whole, serving):
        with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
            parse(parser, ["serve", "--prot", "1"])
        errors.append(err.getvalue())
    assert errors[0] == errors[1] != ""


def test_the_collector_is_off_while_the_command_loads_and_on_for_any_command_but_serve() -> None:
    code = (
        "import gc, sys\n"
        "import emulator.cli\n"
        "seen = []\n"
        "class Probe:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'emulator.cli.main': seen.append(gc.isenabled())\n"
        "sys.meta_path.insert(0, Probe())\n"
        "sys.argv = ['payemu', 'scenarios', 'list']\n"
        "import contextlib, io\n"
        "from emulator.__main__ import run\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    status = run()\n"
        "print(status, seen, gc.isenabled())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.split("\n")[-2] == "0 [False] True", done.stderr
