"""``payemu serve`` as a newcomer meets it: help with examples, one-line errors with exit 2,
no "listening" line before the port is bound, a banner that lists what was loaded."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.cli import main as cli
from tests.support.paths import REPO_ROOT, TESTS_DIR

ROOT = REPO_ROOT


def run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emulator", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_serve_help_has_a_description_and_examples() -> None:
    result = run("serve", "--help")
    assert result.returncode == 0
    assert "examples:" in result.stdout
    assert "payemu serve --config demo.yaml --state demo.sqlite" in result.stdout
    assert "Every API key is its own tenant" in result.stdout


def _options_without_help(parser: object) -> list[str]:
    import argparse

    assert isinstance(parser, argparse.ArgumentParser)
    missing: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action.choices.values():
                missing += _options_without_help(choice)
        elif not action.help:
            missing.append(f"{parser.prog} {action.dest}")
    return missing


def test_every_option_and_argument_has_help_text() -> None:
    assert _options_without_help(cli.build_parser()) == []


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--port", "99999"], "payemu: --port 99999: a port is a number from 0 (any free port) to 65535"),
        (["--port", "-1"], "payemu: --port -1: a port is a number from 0 (any free port) to 65535"),
        (
            ["--openapi", "{tmp}/missing.json"],
            "payemu: --openapi: {tmp}/missing.json: cannot be read (No such file or directory)",
        ),
        (
            ["--return-origin", "http://evil.example\\@shop.example"],
            "payemu: --return-origin 'http://evil.example\\\\@shop.example' is not an http(s) origin such as "
            "https://shop.example",
        ),
        (
            ["--config", "{tmp}/missing.yaml"],
            "payemu: {tmp}/missing.yaml: cannot read the config file: No such file or directory",
        ),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(tmp_path: Path, args: list[str], line: str) -> None:
    result = run("serve", *[a.format(tmp=tmp_path) for a in args])
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line.format(tmp=tmp_path)]
    assert result.stdout == ""


def test_unreadable_openapi_document_is_one_line(tmp_path: Path) -> None:
    document = tmp_path / "bad.json"
    document.write_text("{bad")
    result = run("serve", "--openapi", str(document))
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"payemu: --openapi: {document}: not JSON or YAML")


def test_config_that_is_not_yaml_is_one_line_with_its_line_number(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("seed: 1\nkeys: [\n")
    result = run("serve", "--config", str(config))
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"payemu: {config}:3: cannot read the config file: not valid YAML: ")


def test_a_5000_digit_integer_is_one_line_naming_its_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("seed: 1\nkeys:\n  - {key: k-1234567, port: " + "9" * 5000 + "}\n")
    result = run("serve", "--config", str(config))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        f"payemu: {config}:3: cannot read the config file: not valid YAML: an integer of 5000 digits (at most 4300)"
    ]
    rules = tmp_path / "rules.yaml"
    rules.write_text("- name: a\n  then: {delayMs: " + "9" * 5000 + "}\n")
    problem = f"{rules}:2: YAML syntax error: an integer of 5000 digits (at most 4300)"
    result = run("serve", "--scenarios", str(rules))
    assert (result.returncode, result.stderr.splitlines()) == (2, [f"payemu: {problem}"])
    result = run("scenarios", "check", str(rules))
    assert (result.returncode, result.stderr.splitlines()) == (1, [problem])


def test_misnamed_top_level_key_in_a_scenario_file(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {name: a, then: {operationResultCode: Success}}\n")
    result = run("serve", "--scenarios", str(rules))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"payemu: {rules}:1: unknown top-level key 'rules' (expected 'scenarios')"]


def test_a_rule_naming_an_unknown_gateway_stops_serve_and_fails_the_check(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("scenarios:\n  - name: a\n    when: {gateway: Strip}\n    then: {operationResultCode: Rejected}\n")
    says = f"{rules}:3: rule 'a': when.gateway: unknown gateway 'Strip'; did you mean 'Stripe'? (one of "
    served = run("serve", "--port", "0", "--no-card-form", "--scenarios", str(rules))
    assert served.returncode == 2
    [line] = served.stderr.splitlines()
    assert line.startswith(f"payemu: {says}")
    assert "listening" not in served.stdout
    checked = run("scenarios", "check", str(rules))
    assert checked.returncode == 1
    assert checked.stdout == ""
    [line] = checked.stderr.splitlines()
    assert line.startswith(says)


def test_port_in_use_says_so_before_any_listening_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("serve", "--port", str(port))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"payemu: cannot listen on 127.0.0.1:{port}: address already in use"]
    assert "listening" not in result.stdout


def test_banner_lists_keys_scenario_files_with_rule_counts_and_dashboard(tmp_path: Path) -> None:
    from emulator.app.build import create_app

    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "scenarios:\n  - {name: a, when: {amount: 1.11}, then: {operationResultCode: Success}}\n"
        "  - {name: b, when: {amount: 2.22}, then: {operationResultCode: Success}}\n"
    )
    settings = cli.settings_from(cli.build_parser().parse_args(["serve", "--port", "9123", "--scenarios", str(rules)]))
    text = cli.banner(settings, create_app(settings).state.runtime)
    lines = text.splitlines()
    assert "  API keys       sandbox-api-key (sandbox), live-api-key (live)" in lines
    assert f"  scenarios      {rules} (2 rules)" in lines
    builtin = [line for line in lines if "default-scenarios.yaml (" in line]
    assert len(builtin) == 1
    assert re.search(r"default-scenarios\.yaml \(\d+ rules\)$", builtin[0])
    assert "  dashboard      http://127.0.0.1:9123/_emulator/" in lines


def test_banner_names_the_served_interface_version() -> None:
    from emulator.app.build import create_app
    from emulator.contract.openapi import OpenApi

    older = TESTS_DIR / "data" / "openapi-1.0.9.36.json"
    settings = cli.settings_from(cli.build_parser().parse_args(["serve", "--openapi", str(older)]))
    served = cli.banner(settings, create_app(settings, openapi=OpenApi.load(older)).state.runtime)
    default = cli.banner(
        settings, create_app(cli.settings_from(cli.build_parser().parse_args(["serve"]))).state.runtime
    )
    assert served.splitlines()[0].endswith("interface 1.0.9.36")
    assert default.splitlines()[0].endswith("interface 1.0.11.6")
