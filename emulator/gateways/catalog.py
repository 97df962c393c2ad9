"""The gateway catalog: every simulated gateway is data in ``catalog.yaml``.

Adding a gateway is a data edit. The file is checked against a JSON Schema when loaded
(payemu refuses to start on a malformed catalog, naming the entry and field), then turned
into frozen :class:`GatewaySpec` records that the resources API lists and the payment
engine reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.datafiles import data_path, load_checked
from emulator.vocabulary import OPERATIONS, RESULT_CODES
from emulator.vocabulary import ResultCode as Result

CATALOG_PATH = data_path("catalog.yaml")
RESULT_KEYS = (*RESULT_CODES, "AuthenticationFailed")
ALPHABETS = {
    "digits": "0123456789",
    "upper": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "alnum": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "hex": "0123456789abcdef",
}

_FORMAT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["length", "alphabet"],
    "properties": {
        "prefix": {"type": "string"},
        "prefixByOperation": {
            "type": "object",
            "propertyNames": {"enum": list(OPERATIONS)},
            "additionalProperties": {"type": "string"},
        },
        "length": {"type": "integer", "minimum": 4, "maximum": 64},
        "alphabet": {"enum": list(ALPHABETS)},
    },
}
_CODE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["code", "description"],
    "properties": {"code": {"type": "string"}, "description": {"type": "string"}},
}
# What a gateway checks of the card and amount itself (see emulator.gateways.checks).
CARD_CHECKS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "enabled": {"type": "boolean"},
        "cardOperations": {"type": "array", "items": {"enum": list(OPERATIONS)}},
        "amountOperations": {"type": "array", "items": {"enum": list(OPERATIONS)}},
        "luhn": {"type": "boolean"},
        "digits": {
            "type": "object",
            "additionalProperties": False,
            "required": ["min", "max"],
            "properties": {"min": {"type": "integer", "minimum": 1}, "max": {"type": "integer", "minimum": 1}},
        },
        "expiry": {"type": "boolean"},
        "cvvLength": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1, "maximum": 8}},
        "nonPositiveAmountReason": {"type": "string", "minLength": 1},
        "accountVerification": {"type": "boolean"},
        "twoDigitYears": {"type": "boolean"},
        # the smallest payment per currency (major units), below which Charge and PreAuth are InvalidAmount
        "minimumAmounts": {"type": "object", "additionalProperties": {"type": "number", "exclusiveMinimum": 0}},
        "wholeMinorUnits": {"type": "boolean"},  # a fraction finer than the currency's minor unit is InvalidAmount
    },
}
_MODES: dict[str, Any] = {  # which values of one credential are sandbox and which live
    "type": "object",
    "additionalProperties": False,
    "required": ["credential", "live", "source"],
    "properties": {
        "credential": {"type": "string", "minLength": 1},
        "sandbox": {"type": "string", "format": "regex"},  # absent: whatever is not live
        "live": {"type": "string", "format": "regex"},
        "source": {"type": "string", "minLength": 1},  # a URL, or "payemu" for payemu's own convention
        "liveTestCard": _CODE,  # a live credential paying one of the gateway's test cards: declined
    },
}
_RESULT_MAP = {"type": "object", "additionalProperties": {"type": "string", "maxLength": 8}}
_RESPONSE_OVERRIDES = {"type": "object", "additionalProperties": {"type": "object"}}
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["gateways"],
    "properties": {
        "cardChecks": CARD_CHECKS,
        "gateways": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": [
                    "name",
                    "displayName",
                    "paymentGatewayUrl",
                    "description",
                    "credentialsNames",
                    "supportsNetworkToken",
                    "tokenizes",
                    "authorizationDays",
                    "reference",
                    "codes",
                ],
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Za-z0-9]+$"},
                    "displayName": {"type": "string", "minLength": 1},
                    "paymentGatewayUrl": {"type": "string", "minLength": 1},
                    "description": {"type": "string", "minLength": 1},
                    "credentialsNames": {"type": "array", "items": {"type": "string", "minLength": 1}},
                    "optionalCredentials": {"type": "array", "items": {"type": "string", "minLength": 1}},
                    "supportsNetworkToken": {"type": "boolean"},
                    "tokenizes": {"type": "boolean"},
                    "authorizationDays": {"type": "integer", "minimum": 1, "maximum": 60},
                    "unsupportedOperations": {"type": "array", "items": {"enum": list(OPERATIONS)}},
                    "requires": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "certificate": {"type": "boolean"},
                            "clientIPAddress": {"type": "boolean"},
                            "orderDesc": {"type": "boolean"},
                            "myRefMinLength": {"type": "integer", "minimum": 0},
                        },
                    },
                    "always": {"enum": [Result.SUCCESS.value, Result.REJECTED.value]},
                    "reference": _FORMAT,
                    "token": _FORMAT,
                    "authorizationCode": _FORMAT,
                    "codes": {
                        "type": "object",
                        "required": list(RESULT_KEYS),
                        "additionalProperties": _CODE,
                    },
                    "response": {"type": "object"},
                    "responseByResult": _RESPONSE_OVERRIDES,
                    "responseByOperation": _RESPONSE_OVERRIDES,
                    "cardChecks": CARD_CHECKS,
                    # {avsResult} / {cvvResult}: the gateway's AVS result by payerDetails.postCode
                    # and card-code result by card.cvv ("default": any other value or none)
                    "avsResults": _RESULT_MAP,
                    "cvvResults": _RESULT_MAP,
                    # where the gateway's behaviour is documented (URLs); empty for mocks
                    "sources": {"type": "array", "items": {"type": "string", "minLength": 1}},
                    # credential names the public record does not show (payemu's invention)
                    "inventedCredentials": {"type": "boolean"},
                    "credentialModes": _MODES,
                },
            },
        },
    },
}


class CatalogError(ValueError):
    """The catalog file cannot be used; the message names the gateway and the field."""


@dataclass(frozen=True)
class ReferenceFormat:
    """How a gateway spells its ids: prefix (per operation), length and alphabet."""

    prefix: str
    prefix_by_operation: dict[str, str]
    length: int
    alphabet: str

    def prefix_for(self, operation: str) -> str:
        return self.prefix_by_operation.get(operation, self.prefix)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> ReferenceFormat:
        return cls(
            prefix=data.get("prefix", ""),
            prefix_by_operation=dict(data.get("prefixByOperation", {})),
            length=data["length"],
            alphabet=ALPHABETS[data["alphabet"]],
        )


@dataclass(frozen=True)
class ResultCode:
    code: str
    description: str


@dataclass(frozen=True)
class CredentialModes:
    """How a gateway tells sandbox credentials from live ones by their shape."""

    credential: str
    sandbox: re.Pattern[str] | None
    live: re.Pattern[str]
    source: str
    live_test_card: ResultCode | None

    def mode_of(self, credentials: dict[str, str | None]) -> str | None:
        """``sandbox``, ``live``, ``invalid`` (neither shape), or None when the credential is absent."""
        value = credentials.get(self.credential)
        if not value:
            return None
        if self.live.match(value):
            return "live"
        if self.sandbox is None or self.sandbox.match(value):
            return "sandbox"
        return "invalid"

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> CredentialModes:
        card = data.get("liveTestCard")
        return cls(
            credential=data["credential"],
            sandbox=re.compile(data["sandbox"]) if "sandbox" in data else None,
            live=re.compile(data["live"]),
            source=data["source"],
            live_test_card=ResultCode(card["code"], card["description"]) if card else None,
        )


_DEFAULT_TOKEN = {"prefix": "tok_", "length": 24, "alphabet": "alnum"}
_DEFAULT_AUTH_CODE = {"length": 6, "alphabet": "upper"}


@dataclass(frozen=True)
class GatewaySpec:
    name: str
    display_name: str
    url: str
    description: str
    credentials: tuple[str, ...]
    optional_credentials: tuple[str, ...]
    supports_network_token: bool
    tokenizes: bool
    authorization_days: int
    unsupported: frozenset[str]
    requires_certificate: bool
    requires_client_ip: bool
    requires_order_desc: bool
    min_my_ref: int
    always: str | None
    reference: ReferenceFormat
    token: ReferenceFormat
    authorization_code: ReferenceFormat
    codes: dict[str, ResultCode]
    response: dict[str, Any] = field(default_factory=dict)
    # template changes per result code and per operation (null removes a key)
    response_by_result: dict[str, Any] = field(default_factory=dict)
    response_by_operation: dict[str, Any] = field(default_factory=dict)
    card_checks: dict[str, Any] = field(default_factory=dict)  # defaults merged with the gateway's
    avs_results: dict[str, str] = field(default_factory=dict)  # by post code; "default"
    cvv_results: dict[str, str] = field(default_factory=dict)  # by card code; "default"
    sources: tuple[str, ...] = ()
    invented_credentials: bool = False
    modes: CredentialModes | None = None

    @property
    def checks_cards(self) -> bool:
        """Whether the gateway checks cards as real gateways do (not the mock gateways)."""
        return bool(self.card_checks.get("enabled", True))

    @property
    def accepted_credentials(self) -> tuple[str, ...]:
        return self.credentials + self.optional_credentials

    def code_for(self, key: str) -> ResultCode:
        """The native code for a result or reject reason; unknown reasons fall back to
        the gateway's generic decline."""
        return self.codes.get(key) or self.codes[Result.REJECTED]

    def to_description(self) -> dict[str, Any]:
        """The entry of ``GET /PaymentGateway``."""
        return {
            "name": self.name,
            "displayName": self.display_name,
            "paymentGatewayUrl": self.url,
            "description": self.description,
            "credentialsNames": list(self.accepted_credentials),
            "supportsNetworkToken": self.supports_network_token,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any], card_checks: dict[str, Any] | None = None) -> GatewaySpec:
        requires = data.get("requires", {})
        return cls(
            name=data["name"],
            display_name=data["displayName"],
            url=data["paymentGatewayUrl"],
            description=data["description"],
            credentials=tuple(data["credentialsNames"]),
            optional_credentials=tuple(data.get("optionalCredentials", ())),
            supports_network_token=data["supportsNetworkToken"],
            tokenizes=data["tokenizes"],
            authorization_days=data["authorizationDays"],
            unsupported=frozenset(data.get("unsupportedOperations", ())),
            requires_certificate=requires.get("certificate", False),
            requires_client_ip=requires.get("clientIPAddress", False),
            requires_order_desc=requires.get("orderDesc", False),
            min_my_ref=requires.get("myRefMinLength", 0),
            always=data.get("always"),
            reference=ReferenceFormat.from_data(data["reference"]),
            token=ReferenceFormat.from_data(data.get("token", _DEFAULT_TOKEN)),
            authorization_code=ReferenceFormat.from_data(data.get("authorizationCode", _DEFAULT_AUTH_CODE)),
            codes={key: ResultCode(v["code"], v["description"]) for key, v in data["codes"].items()},
            response=data.get("response", {}),
            response_by_result=data.get("responseByResult", {}),
            response_by_operation=data.get("responseByOperation", {}),
            card_checks={**(card_checks or {}), **data.get("cardChecks", {})},
            avs_results=dict(data.get("avsResults", {})),
            cvv_results=dict(data.get("cvvResults", {})),
            sources=tuple(data.get("sources", ())),
            invented_credentials=bool(data.get("inventedCredentials", False)),
            modes=CredentialModes.from_data(data["credentialModes"]) if "credentialModes" in data else None,
        )


