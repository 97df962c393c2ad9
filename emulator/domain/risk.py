"""The card risk check of ``POST /Tools/validate``: the card's country, the payer's IP
address and the billing country compared, as the service documents each level."""

from __future__ import annotations

import ipaddress
from functools import cache
from pathlib import Path
from typing import Any

from emulator.domain.datafiles import data_path, load_checked
from emulator.domain.records import dataclass

IP_RANGES_PATH = data_path("ip-ranges.yaml")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["networks"],
    "properties": {
        "networks": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["network", "country"],
                "properties": {
                    "network": {"type": "string"},
                    "country": {"type": ["string", "null"], "pattern": "^[A-Z]{2}$"},
                    "anonymousProxy": {"type": "boolean"},
                },
            },
        }
    },
}


class IpTableError(ValueError): ...


@dataclass(frozen=True)
class IpFacts:
    """What payemu knows of an IP address: its country, and whether it is an anonymous proxy."""

    country: str | None
    anonymous_proxy: bool


@dataclass(frozen=True)
class Assessment:
    """A risk level and its description."""

    level: str | None
    description: str


class IpTable:
    def __init__(self, networks: list[tuple[Network, IpFacts]]) -> None:
        self._networks = sorted(networks, key=lambda item: -item[0].prefixlen)

    def facts(self, address: str) -> IpFacts:
        """What is known about ``address``; ValueError when it is not an IP address."""
        ip = ipaddress.ip_address(address.strip())
        for network, facts in self._networks:
            if ip.version == network.version and ip in network:
                return facts
        return IpFacts(None, False)


def load_ip_table(path: str | Path | None = None) -> IpTable:
    path = Path(path) if path else IP_RANGES_PATH
    data = load_checked(path, _SCHEMA, "IP table", "ip", IpTableError)
    networks: list[tuple[Network, IpFacts]] = []
    for item in data["networks"]:
        try:
            network = ipaddress.ip_network(item["network"])
        except ValueError as exc:
            raise IpTableError(f"{path}: {item['network']}: {exc}") from exc
        networks.append((network, IpFacts(item["country"], item.get("anonymousProxy", False))))
    return IpTable(networks)


@cache
def default_ip_table() -> IpTable:
    return load_ip_table()


def assess(issuer: str | None, by_ip: str | None, billing: str, anonymous_proxy: bool) -> Assessment:
    """The risk level of a card from ``issuer`` used from ``by_ip`` and billed in ``billing``."""
    # All three agree: VeryLow; the IP or the billing country alone differs: Low; the card's
    # country differs from the other two: High; all differ, or an anonymous proxy: VeryHigh.
    if anonymous_proxy:
        return Assessment("VeryHigh", "The IP address belongs to an anonymous proxy.")
    if issuer is None:
        return Assessment(None, "The card's issuing country is not known, so the risk cannot be assessed.")
    if by_ip is None:
        if issuer == billing:
            return Assessment(
                "Low",
                "The card and the billing address are from the same country; the IP address has no known country.",
            )
        return Assessment(
            "High",
            f"The card was issued in {issuer} but the billing address is in {billing}; "
            "the IP address has no known country.",
        )
    if issuer == by_ip == billing:
        return Assessment("VeryLow", f"The card, the IP address and the billing address are all from {issuer}.")
    if len({issuer, by_ip, billing}) == 3:
        return Assessment(
            "VeryHigh",
            f"The card ({issuer}), the IP address ({by_ip}) and the billing address "
            f"({billing}) are from three different countries.",
        )
    if issuer == billing:
        return Assessment(
            "Low", f"The IP address is in {by_ip}, while the card and the billing address are from {issuer}."
        )
    if issuer == by_ip:
        return Assessment(
            "Low", f"The billing address is in {billing}, while the card and the IP address are from {issuer}."
        )
    return Assessment(
        "High", f"The card was issued in {issuer}, while the payer's IP address and billing address are in {billing}."
    )
