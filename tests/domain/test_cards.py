"""The BIN table: brands by IIN range, known BINs, test cards, and its checks on load."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulator.contract.openapi import OpenApi
from emulator.domain.cards import BINS_PATH, CardTableError, default_table, load_table, luhn_valid
from tests.support.paths import REPO_ROOT
from tests.support.yamldata import load_yaml

ROOT = REPO_ROOT
DOCUMENTED = {
    "4111111111111111": ("Visa", "US"),
    "4242424242424242": ("Visa", "US"),
    "4000000000000002": ("Visa", "US"),
    "5555555555554444": ("MasterCard", "US"),
    "5105105105105100": ("MasterCard", "US"),
    "378282246310005": ("AMEX", "US"),
    "371449635398431": ("AMEX", "US"),
    "6011111111111117": ("Discover", "US"),
    "3530111333300000": ("JCB", "JP"),
    "36227206271667": ("DinersClub", "US"),
    "6200000000000005": ("UnionPay", "CN"),
    "4000056655665556": ("Visa", "US"),
    "2223003122003222": ("MasterCard", "US"),
    "4000008260000000": ("Visa", "GB"),
    "4000000760000002": ("Visa", "BR"),
    "4000002760000016": ("Visa", "DE"),
}
SCENARIO_CARDS = sorted(
    {
        number
        for path in sorted((ROOT / "scenarios").glob("*.yaml"))
        for number in re.findall(r"(?<![\d.])\d{13,19}(?![\d.])", path.read_text())
    }
)


def _table_cards() -> list[str]:
    return [card for row in default_table().rows.values() for card in row.cards]


@pytest.mark.parametrize("number", sorted(DOCUMENTED))
def test_documented_test_cards(number: str) -> None:
    info = default_table().lookup(number, whole_card=True)
    assert (info.brand.name if info.brand else None, info.country) == DOCUMENTED[number]
    assert info.row is not None
    assert info.row.card_type in ("CREDIT", "DEBIT")
    assert luhn_valid(number)
    assert number in _table_cards()


@pytest.mark.parametrize("number", SCENARIO_CARDS)
def test_scenario_test_cards_have_a_country(number: str) -> None:
    assert default_table().lookup(number).country is not None, f"add a BIN row covering {number[:8]}"


def test_every_card_of_the_table_is_luhn_valid_and_resolves_to_its_row() -> None:
    table = default_table()
    cards = 0
    for row in table.rows.values():
        for card in row.cards:
            cards += 1
            assert luhn_valid(card), card
            assert table.row_of(card) is row
            assert table.lookup(card).country == row.country
            brand = table.lookup(card).brand
            assert brand is not None
            assert len(card) in brand.lengths
    assert cards >= 40


def test_brand_names_are_card_type_enum_values(openapi: OpenApi) -> None:
    enum = set(openapi.document["components"]["schemas"]["Payments.CardTypes"]["enum"])
    assert set(default_table().brands) <= enum
    assert {row.brand for row in default_table().rows.values()} <= enum


@pytest.mark.parametrize(
    ("iin", "brand"),
    [
        ("400000", "Visa"),
        ("491761", "Electron"),
        ("417500", "Electron"),
        ("510000", "MasterCard"),
        ("559999", "MasterCard"),
        ("222100", "MasterCard"),
        ("272099", "MasterCard"),
        ("272100", None),
        ("340000", "AMEX"),
        ("370000", "AMEX"),
        ("350000", None),
        ("601100", "Discover"),
        ("644000", "Discover"),
        ("650000", "Discover"),
        ("352800", "JCB"),
        ("358999", "JCB"),
        ("300000", "DinersClub"),
        ("309500", "DinersClub"),
        ("360000", "DinersClub"),
        ("384100", "Hipercard"),
        ("620000", "UnionPay"),
        ("500000", "Maestro"),
        ("560000", "Maestro"),
        ("630400", "Maestro"),
        ("690000", "Maestro"),
        ("501900", "Dankort"),
        ("636368", "Elo"),
        ("509500", "Elo"),
        ("606282", "Hipercard"),
        ("979200", "Troy"),
        ("100000", "UATP"),
        ("201400", "enRoute"),
        ("000000", None),
        ("700000", None),
    ],
)
def test_brand_by_iin_range(iin: str, brand: str | None) -> None:
    found = default_table().brand_by_range(iin)
    assert (found.name if found else None) == brand


def test_longest_bin_wins() -> None:
    table = default_table()
    assert table.lookup("400000").country == "US"
    assert table.lookup("40000082").country == "GB"
    assert table.lookup("40000082601").country == "GB"
    assert table.lookup("4000008260000000", whole_card=True).bin == "40000082"
    assert table.lookup("4111119999999999", whole_card=True).bin == "411111"
    assert table.lookup("4555559999999999", whole_card=True).bin == "455555"


def test_scheme_home_country_when_no_bin_row() -> None:
    table = default_table()
    assert table.lookup("355555").country == "JP"
    assert table.lookup("341234").country == "US"
    assert table.lookup("621234").country == "CN"
    assert table.lookup("455555").country is None  # Visa issues everywhere
    assert table.lookup("455555").row is None


def test_iin_data_shape() -> None:
    assert default_table().lookup("510510").to_iin_data() == {
        "bin": "510510",
        "cardBrand": "MASTERCARD",
        "cardType": "DEBIT",
        "category": "PREPAID",
        "issuingOrganization": "Payemu Test Bank",
        "countryCode": "US",
        "brandLogoUrl": "https://payemu.invalid/logos/mastercard.svg",
    }
    assert default_table().lookup("000000").to_iin_data() == {
        "bin": "000000",
        "cardBrand": None,
        "cardType": None,
        "category": None,
        "issuingOrganization": None,
        "countryCode": None,
        "brandLogoUrl": None,
    }


def test_luhn_and_length() -> None:
    table = default_table()
    assert luhn_valid("4111111111111111")
    assert not luhn_valid("4111111111111112")
    assert not luhn_valid("4111 1111")
    assert not luhn_valid("")
    assert table.length_problem("4111111111111111") is None
    assert table.length_problem("378282246310005") is None
    assert table.length_problem("37828224631000") == "The number has 14 digits; AMEX card numbers have 15."
    assert table.length_problem("00000000") is None  # no brand, nothing to compare


def _write(tmp_path: Path, mutate: Any) -> Path:
    data = load_yaml(BINS_PATH.read_text())
    mutate(data)
    path = tmp_path / "bins.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.pop("brands"), "'brands' is a required property"),
        (lambda d: d["brands"][0].update(ranges=["4x"]), "brands[0].ranges[0]"),
        (lambda d: d["brands"][0].update(ranges=["55-51"]), "range 55-51"),
        (lambda d: d["brands"][0].update(ranges=["4-555"]), "range 4-555"),
        (lambda d: d["brands"].append(dict(d["brands"][0])), "brand Visa is listed twice"),
        (lambda d: d["bins"][0].update(country="usa"), "bins[0].country"),
        (lambda d: d["bins"][0].update(type="CHARGE"), "bins[0].type"),
        (lambda d: d["bins"][0].update(brand="Bitcoin"), "unknown brand Bitcoin"),
        (lambda d: d["bins"][0].update(cards=["4111111111111112"]), "fails the Luhn check"),
        (lambda d: d["bins"][0].update(cards=["4242424242424242"]), "does not start with the BIN"),
        (lambda d: d["bins"][0].update(cards=["411111111111116"]), "has a length Visa never uses"),
        (lambda d: d["bins"].append(dict(d["bins"][0])), "a BIN is listed twice"),
        (lambda d: d["bins"].append({**d["bins"][0], "bin": "4111111", "cards": []}), "covered by a longer BIN"),
    ],
)
def test_a_malformed_table_is_refused_clearly(tmp_path: Path, mutate: Any, fragment: str) -> None:
    path = _write(tmp_path, mutate)
    with pytest.raises(CardTableError) as caught:
        load_table(path)
    assert str(path) in str(caught.value)
    assert fragment in str(caught.value)


def test_an_unreadable_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CardTableError, match="cannot read the BIN table"):
        load_table(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("brands: [")
    with pytest.raises(CardTableError, match="cannot read the BIN table"):
        load_table(tmp_path / "bad.yaml")
