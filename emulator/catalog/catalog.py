"""The gateway catalog: every simulated gateway is one data file, ``gateways/<Name>.yaml``.

Adding a gateway is a data edit. The shared file (``catalog.yaml``: the card checks and
payemu's generic vocabulary) and each gateway's file are checked against their JSON
Schemas (:mod:`emulator.catalog.schema`) when loaded: payemu refuses to start on a bad
file, naming file, line and reason. The files become frozen :class:`GatewaySpec` records
that the resources API lists and the payment engine reads.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import field
from decimal import Decimal
from pathlib import Path
from typing import Any

from emulator.catalog.schema import ALPHABETS, LEVELS
from emulator.domain.datafiles import data_path
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import ResultCode as Result

CATALOG_PATH = data_path("catalog.yaml")
GUESS = "guess"  # the provenance kind of payemu's own choice (else "source")
SANDBOX, CREDENTIALS, LISTED = LEVELS
# what each level means, as the catalog answer's description and the docs say it
LEVEL_NOTES = {
    SANDBOX: "its documented test inputs are modelled, each with its source",
    CREDENTIALS: "its credential names come from the public record; outcomes are payemu's generic sandbox",
    LISTED: "only its name is public: any credential names are accepted; outcomes are payemu's generic sandbox",
}
log = logging.getLogger("payemu")


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
class GatewayResultCode:
    """A gateway's own result code and its description."""

    code: str
    description: str


@dataclass(frozen=True)
class CredentialModes:
    """How a gateway tells sandbox credentials from live ones by their shape."""

    credential: str
    sandbox: re.Pattern[str] | None
    live: re.Pattern[str]
    source: str
    live_test_card: GatewayResultCode | None
    # a test credential paying a card outside the test numbers: declined with this code
    test_mode_live_card: GatewayResultCode | None = None
    test_cards: frozenset[str] = frozenset()  # the widely published test numbers (catalog.yaml)

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
    def from_data(cls, data: dict[str, Any], published: Iterable[str] = ()) -> CredentialModes:
        card = data.get("liveTestCard")
        live = data.get("testModeLiveCard")
        return cls(
            credential=data["credential"],
            sandbox=re.compile(data["sandbox"]) if "sandbox" in data else None,
            live=re.compile(data["live"]),
            source=data["source"],
            live_test_card=GatewayResultCode(card["code"], card["description"]) if card else None,
            test_mode_live_card=GatewayResultCode(live["code"], live["description"]) if live else None,
            test_cards=frozenset(published) if live else frozenset(),
        )


_DEFAULT_TOKEN = {"prefix": "tok_", "length": 24, "alphabet": "alnum"}
_DEFAULT_AUTH_CODE = {"length": 6, "alphabet": "upper"}
# payemu's tolerance above the authorization where a gateway documents none: card schemes
# allow tips and fuel estimates (a labelled choice, Fidelity: capture-limit)
DEFAULT_CAPTURE_LIMIT = Decimal("1.15")


@dataclass(frozen=True)
class RefundLimit:
    """Refunds refused ``days`` after the charge while the credential ``unless`` is false."""

    days: int
    unless: str


