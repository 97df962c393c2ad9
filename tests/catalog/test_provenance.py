"""Every fact a gateway file states names where it comes from: a public page (``source``)
or payemu's guess and why (``guess``). Read straight from the files, so a fact the
catalog's loader does not know yet is caught too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from emulator.catalog.schema import FACT_KEYS
from emulator.domain.datafiles import gateway_files
from tests.support.yamldata import load_yaml

FILES = gateway_files()
# What a gateway file holds besides facts: how payemu shows it, where its sources are
# listed, the provenance itself, the parts of `response` (covered by its provenance) and
# payemu's level for the gateway.
NOT_FACTS = frozenset(
    {
        "displayName",
        "paymentGatewayUrl",
        "description",
        "sources",
        "provenance",
        "responseByResult",
        "responseByOperation",
        "level",  # payemu's own measure of how much it knows of the gateway (tests/catalog checks it)
    }
)


def _data(path: Path) -> dict[str, Any]:
    data = load_yaml(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_fact_of_a_gateway_file_has_a_source_or_a_guess_label(path: Path) -> None:
    data = _data(path)
    stated = data.get("provenance", {})
    for key in data:
        assert key in FACT_KEYS or key in NOT_FACTS, f"{path.name}: {key} is neither a fact key nor one of {NOT_FACTS}"
        if key not in FACT_KEYS:
            continue
        origin = stated.get(key)
        assert isinstance(origin, dict), f"{path.name}: {key} has no provenance"
        assert len(origin) == 1, f"{path.name}: {key}: give either source or guess"
        if "source" in origin:
            assert str(origin["source"]).startswith("https://"), f"{path.name}: {key}: a source is a URL"
        else:
            assert str(origin.get("guess") or "").strip(), f"{path.name}: {key}: a guess says why"
    for key in stated:
        assert key in data, f"{path.name}: provenance of {key}, which the file does not state"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_trigger_names_the_page_that_documents_it(path: Path) -> None:
    for trigger in _data(path).get("triggers") or ():
        assert str(trigger.get("origin", "")).startswith("https://"), f"{path.name}: {trigger.get('name')}"


def test_a_missing_provenance_fails(tmp_path: Path) -> None:
    """The check above catches a fact without a label (a copy of Stripe's file, its
    credentials' provenance removed)."""
    source = next(p for p in FILES if p.stem == "Stripe")
    data = _data(source)
    del data["provenance"]["credentialsNames"]
    broken = tmp_path / "Stripe.yaml"
    broken.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(AssertionError, match="credentialsNames has no provenance"):
        test_every_fact_of_a_gateway_file_has_a_source_or_a_guess_label(broken)


def test_the_credentials_of_stripe_and_adyen_cite_the_gateway_accounts_guide() -> None:
    """The guide's List Gateways example names them; the portal page does not."""
    guide = "https://developers.orchestrasolutions.com/guides/rest-api/utilities/gateway-accounts"
    for name in ("Stripe", "Adyen"):
        data = _data(next(p for p in FILES if p.stem == name))
        assert data["provenance"]["credentialsNames"] == {"source": guide}
