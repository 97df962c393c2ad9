"""``payemu serve`` options from ``PAYEMU_*`` variables (emulator.cli.environment), as a
container or a CI runner sets them: the command line wins, a bad value is one error line."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import httpx
import pytest

from emulator.cli import environment
from emulator.cli.main import build_parser, main, settings_from
from emulator.domain.config import ConfigError
from emulator.domain.didyoumean import subparser
from tests.support.servers import PayemuProcess, free_port


def _serve_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    parser = build_parser()
    return parser, subparser(parser, parser.parse_args(["serve"]))


def _settings(environ: dict[str, str], *argv: str) -> object:
    parser, serve = _serve_parser()
    args = parser.parse_args(["serve", *argv])
    environment.apply(serve, args, environ)
    return settings_from(args)


def test_payemu_port_and_host_are_honoured(tmp_path: Path) -> None:
    port, ready_file = free_port(), tmp_path / "ready.json"
    variables = {
        "PAYEMU_PORT": str(port),
        "PAYEMU_HOST": "127.0.0.1",
        "PAYEMU_READY_FILE": str(ready_file),
        "PAYEMU_CARD_FORM_PORT": "off",
        "PAYEMU_SEED": "7",
        "PAYEMU_LOG_LEVEL": "warning",
    }
    with PayemuProcess("serve", ready_file=ready_file, env=variables, port_option=False) as served:
        assert served.ready["port"] == port
        assert served.ready["url"] == f"http://127.0.0.1:{port}"
        health = httpx.get(served.url + "/_emulator/health", timeout=5)
        assert health.json()["seeded"] is True  # PAYEMU_SEED
        status, printed = served.stop()
        assert status == 0
        assert f"listening on   http://127.0.0.1:{port}\n" in printed


def test_the_command_line_wins_over_a_variable() -> None:
    settings = _settings({"PAYEMU_PORT": "9001", "PAYEMU_JOURNAL_SIZE": "5"}, "--port", "9002")
    assert settings.port == 9002  # type: ignore[attr-defined]
    assert settings.journal_size == 5  # type: ignore[attr-defined]


def test_switches_lists_and_choices() -> None:
    settings = _settings(
        {
            "PAYEMU_ANY_KEY": "true",
            "PAYEMU_STRICT": "0",
            "PAYEMU_ANY_KEY_NEEDS_ADMIN": "yes",
            "PAYEMU_SCENARIOS": os.pathsep.join(["a.yaml", "rules"]),
            "PAYEMU_RETURN_ORIGIN": "https://shop.example, https://other.example",
            "PAYEMU_LOG_LEVEL": "debug",
            "PAYEMU_WRITE_TIMEOUT": "2.5",
        }
    )
    assert settings.any_key is True  # type: ignore[attr-defined]
    assert settings.strict is False  # type: ignore[attr-defined]
    assert settings.any_key_needs_admin is True  # type: ignore[attr-defined]
    assert settings.scenario_paths == ["a.yaml", "rules"]  # type: ignore[attr-defined]
    assert settings.return_origins == ("https://shop.example", "https://other.example")  # type: ignore[attr-defined]
    assert settings.log_level == "debug"  # type: ignore[attr-defined]
    assert settings.write_timeout_seconds == 2.5  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("PAYEMU_PORT", "eighty", "PAYEMU_PORT=eighty: --port takes a whole number"),
        ("PAYEMU_PORT", "70000", "--port 70000: a port is a number from 0 (any free port) to 65535"),
        ("PAYEMU_ANY_KEY", "maybe", "PAYEMU_ANY_KEY=maybe: --any-key is on or off"),
        ("PAYEMU_LOG_LEVEL", "infoo", "PAYEMU_LOG_LEVEL: unknown value 'infoo'; did you mean 'info'?"),
    ],
)
def test_a_bad_value_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, value: str, says: str
) -> None:
    monkeypatch.setenv(name, value)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err == f"payemu: {says}" + err.split(says, 1)[1]
    assert err.count("\n") == 1
    with pytest.raises(ConfigError):
        _settings({name: value})


def test_serve_help_names_every_options_variable() -> None:
    _, serve = _serve_parser()
    text = serve.format_help()
    for action in environment.options(serve):
        assert f"[{environment.variable(action)}]" in " ".join(text.split()), action.dest
    assert "[PAYEMU_PORT]" in text
    assert "[PAYEMU_HOST]" in text
    assert "$PAYEMU_CARD_FORM_PORT" in text  # its own variable: a port or off
