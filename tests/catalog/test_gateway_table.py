"""The gateway table of docs/test-cards.md is the catalog's."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.catalog import docs_table as table
from emulator.catalog.loader import load_catalog


def test_docs_table_matches_the_catalog() -> None:
    text = table.PAGE.read_text(encoding="utf-8")
    expected = table.replace_block(text, table.markdown(load_catalog()))
    assert text == expected, "run: python -m emulator.catalog.docs_table --write-docs"


def test_rows_carry_the_behaviour_facts() -> None:
    levels, gateways = table.markdown(load_catalog()).split("\n\n")
    rows = {line.split(" | ")[0].strip("| `"): line for line in gateways.splitlines()[2:]}
    assert len(rows) == len(load_catalog())
    assert "mock: always approves" in rows["NULLSuccess"]
    assert "*`ShopperInteraction`*" in rows["Adyen"]
    assert "Charge, Refund, Tokenize" in rows["AMEX"]
    assert "`myRef` of 6+ characters" in rows["AMEX"]
    assert "(`certificateName`) and `payerDetails.clientIPAddress`" in rows["FirstDataIPG"]
    assert "needs `card.cvv`" in rows["BAC"]
    assert "the `CustomerID` credential to tokenize" in rows["Airwallex"]
    assert "orderDesc" not in rows["Cardstream"]  # used, not demanded (the gateway requirements guide)
    assert rows["Stripe"].startswith("| `Stripe` | sandbox |")
    assert rows["Tyro"].startswith("| `Tyro` | listed | any names |")
    by_level = levels.splitlines()[2:]
    assert [line.split(" (")[0] for line in by_level] == ["| sandbox", "| credentials", "| listed"]
    assert "`BAC`" in by_level[1]


def test_write_docs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{table.START}\nstale table\n{table.END}\noutro\n")
    assert table.main(["--write-docs", str(readme)]) == 0
    written = readme.read_text()
    assert written.startswith("intro\n")
    assert written.endswith("outro\n")
    assert "stale table" not in written
    assert table.markdown(load_catalog()) in written
    assert table.main([]) == 0
    assert "`Stripe`" in capsys.readouterr().out
    readme.write_text("no markers")
    with pytest.raises(ValueError, match="gateways:start"):
        table.main(["--write-readme", str(readme)])
