"""Control: what a caller names must exist. A query parameter an operation does not
document, or a filter value nothing can have (a gateway, an operationId, a method), is a
JSON 400 that names it, lists what is allowed and suggests the closest: never ignored,
so a mistyped filter cannot make an assertion pass."""

from __future__ import annotations

from collections.abc import Iterable

from emulator.domain import errors
from emulator.domain.didyoumean import unknown
from emulator.endpoints.pipeline import Call


def sentence(text: str) -> str:
    """``text`` as an API error message: a capital first and a full stop."""
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "?", ")")) else ".")


ROUTING = ("key",)  # the sharded deployment routes any call by ?key= (deploy/haproxy.cfg)


def refuse_unknown_query(call: Call) -> None:
    """A 400 naming each query parameter the operation does not document (besides the
    deployment's routing parameter, which any call may carry)."""
    given = call.request.query_params.keys()
    if not given:
        return
    allowed = [param.name for param in call.operation.parameters if param.location == "query"]
    allowed += [name for name in ROUTING if name not in allowed]
    strangers = sorted({name for name in given if name not in allowed})
    if strangers:
        raise errors.invalid_many((name, [sentence(unknown("query parameter", name, allowed))]) for name in strangers)


def refuse_unknown_value(field: str, value: str | None, allowed: Iterable[str], fold: bool = False) -> None:
    """A 400 when ``value`` (given) is none of ``allowed`` (compared case-insensitively with ``fold``)."""
    if value is None:
        return
    names = sorted(set(allowed), key=str.casefold)
    known = {name.casefold() for name in names} if fold else set(names)
    if (value.casefold() if fold else value) not in known:
        raise errors.invalid(field, sentence(unknown(field, value, names, fold)))
