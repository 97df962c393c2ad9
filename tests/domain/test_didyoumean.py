"""emulator.domain.didyoumean: a mistyped option or command names the closest real one, with the
usage of the command it was given to."""

from __future__ import annotations

import os
import shutil

import pytest

from emulator.cli import main as cli
from emulator.domain.didyoumean import Parser


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        cli.main(list(argv))
    assert stopped.value.code == 2
    return capsys.readouterr().err


def test_a_mistyped_serve_option(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "serve", "--prot", "9000")
    assert err.startswith("usage: payemu serve ")  # the serve usage, not the top-level one
    assert "unrecognized arguments: --prot 9000; --prot: did you mean --port?" in err


def test_an_option_with_a_value_and_one_without_a_match(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "serve", "--acess-log", "--zzzzzz=1")
    assert "--acess-log: did you mean --access-log?" in err
    assert "--zzzzzz" in err and "--zzzzzz: did you mean" not in err


def test_a_mistyped_command_and_action(capsys: pytest.CaptureFixture[str]) -> None:
    assert "invalid choice: 'serv'" in (err := _error(capsys, "serv")) and "did you mean serve?" in err
    assert "did you mean list?" in _error(capsys, "scenarios", "lst")


def test_a_scenarios_option(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "scenarios", "list", "--confg", "x.yaml")
    assert err.startswith("usage: payemu scenarios list ")
    assert "--confg: did you mean --config?" in err


@pytest.mark.parametrize("columns", [50, 120])
def test_the_help_fits_the_terminal_asked_once_per_parser(columns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def size(*args: object) -> os.terminal_size:
        asked.append(columns)
        return os.terminal_size((columns, 24))

    monkeypatch.setattr(shutil, "get_terminal_size", size)
    parser = Parser(prog="payemu", description="word " * 60)
    for number in range(10):
        parser.add_argument(f"--option-{number}", help="help " * 20)
    text = parser.format_help()
    assert max(len(line) for line in text.splitlines()) <= columns - 2
    assert max(len(line) for line in text.splitlines()) > columns - 20
    assert asked == [columns]
