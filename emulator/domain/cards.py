"""Card facts from the BIN (brand, country, type, issuer) and the Luhn check.

The data is ``emulator/data/bins.yaml``, checked when loaded; lookups take the longest
matching prefix."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from emulator.domain.datafiles import data_path, load_checked
from emulator.domain.records import dataclass

BINS_PATH = data_path("bins.yaml")
MAX_BIN = 11
MIN_BIN = 6
MAX_REMEMBERED = 4096  # prefixes whose brand is remembered (then forgotten all at once)

_RANGE = {"type": "string", "pattern": r"^\d{1,6}(-\d{1,6})?$"}
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["logoBase", "brands", "bins"],
    "properties": {
        "logoBase": {"type": "string", "minLength": 1},
        "brands": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["brand", "logo", "lengths", "ranges"],
                "properties": {
                    "brand": {"type": "string", "minLength": 1},
                    "tools": {"type": "string", "minLength": 1},
                    "logo": {"type": "string", "minLength": 1},
                    "lengths": {
                        "type": "array",
                        "minItems": 1,
                        "items": {"type": "integer", "minimum": 8, "maximum": 19},
                    },
                    "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
                    "ranges": {"type": "array", "minItems": 1, "items": _RANGE},
                },
            },
        },
        "bins": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["bin", "country", "type", "category", "issuer"],
                "properties": {
                    "bin": {"type": "string", "pattern": r"^\d{6,11}$"},
                    "brand": {"type": "string", "minLength": 1},
                    "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
                    "type": {"enum": ["CREDIT", "DEBIT"]},
                    "category": {"type": "string", "minLength": 1},
                    "issuer": {"type": "string", "minLength": 1},
                    "cards": {"type": "array", "items": {"type": "string", "pattern": r"^\d{12,19}$"}},
                },
            },
        },
    },
}


class CardTableError(ValueError): ...


@dataclass(frozen=True)
class Brand:
    """A card brand: its name, logo, the lengths of its numbers and its country."""

    name: str  # as the Payments.CardTypes enum spells it
    logo_url: str
    lengths: tuple[int, ...]
    country: str | None
    tools_name: str = ""  # as the service's card tools answer it (`tools` in bins.yaml)


@dataclass(frozen=True)
class BinRow:
    """One row of the BIN table: a card prefix, its brand, country, type, category and issuer."""

    bin: str
    brand: str | None
    country: str
    card_type: str
    category: str
    issuer: str
    cards: tuple[str, ...]


@dataclass(frozen=True)
class IinInfo:
    """Everything known about one BIN; every field but ``bin`` may be unknown."""

    bin: str
    brand: Brand | None
    row: BinRow | None

    @property
    def country(self) -> str | None:
        if self.row is not None:
            return self.row.country
        return self.brand.country if self.brand else None

    def to_iin_data(self) -> dict[str, Any]:
        row = self.row
        return {
            "bin": self.bin,
            "cardBrand": self.brand.tools_name if self.brand else None,
            "cardType": row.card_type if row else None,
            "category": row.category if row else None,
            "issuingOrganization": row.issuer if row else None,
            "countryCode": self.country,
            "brandLogoUrl": self.brand.logo_url if self.brand else None,
        }


@dataclass(frozen=True)
class _Span:
    """The card prefixes from ``low`` to ``high`` (``digits`` long) of one brand."""

    digits: int
    low: int
    high: int
    brand: Brand


class CardTable:
    def __init__(self, brands: list[Brand], spans: list[_Span], rows: list[BinRow]) -> None:
        self.brands = {brand.name: brand for brand in brands}
        self._spans = sorted(spans, key=lambda span: -span.digits)
        self.rows = {row.bin: row for row in rows}
        self._brands_seen: dict[str, str | None] = {}  # prefix → brand name (brand_name)
        self._key_digits = max([MAX_BIN, *(span.digits for span in spans)])

    def brand_by_range(self, number: str) -> Brand | None:
        for span in self._spans:
            head = number[: span.digits]
            if len(head) == span.digits and span.low <= int(head) <= span.high:
                return span.brand
        return None

    def row_of(self, number: str) -> BinRow | None:
        for length in range(min(len(number), MAX_BIN), MIN_BIN - 1, -1):
            row = self.rows.get(number[:length])
            if row is not None:
                return row
        return None

    def lookup(self, number: str, whole_card: bool = False) -> IinInfo:
        """What is known about the BIN of ``number`` (``whole_card``: ``bin`` is the matched BIN)."""
        row = self.row_of(number)
        brand = self.brands.get(row.brand) if row and row.brand else self.brand_by_range(number)
        if whole_card:
            return IinInfo(row.bin if row else number[:MIN_BIN], brand, row)
        return IinInfo(number, brand, row)

    def brand_name(self, number: str) -> str | None:
        """The brand of a whole card number, remembered per prefix."""
        prefix = number[: self._key_digits]
        if prefix in self._brands_seen:
            return self._brands_seen[prefix]
        brand = self.lookup(number, whole_card=True).brand
        if len(self._brands_seen) >= MAX_REMEMBERED:
            self._brands_seen.clear()
        name = self._brands_seen[prefix] = brand.name if brand else None
        return name

    def length_problem(self, number: str) -> str | None:
        brand = self.lookup(number).brand
        if brand is None or len(number) in brand.lengths:
            return None
        lengths = ", ".join(str(n) for n in brand.lengths[:-1])
        allowed = f"{lengths} or {brand.lengths[-1]}" if lengths else str(brand.lengths[-1])
        return f"The number has {len(number)} digits; {brand.name} card numbers have {allowed}."


def luhn_valid(number: str) -> bool:
    """True for ASCII digits whose last digit is their Luhn check digit."""
    # Written out: it runs on every charge and every masking, in a third of stdnum's time.
    if not (number.isascii() and number.isdigit()):
        return False
    total = 0
    for index, char in enumerate(reversed(number)):
        value = ord(char) - 48
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def brand_of(number: str | None) -> str | None:
    """The Payments.CardTypes brand of a whole card number, None if unknown or not digits."""
    if not number or not (number.isascii() and number.isdigit()):
        return None
    return default_table().brand_name(number)


def load_table(path: str | Path | None = None) -> CardTable:
    path = Path(path) if path else BINS_PATH
    data = load_checked(path, _SCHEMA, "BIN table", "bins", CardTableError)
    brands: list[Brand] = []
    spans: list[_Span] = []
    for item in data["brands"]:
        name = item["brand"]
        logo = data["logoBase"] + item["logo"]
        brand = Brand(name, logo, tuple(item["lengths"]), item.get("country"), item.get("tools", name.upper()))
        if any(b.name == brand.name for b in brands):
            raise CardTableError(f"{path}: brand {brand.name} is listed twice")
        brands.append(brand)
        spans.extend(_span(path, brand, text) for text in item["ranges"])
    table = CardTable(brands, spans, [])
    rows = [_row(path, table, item) for item in data["bins"]]
    if len({row.bin for row in rows}) != len(rows):
        raise CardTableError(f"{path}: a BIN is listed twice")
    table = CardTable(brands, spans, rows)
    for row in rows:
        for card in row.cards:
            if table.row_of(card) is not row:
                raise CardTableError(f"{path}: BIN {row.bin}: test card {card[:6]}… is covered by a longer BIN")
    return table


def _span(path: Path, brand: Brand, text: str) -> _Span:
    low, _, high = text.partition("-")
    high = high or low
    if len(low) != len(high) or int(low) > int(high):
        raise CardTableError(f"{path}: {brand.name}: range {text} must join two prefixes of one length, low first")
    return _Span(len(low), int(low), int(high), brand)


def _row(path: Path, table: CardTable, item: dict[str, Any]) -> BinRow:
    bin_ = item["bin"]
    known = table.brand_by_range(bin_)
    brand = item.get("brand") or (known.name if known else None)
    if brand is not None and brand not in table.brands:
        raise CardTableError(f"{path}: BIN {bin_}: unknown brand {brand}")
    cards = tuple(item.get("cards", ()))
    row = BinRow(bin_, brand, item["country"], item["type"], item["category"], item["issuer"], cards)
    for card in row.cards:
        where = f"{path}: BIN {bin_}: test card {card[:6]}…{card[-4:]}"
        if not card.startswith(bin_):
            raise CardTableError(f"{where} does not start with the BIN")
        if not luhn_valid(card):
            raise CardTableError(f"{where} fails the Luhn check")
        if brand is not None and len(card) not in table.brands[brand].lengths:
            raise CardTableError(f"{where} has a length {brand} never uses")
    return row


@cache
def default_table() -> CardTable:
    return load_table()
