"""emulator.endpoints.origins: returnUrl and the postMessage target, parsed as a browser parses
them (cases in tests/cases/origins.yaml)."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.endpoints import origins
from tests.support.paths import TESTS_DIR
from tests.support.yamldata import load_yaml

CASES = load_yaml((TESTS_DIR / "cases" / "origins.yaml").read_text())


@pytest.mark.parametrize("case", CASES["urls"], ids=[c["name"] for c in CASES["urls"]])
def test_url(case: dict[str, Any]) -> None:
    url = case["url"]
    assert origins.origin_of(url) == case["origin"]
    assert origins.allowed(origins.origin_of(url)) is case["allowed"]
    redirect, warning = origins.return_url(url)
    if case["allowed"]:
        assert (redirect, warning) == (case["href"], None)
        assert origins.message_origin(None, redirect) == case["origin"]
        assert origins.message_origin(url, "") == case["origin"]
    else:
        assert (redirect, warning) == ("", origins.NOT_ALLOWED)
        assert origins.message_origin(url, "") == ""  # the page's own origin, never the asked one


@pytest.mark.parametrize("case", CASES["configured"], ids=[c["text"] for c in CASES["configured"]])
def test_configured_origin(case: dict[str, Any]) -> None:
    assert origins.canonical_origin(case["text"]) == case["origin"]


def test_configured_origins_are_compared_as_origins() -> None:
    configured = ("https://Shop.Example:443",)
    assert origins.return_url("HTTPS://shop.example/done", configured) == ("https://shop.example/done", None)
    assert origins.return_url("https://shop.example:8443/done", configured)[0] == ""
    assert (
        origins.return_url("https://shop.example\\@evil.example/", configured)[0]
        == "https://shop.example/@evil.example/"
    )
    assert origins.return_url("https://evil.example\\@shop.example/", configured)[0] == ""
    assert origins.message_origin("https://evil.example\\@shop.example", "", configured) == ""


def test_the_embedding_origin_wins_over_the_return_url() -> None:
    assert origins.message_origin("http://localhost:5173", "http://127.0.0.1:9/x") == "http://localhost:5173"
    assert origins.message_origin("http://evil.example\\@localhost:5173", "http://127.0.0.1:9/x") == (
        "http://127.0.0.1:9"
    )
    assert origins.message_origin(None, "") == ""
