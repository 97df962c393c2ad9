"""What a scenario rule may name: the gateways of the catalog and, where a tenant exists (the
control API), its accounts. A name that is not one of them refuses the rule with the closest."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from emulator.domain.datafiles import gateway_files
from emulator.domain.didyoumean import unknown
from emulator.domain.records import dataclass


@dataclass(frozen=True)
class Names:
    """The gateways and accounts a rule may name (case ignored); None: that kind is not checked."""

    gateways: tuple[str, ...] | None
    accounts: tuple[str, ...] | None = None

    def errors(self, rule: dict[str, Any]) -> Iterator[tuple[list[Any], str]]:
        when = rule.get("when")
        if not isinstance(when, dict):
            return
        for key, kind, known in (("gateway", "gateway", self.gateways), ("account", "account", self.accounts)):
            named = when.get(key)
            if known is not None and isinstance(named, str) and named.casefold() not in {k.casefold() for k in known}:
                yield ["when", key], unknown(kind, named, known, fold=True)


@cache
def catalog_names() -> Names:
    """The gateways of payemu's catalog (each gateway's file is named after it); accounts unchecked."""
    return Names(tuple(path.stem for path in gateway_files()))
