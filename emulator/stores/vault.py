"""The string-token vault: sensitive strings stored under 32-character tokens, per tenant,
and the ``@token`` card references payments resolve through it. Payloads are never logged."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from emulator.domain import budget as weights
from emulator.domain import errors
from emulator.domain.budget import Budget
from emulator.domain.model import Card
from emulator.domain.records import dataclass

TOKEN_LENGTH = 32
MAX_PAYLOAD = 16384
MAX_TOKENS = 10_000  # per tenant by default (config: limits.tokensPerTenant)
MAX_TOKEN_BYTES = 16 * 1024 * 1024  # characters (config: limits.tokenBytesPerTenant)
# compiled by ``re`` when first used (a payload with card details, a token reference)
_TOKEN_REFERENCE = r"@([A-Za-z0-9]{32})"
_CARD_NUMBER = r"\d{12,20}"
_CVV = r"\d{3,4}"
_SEPARATORS = r"[ \-]"
# Card fields a JSON payload may fill, by lower-case name.
_CARD_FIELDS = {
    name.lower(): name for name in ("cardNumber", "cardHolderName", "expirationMonth", "expirationYear", "cvv")
}


@dataclass(frozen=True)
class StringToken:
    """A stored string token: the payload a client keeps under it and when it was made."""

    token: str
    payload: str
    create_time: datetime

    def __repr__(self) -> str:  # keep payloads out of tracebacks and debug output
        return f"StringToken(token={self.token!r}, payload=<{len(self.payload)} characters>)"


class Vault(Mapping[str, StringToken]):
    """A tenant's string tokens, oldest first, bounded in count and characters."""

    def __init__(
        self, limit: int = MAX_TOKENS, byte_limit: int = MAX_TOKEN_BYTES, budget: Budget | None = None
    ) -> None:
        self._tokens: dict[str, StringToken] = {}
        self._bytes = 0  # characters of every payload held
        self.limit = limit
        self.byte_limit = byte_limit
        self.budget = budget or weights.unlimited()  # the tenant's, in bytes (weight())
        # tokens added or deleted since a --state saver last took them (None while no
        # saver watches); see emulator.state.saver
        self.changed: dict[str, None] | None = None  # a dict: in the order noted (oldest first)

    def __getitem__(self, token: str) -> StringToken:
        return self._tokens[token]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tokens)

    def __len__(self) -> int:
        return len(self._tokens)

    @property
    def bytes(self) -> int:
        return self._bytes

    def admit(self, payload: str) -> None:
        """A 507 when ``payload`` would pass the limits: tokens are the client's data, none is dropped."""
        if len(self._tokens) >= self.limit:
            raise errors.limit_reached(
                "payload", f"This API key holds its limit of {self.limit} string tokens; delete some first."
            )
        if self._bytes + len(payload) > self.byte_limit:
            raise errors.limit_reached(
                "payload",
                f"This API key's string tokens hold their limit of {self.byte_limit} characters; delete some first.",
            )
        weight = _weight(payload)
        if not self.budget.make_room(weight):  # journal entries may go; tokens never do
            raise self.budget.refusal("payload", weight, "This string token")

    def store(self, payload: str, new_token: Callable[[int], str], now: datetime) -> StringToken:
        if not 1 <= len(payload) <= MAX_PAYLOAD:
            raise errors.invalid("payload", f"The payload must be 1 to {MAX_PAYLOAD} characters long.")
        self.admit(payload)  # hardening: 507 at the token limits
        token = new_token(TOKEN_LENGTH)
        while token in self._tokens:
            token = new_token(TOKEN_LENGTH)
        entry = StringToken(token, payload, now)
        self.add(entry)
        return entry

    def add(self, entry: StringToken) -> None:
        replaced = self._tokens.get(entry.token)
        self._bytes += len(entry.payload) - (len(replaced.payload) if replaced else 0)
        self.budget.charge(_weight(entry.payload) - (_weight(replaced.payload) if replaced else 0))
        self._tokens[entry.token] = entry
        if self.changed is not None:
            self.changed[entry.token] = None

    def require(self, token: str, field: str = "token") -> StringToken:
        entry = self._tokens.get(token)
        if entry is None:
            raise errors.not_found(field, f"No string token {token} exists for this API key.")
        return entry

    def delete(self, token: str) -> bool:
        entry = self._tokens.pop(token, None)
        if entry is None:
            return False
        self._bytes -= len(entry.payload)
        self.budget.release(_weight(entry.payload))
        if self.changed is not None:
            self.changed[token] = None
        return True