class Catalog:
    """The loaded gateways, looked up by name case-insensitively."""

    def __init__(self, gateways: list[GatewaySpec]) -> None:
        self._by_lower = {g.name.lower(): g for g in gateways}
        self._ordered = list(gateways)

    def get(self, name: str | None) -> GatewaySpec | None:
        return self._by_lower.get(name.lower()) if name else None

    def names(self) -> list[str]:
        return [g.name for g in self._ordered]

    def __iter__(self) -> Iterator[GatewaySpec]:
        return iter(self._ordered)

    def __len__(self) -> int:
        return len(self._ordered)


def _gateway_label(data: Any, parts: list[Any]) -> str:
    """The gateway's name for a problem inside ``gateways[i]``."""
    if len(parts) >= 2 and parts[0] == "gateways" and isinstance(parts[1], int):
        gateways = data.get("gateways") if isinstance(data, dict) else None
        if isinstance(gateways, list) and parts[1] < len(gateways) and isinstance(gateways[parts[1]], dict):
            return str(gateways[parts[1]].get("name", parts[1]))
    return ""


def load_catalog(path: str | Path | None = None) -> Catalog:
    path = Path(path) if path else CATALOG_PATH
    data = load_checked(path, _SCHEMA, "gateway catalog", "catalog", CatalogError, _gateway_label)
    defaults = data.get("cardChecks", {})
    gateways = [GatewaySpec.from_data(item, defaults) for item in data["gateways"]]
    seen: set[str] = set()
    for gateway in gateways:
        if gateway.name.lower() in seen:
            raise CatalogError(f"{path}: gateway {gateway.name} is listed twice")
        seen.add(gateway.name.lower())
        overlap = set(gateway.credentials) & set(gateway.optional_credentials)
        if overlap:
            raise CatalogError(f"{path}: {gateway.name}: {sorted(overlap)} both required and optional")
    return Catalog(gateways)
