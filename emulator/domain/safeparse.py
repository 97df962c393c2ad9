"""Guards that run before any YAML or JSON text reaches a C parser.

libyaml's composer recurses in C without a limit, so deep nesting would overflow the C
stack: :func:`check_yaml` walks the events first (a heap-stack state machine) and refuses
documents too large, too deep or with too many values once aliases expand."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

MAX_DEPTH = 64  # nested collections in any YAML or JSON document payemu reads
MAX_TEXT_CHARS = 8 * 1024 * 1024  # a YAML file or body, in characters
MAX_VALUES = 1_000_000  # scalars and collections once every alias is expanded
QUOTE_CHARS = 40  # characters of an offending value quoted in an error message

# possessive (``++``, ``*+``): a string is one token, never a backtracking point per
# character (the plain ``(?:[^"\\]|\\.)*`` kept about 120 bytes per character of a
# string: 115 MiB for one 0.95 MB string, held while the body was checked); compiled by re
# for the first body with more brackets than the limit
_JSON_TOKEN = rb'"(?:[^"\\]++|\\.)*+"|"|[\[\]{}]'


class TooComplex(ValueError):
    """A document refused before parsing; ``line`` is 1-based when known."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason if line is None else f"line {line}: {reason}")
        self.reason = reason
        self.line = line


def check_yaml(
    text: str,
    max_depth: int = MAX_DEPTH,
    max_chars: int = MAX_TEXT_CHARS,
    max_values: int = MAX_VALUES,
) -> int:
    """Raise :class:`TooComplex` for ``text`` too long, too deep or too large once expanded;
    else the number of values (scalars and collections, aliases expanded) it holds."""
    if len(text) > max_chars:
        raise TooComplex(f"the document is longer than {max_chars} characters")
    import yaml  # PyYAML: when a YAML text is first read

    opens = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    closes = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    depth = 0
    total = 0
    anchored: dict[str, int] = {}  # anchor → expanded size of what it names
    opened: list[tuple[str | None, int]] = []  # (anchor, total at start) per open collection
    parser = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        while True:
            event = parser.get_event()
            if event is None or isinstance(event, yaml.StreamEndEvent):
                break
            if isinstance(event, opens):
                depth += 1
                if depth > max_depth:
                    raise TooComplex(f"the YAML is nested more than {max_depth} levels deep", _line(event))
                opened.append((event.anchor, total))
                total += 1
            elif isinstance(event, closes):
                depth -= 1
                anchor, start = opened.pop()
                if anchor is not None:
                    anchored[anchor] = total - start
            elif isinstance(event, yaml.AliasEvent):
                total += anchored.get(event.anchor or "", 1)
            elif isinstance(event, yaml.ScalarEvent):
                total += 1
                if event.anchor is not None:
                    anchored[event.anchor] = 1
            if total > max_values:
                raise TooComplex(f"the document expands to more than {max_values} values", _line(event))
    except yaml.MarkedYAMLError as exc:
        # libyaml 0.2.6 (PyYAML 6.0.4) stops at 1,000 levels in its scanner, which reads a
        # run of brackets ahead of the events that count them here: past ours all the same
        if exc.problem is None or "maximum nesting depth" not in exc.problem:
            raise
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        raise TooComplex(f"the YAML is nested more than {max_depth} levels deep", line) from None
    finally:
        parser.dispose()
    return total


def bounded_int(loader: Any, node: yaml.ScalarNode) -> Any:
    """YAML's integer constructor, refusing an integer Python will not convert (over 4,300
    digits) with the line it is on, where PyYAML lets a bare ``ValueError`` escape."""
    import yaml

    digits = sum(char.isdigit() for char in str(node.value))
    limit = sys.get_int_max_str_digits()
    if limit and digits > limit:
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer of {digits} digits (at most {limit})", node.start_mark
        )
    return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)


def bound_ints(loader: type) -> None:
    """Make ``loader`` build integers with :func:`bounded_int`."""
    loader.add_constructor("tag:yaml.org,2002:int", bounded_int)  # type: ignore[attr-defined]


def _line(event: yaml.Event) -> int | None:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else None


def check_json_depth(raw: bytes, max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`TooComplex` when ``raw`` nests deeper than ``max_depth``."""
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return
    depth = 0
    for match in re.finditer(_JSON_TOKEN, raw, re.DOTALL):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                line = raw.count(b"\n", 0, match.start()) + 1
                raise TooComplex(f"the JSON is nested more than {max_depth} levels deep", line)
        elif token in (b"]", b"}"):
            depth -= 1
        elif token == b'"':  # an unterminated string: the JSON parser reports it
            return


# every digit to "0", every other byte to " ": a run of 19 digits is then a run of 19 "0"s
_DIGITS_ONLY = bytes.maketrans(bytes(range(256)), bytes(48 if 48 <= b <= 57 else 32 for b in range(256)))
_LONG_RUN = b"0" * 19


def has_long_number(raw: bytes) -> bool:
    """Whether ``raw`` holds 19 digits in a row, which orjson would read as a float."""
    return _LONG_RUN in raw.translate(_DIGITS_ONLY)


# as _DIGITS_ONLY, and "[" and "{" to "[": one pass of the body for both checks below
_OUTLINE = bytes.maketrans(
    bytes(range(256)), bytes(48 if 48 <= b <= 57 else 91 if b in (91, 123) else 32 for b in range(256))
)


def orjson_reads(raw: bytes, max_depth: int = MAX_DEPTH) -> bool:
    """Whether orjson reads the JSON text ``raw`` as the standard library would: False for
    19 digits in a row (:func:`has_long_number`). Raises :class:`TooComplex` where
    :func:`check_json_depth` does."""
    outline = raw.translate(_OUTLINE)
    if _LONG_RUN in outline:
        return False
    if outline.count(b"[") > max_depth:
        check_json_depth(raw, max_depth)
    return True


def short(value: object, limit: int = QUOTE_CHARS) -> str:
    """``value`` cut to ``limit`` characters for an error message, with its full length."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"
