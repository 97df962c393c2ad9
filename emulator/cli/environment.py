"""``payemu serve``'s options from the environment, for a container or a CI runner that sets
variables rather than arguments: ``--port`` is ``PAYEMU_PORT``, ``--any-key`` is
``PAYEMU_ANY_KEY=1``, and so on for every option (``serve --help`` names each one's
variable). An option given on the command line wins over its variable. A value that
cannot be read is a :class:`~emulator.domain.config.ConfigError` naming the variable."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping

from emulator.domain.config import ConfigError
from emulator.domain.didyoumean import unknown

PREFIX = "PAYEMU_"
# options read from a variable of their own elsewhere (emulator.cli.ports: a port or "off")
OWN_VARIABLE = frozenset({"card_form_port", "no_card_form"})
TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off", ""})
_SEPARATORS = r"[\s,]+"


def variable(action: argparse.Action) -> str:
    """The variable of one option: ``--card-form-port`` → ``PAYEMU_CARD_FORM_PORT``."""
    return PREFIX + action.dest.upper()


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options of ``parser`` that a variable may set."""
    return [
        action
        for action in parser._actions
        if action.option_strings and action.dest not in OWN_VARIABLE and not isinstance(action, argparse._HelpAction)
    ]


def name_variables(parser: argparse.ArgumentParser) -> None:
    """Add each option's variable to its help (``serve --help`` lists them)."""
    for action in options(parser):
        if action.help and action.help is not argparse.SUPPRESS:
            action.help = f"{action.help} [{variable(action)}]"


def apply(parser: argparse.ArgumentParser, args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> None:
    """Set on ``args`` each option left at its default whose variable is set."""
    for action in options(parser):
        name = variable(action)
        text = environ.get(name)
        if text is None or getattr(args, action.dest, None) != action.default:
            continue
        setattr(args, action.dest, _value(action, name, text.strip()))


def _value(action: argparse.Action, name: str, text: str) -> object:
    option = action.option_strings[0]
    if isinstance(action, argparse._StoreTrueAction | argparse.BooleanOptionalAction):
        if text.lower() in TRUE:
            return True
        if text.lower() in FALSE:
            return False if isinstance(action, argparse._StoreTrueAction) else None
        raise ConfigError(f"{name}={text}: {option} is on or off: 1, true, yes, on or 0, false, no, off")
    if isinstance(action, argparse._AppendAction) or action.nargs == "+":
        items = [item for item in (re.split(_SEPARATORS, text) if action.dest != "scenarios" else _paths(text)) if item]
        return [_one(action, name, option, item) for item in items]
    return _one(action, name, option, text)


def _paths(text: str) -> list[str]:
    """Scenario files and directories: separated as in PATH (``os.pathsep``)."""
    return text.split(os.pathsep)


def _one(action: argparse.Action, name: str, option: str, text: str) -> object:
    kind = action.type
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            wanted = "a whole number" if kind is int else "a number"
            raise ConfigError(f"{name}={text}: {option} takes {wanted}") from None
    if action.choices is not None and text not in action.choices:
        raise ConfigError(f"{name}: {unknown('value', text, [str(choice) for choice in action.choices])}")
    return text
