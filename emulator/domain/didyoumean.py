""" "Did you mean": the closest real name to one a user mistyped (difflib; argparse has its
own only from Python 3.14). The one place suggestions are made: command-line options and
commands, control API query parameters and filter values, scenario and config keys."""

from __future__ import annotations

import argparse
import functools
import re
import shutil
from collections.abc import Sequence
from typing import Any, NoReturn

_CHOICE = r"invalid choice: '([^']*)'"


def options_of(parser: argparse.ArgumentParser) -> list[str]:
    return [name for action in parser._actions for name in action.option_strings]


def closest(word: str, candidates: Sequence[str]) -> str | None:
    import difflib  # only when a name is mistyped

    found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def closest_folded(word: str, candidates: Sequence[str]) -> str | None:
    """:func:`closest`, case ignored (``strip`` finds ``Stripe``); the candidate as spelt."""
    by_fold = {candidate.casefold(): candidate for candidate in candidates}
    match = closest(word.casefold(), list(by_fold))
    return by_fold[match] if match is not None else None


def suggestion(word: str, candidates: Sequence[str], fold: bool = False) -> str:
    """``"; did you mean 'X'?"`` for the closest candidate, or ``""`` when none is close."""
    match = closest_folded(word, candidates) if fold else closest(word, candidates)
    return f"; did you mean {match!r}?" if match is not None else ""


MOST_LISTED = 50  # past this many allowed names, an error names the nearest few instead of all


def unknown(kind: str, word: str, candidates: Sequence[str], fold: bool = False) -> str:
    """``unknown KIND 'word'; did you mean 'X'? (allowed: ...)``: what a user named that does
    not exist, the closest real name and every allowed one (of a long list, the nearest few)."""
    if len(candidates) > MOST_LISTED:
        import difflib

        by_fold = {candidate.casefold(): candidate for candidate in candidates}
        near = difflib.get_close_matches(word.casefold(), list(by_fold), n=5, cutoff=0.0)
        allowed = f"one of {len(candidates)}; the nearest: {', '.join(by_fold[name] for name in near)}"
    else:
        allowed = "allowed: " + (", ".join(candidates) if candidates else "none")
    return f"unknown {kind} {word!r}{suggestion(word, candidates, fold)} ({allowed})"


def unrecognized(parser: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    """argparse's message for ``extra``, with the closest option of ``parser`` for each."""
    options = options_of(parser)
    hints = []
    for word in extra:
        if word.startswith("-"):
            match = closest(word.split("=", 1)[0], options)
            if match:
                hints.append(f"{word.split('=', 1)[0]}: did you mean {match}?")
    message = "unrecognized arguments: " + " ".join(extra)
    return message + ("; " + "; ".join(hints) if hints else "")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose "invalid choice" errors name the closest choice."""

    def __init__(self, **kwargs: Any) -> None:
        # argparse makes a help formatter for every option it adds (to check the option's
        # metavar), each asking the terminal for its width: here the parser asks once
        formatter = kwargs.pop("formatter_class", argparse.HelpFormatter)
        width = shutil.get_terminal_size().columns - 2  # as argparse's formatter works it out
        super().__init__(formatter_class=functools.partial(formatter, width=width), **kwargs)

    def error(self, message: str) -> NoReturn:
        found = re.search(_CHOICE, message)
        if found:
            choices = [c for a in self._actions if a.choices for c in a.choices]
            match = closest(found.group(1), [str(c) for c in choices])
            if match:
                message += f"; did you mean {match}?"
        super().error(message)


def subparser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    current = parser
    while True:
        chosen = None
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                name = getattr(args, action.dest, None)
                chosen = action.choices.get(name) if name else None
        if chosen is None:
            return current
        current = chosen


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, unknown options reported by the subcommand that got them."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        owner = subparser(parser, args)
        owner.error(unrecognized(owner, extra))
    return args