def _weight(payload: str) -> int:
    return weights.STRING_TOKEN + weights.text(payload)


if TYPE_CHECKING:  # a type for the checker only (no class made at run time)

    class VaultHolder(Protocol):
        vault: Vault

        def random_string(self, length: int) -> str: ...

        def now(self) -> datetime: ...


def store(holder: VaultHolder, payload: str) -> StringToken:
    return holder.vault.store(payload, holder.random_string, holder.now())


def resolve_card(holder: VaultHolder, card: Card) -> Card:
    """The card with every ``@token`` reference replaced by what the token holds."""
    # A payload of digits is the number; a JSON object of card details fills the fields the
    # request left out. A missing or unfit token is a 400 on that field.
    resolved = card
    number = card.number
    if isinstance(number, str) and number.startswith("@"):
        payload = _payload(holder.vault, number, "card.cardNumber")
        details = _card_details(payload)
        digits = details.get("cardNumber") if details else re.sub(_SEPARATORS, "", payload.strip())
        if not isinstance(digits, str) or not re.fullmatch(_CARD_NUMBER, digits):
            raise errors.invalid("card.cardNumber", "The token does not hold a card number.")
        resolved = replace(
            resolved,
            number=digits,
            holder=_fill(resolved.holder, details.get("cardHolderName")),
            expiration_month=_fill(resolved.expiration_month, details.get("expirationMonth")),
            expiration_year=_fill(resolved.expiration_year, details.get("expirationYear")),
            cvv=_fill(resolved.cvv, details.get("cvv")),
        )
    cvv = card.cvv
    if isinstance(cvv, str) and cvv.startswith("@"):
        payload = _payload(holder.vault, cvv, "card.cvv")
        held = _card_details(payload).get("cvv") if payload.lstrip().startswith("{") else payload.strip()
        if not isinstance(held, str) or not re.fullmatch(_CVV, held):
            raise errors.invalid("card.cvv", "The token does not hold a security code.")
        resolved = replace(resolved, cvv=held)
    return resolved


def _fill(given: Any, held: Any) -> Any:
    """A field the request gave wins over the token's."""
    return given if given is not None else held


def _payload(vault: Vault, reference: str, field: str) -> str:
    match = re.fullmatch(_TOKEN_REFERENCE, reference)
    if match is None:
        raise errors.invalid(field, "A token reference is @ followed by the 32-character string token.")
    entry = vault.get(match.group(1))
    if entry is None:
        raise errors.invalid(field, f"The string token {match.group(1)} does not exist for this API key.")
    return entry.payload


def _card_details(payload: str) -> dict[str, Any]:
    """The card fields of a JSON-object payload; {} for any other payload."""
    if not payload.lstrip().startswith("{"):
        return {}
    try:
        data = json.loads(payload)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    details: dict[str, Any] = {}
    for key, value in data.items():
        name = _CARD_FIELDS.get(str(key).lower())
        if name is None or value is None:
            continue
        if name in ("expirationMonth", "expirationYear"):
            value = _whole_number(value)
        elif name in ("cardNumber", "cvv"):
            value = re.sub(_SEPARATORS, "", str(value)) if isinstance(value, str | int) else None
        elif not isinstance(value, str):
            value = None
        if value is not None:
            details[name] = value
    return details


def _whole_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
