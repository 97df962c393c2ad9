"""The risk rule of POST /Tools/validate and the documentation-range IP table."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.domain.risk import IpTableError, assess, default_ip_table, load_ip_table


@pytest.mark.parametrize(
    ("issuer", "by_ip", "billing", "proxy", "level"),
    [
        ("US", "US", "US", False, "VeryLow"),
        ("US", "GB", "US", False, "Low"),  # the IP alone differs
        ("US", "US", "GB", False, "Low"),  # the billing address alone differs
        ("US", "GB", "GB", False, "High"),  # the card's country differs from the payer's
        ("US", "GB", "DE", False, "VeryHigh"),  # several mismatches
        ("US", "US", "US", True, "VeryHigh"),  # anonymous proxy
        ("US", None, "US", False, "Low"),
        ("US", None, "GB", False, "High"),
        (None, "US", "US", False, None),
    ],
)
def test_rule(issuer: str | None, by_ip: str | None, billing: str, proxy: bool, level: str | None) -> None:
    result = assess(issuer, by_ip, billing, proxy)
    assert result.level == level
    assert result.description.endswith(".")


def test_descriptions_name_the_countries() -> None:
    assert "GB" in assess("US", "GB", "GB", False).description
    assert "proxy" in assess("US", "US", "US", True).description


@pytest.mark.parametrize(
    ("address", "country", "proxy"),
    [
        ("203.0.113.7", "US", False),
        ("203.0.113.130", "CA", False),
        ("203.0.113.200", "MX", False),
        ("198.51.100.1", "GB", False),
        ("198.51.100.129", "DE", False),
        ("198.51.100.250", "FR", False),
        ("192.0.2.1", "BR", False),
        ("192.0.2.129", "JP", False),
        ("192.0.2.200", None, True),
        ("2001:db8::1", "US", False),
        ("2001:db8:1::5", "GB", False),
        ("2001:DB8:FFFF::1", None, True),
        ("10.0.0.1", None, False),
        ("127.0.0.1", None, False),
        ("8.8.8.8", None, False),
        ("::1", None, False),
        (" 203.0.113.7 ", "US", False),
    ],
)
def test_ip_table(address: str, country: str | None, proxy: bool) -> None:
    facts = default_ip_table().facts(address)
    assert (facts.country, facts.anonymous_proxy) == (country, proxy)


@pytest.mark.parametrize("address", ["", "not-an-ip", "256.1.1.1", "1.2.3", "203.0.113.0/24"])
def test_ip_table_refuses_non_addresses(address: str) -> None:
    with pytest.raises(ValueError):
        default_ip_table().facts(address)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("networks: [{network: 10.0.0.0/8, country: usa}]", "networks[0].country"),
        ("networks: [{network: 10.0.0.0/33, country: US}]", "10.0.0.0/33"),
        ("networks: [{network: 10.0.0.0/8}]", "'country' is a required property"),
        ("networks: [", "cannot read the IP table"),
    ],
)
def test_a_malformed_ip_table_is_refused(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "ip.yaml"
    path.write_text(text)
    with pytest.raises(IpTableError) as caught:
        load_ip_table(path)
    assert str(path) in str(caught.value)
    assert fragment in str(caught.value)