@dataclass(frozen=True)
class GatewaySpec:
    """One gateway, as its catalog file describes it (:func:`load_gateway`)."""

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
    codes: dict[str, GatewayResultCode]
    response: dict[str, Any] = field(default_factory=dict)
    # template changes per result code and per operation (null removes a key)
    response_by_result: dict[str, Any] = field(default_factory=dict)
    response_by_operation: dict[str, Any] = field(default_factory=dict)
    card_checks: dict[str, Any] = field(default_factory=dict)  # defaults merged with the gateway's
    avs_results: dict[str, str] = field(default_factory=dict)  # by post code; "default"
    cvv_results: dict[str, str] = field(default_factory=dict)  # by card code; "default"
    sources: tuple[str, ...] = ()
    modes: CredentialModes | None = None
    requires_cvv: bool = False
    tokenize_credential: str | None = None  # tokenizes only when this credential has a value
    capture_limit: Decimal = DEFAULT_CAPTURE_LIMIT
    refund_limit: RefundLimit | None = None
    # fact key → ("source", URL) or ("guess", why); facts the file leaves out are payemu's
    provenance: dict[str, tuple[str, str]] = field(default_factory=dict)
    otherwise: dict[str, Any] | None = None  # a sandbox attempt no rule decided (see schema)
    test_cards: tuple[str, ...] = ()  # the cards its test account takes (when it refuses others)
    level: str = SANDBOX  # how much payemu knows of it (schema.LEVELS)
    triggers: int = 0  # how many of its own test inputs its file models
    file: str = ""

    @property
    def listed(self) -> bool:
        """Whether only its name is public: any credential names are accepted."""
        return self.level == LISTED

    @property
    def held_level(self) -> str:
        """The level the file's contents earn: its own test inputs (or a mock's documented
        answer) make a sandbox; credential names from the record, credentials; else listed."""
        if self.always or self.triggers:
            return SANDBOX
        if self.credentials and not self.invented_credentials:
            return CREDENTIALS
        return LISTED

    @property
    def checks_cards(self) -> bool:
        """Whether the gateway checks cards as real gateways do (not the mock gateways)."""
        return bool(self.card_checks.get("enabled", True))

    @property
    def accepted_credentials(self) -> tuple[str, ...]:
        return self.credentials + self.optional_credentials

    @property
    def invented_credentials(self) -> bool:
        """Whether the credential names are payemu's guess (the public record lacks them)."""
        return bool(self.credentials) and self.provenance.get("credentialsNames", (GUESS, ""))[0] == GUESS

    def needs(self) -> list[str]:
        """What a request must carry for this gateway, in the docs' words."""
        needs = []
        if self.requires_certificate:
            needs.append("a client certificate (`certificateName`)")
        if self.requires_client_ip:
            needs.append("`payerDetails.clientIPAddress`")
        if self.requires_order_desc:
            needs.append("`orderDesc`")
        if self.min_my_ref:
            needs.append(f"`myRef` of {self.min_my_ref}+ characters")
        if self.requires_cvv:
            needs.append("`card.cvv`")
        if self.tokenize_credential:
            needs.append(f"the `{self.tokenize_credential}` credential to tokenize")
        return needs

    def origin(self, fact: str) -> tuple[str, str]:
        """``("source", URL)`` or ``("guess", why)`` for a fact key of the gateway file."""
        return self.provenance.get(fact, (GUESS, "payemu's generic default: the gateway's file does not state it"))

    def code_for(self, key: str) -> GatewayResultCode:
        """The native code for a result or reject reason; unknown reasons fall back to
        the gateway's generic decline."""
        return self.codes.get(key) or self.codes[Result.REJECTED]

    def to_description(self) -> dict[str, Any]:
        """The entry of ``GET /PaymentGateway``; its description ends with payemu's level."""
        return {
            "name": self.name,
            "displayName": self.display_name,
            "paymentGatewayUrl": self.url,
            "description": f"{self.description} payemu level {self.level}: {LEVEL_NOTES[self.level]}.",
            # the required ones (the gateway-accounts guide: "the credentialsNames required for
            # your PSP", its Adyen example); an account may also carry the optional ones
            "credentialsNames": list(self.credentials),
            "supportsNetworkToken": self.supports_network_token,
        }

    @classmethod
    def from_data(
        cls, data: dict[str, Any], card_checks: dict[str, Any] | None = None, defaults: dict[str, Any] | None = None
    ) -> GatewaySpec:
        requires = data.get("requires", {})
        fallback = defaults or {}
        codes = data.get("codes") or fallback["codes"]
        limit = data.get("refundLimit")
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
            reference=ReferenceFormat.from_data(data.get("reference") or fallback["reference"]),
            token=ReferenceFormat.from_data(data.get("token", _DEFAULT_TOKEN)),
            authorization_code=ReferenceFormat.from_data(data.get("authorizationCode", _DEFAULT_AUTH_CODE)),
            codes={key: GatewayResultCode(v["code"], v["description"]) for key, v in codes.items()},
            response=data.get("response", fallback.get("response", {})),
            response_by_result=data.get("responseByResult", {}),
            response_by_operation=data.get("responseByOperation", {}),
            card_checks={**(card_checks or {}), **data.get("cardChecks", {})},
            avs_results=dict(data.get("avsResults", {})),
            cvv_results=dict(data.get("cvvResults", {})),
            sources=tuple(data.get("sources", ())),
            modes=(
                CredentialModes.from_data(data["credentialModes"], fallback.get("publishedTestCards", ()))
                if "credentialModes" in data
                else None
            ),
            requires_cvv=requires.get("cvv", False),
            tokenize_credential=requires.get("tokenizeCredential"),
            capture_limit=Decimal(str(data.get("captureLimit", DEFAULT_CAPTURE_LIMIT))),
            refund_limit=RefundLimit(limit["days"], limit["unlessCredential"]) if limit else None,
            provenance={key: next(iter(value.items())) for key, value in data.get("provenance", {}).items()},
            otherwise=data.get("otherwise"),
            test_cards=tuple(data.get("testCards", ())),
            level=data["level"],
            triggers=len(data.get("triggers", ())),
        )


class Catalog:
    """The gateways, looked up by name case-insensitively; the gateway of each of ``files``
    (named after it) read by ``read`` when first asked for (:func:`~emulator.catalog.loader.on_demand`)."""

    def __init__(
        self, gateways: list[GatewaySpec], files: Sequence[Path] = (), read: Callable[[Path], GatewaySpec] | None = None
    ) -> None:
        self._by_lower = {g.name.lower(): g for g in gateways}
        stems = [file.stem for file in files]
        self._names = [g.name for g in gateways] + stems
        self._files = {stem.lower(): file for stem, file in zip(stems, files, strict=True)}  # the files not read yet
        self._read = read

    def get(self, name: str | None) -> GatewaySpec | None:
        if not name:
            return None
        lower = name.lower()
        found = self._by_lower.get(lower)
        if found is None and self._read is not None and lower in self._files:
            found = self._by_lower[lower] = self._read(self._files.pop(lower))
        return found

    def names(self) -> list[str]:
        return list(self._names)

    def __getitem__(self, name: str) -> GatewaySpec:
        self.get(name)
        return self._by_lower[name.lower()]

    def __iter__(self) -> Iterator[GatewaySpec]:
        return (self[name] for name in self._names)

    def __len__(self) -> int:
        return len(self._names)
