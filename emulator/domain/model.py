"""The typed payment domain: what a payment request asks, what one attempt answers.

JSON stays at the edge: handlers parse a validated body once into a :class:`PaymentRequest`,
and results render themselves back (``to_json``). Amounts are exact decimals; the one
rounding rule (:data:`ROUNDING`) applies wherever an amount must fit its currency."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Any, TypeAlias

from emulator.domain.clock import isoformat
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import Operation, RejectReason, ResultCode

# JSON as the edge writes it.
JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"

ROUNDING = ROUND_HALF_EVEN
# wide enough for any float amount (1.8e308 has 309 digits): rounding never overflows
_WIDE = Context(prec=400, rounding=ROUNDING, Emax=999_999, Emin=-999_999)
NO_CURRENCY = "USD"  # tokenize and an unknown status carry no amount; the schema needs a code
# Currencies whose minor unit is not a hundredth (ISO 4217 exponents).
EXPONENTS: dict[str, int] = {
    **dict.fromkeys(
        (
            "BIF",
            "CLP",
            "DJF",
            "GNF",
            "ISK",
            "JPY",
            "KMF",
            "KRW",
            "PYG",
            "RWF",
            "UGX",
            "UYI",
            "VND",
            "VUV",
            "XAF",
            "XOF",
            "XPF",
        ),
        0,
    ),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    "CLF": 4,
}
ZERO = Decimal(0)


_FLOATS: dict[float, Decimal] = {}  # amounts repeat: each float's Decimal is made once
MAX_FLOATS = 4096
_AS_FLOATS: dict[Decimal, float] = {}  # and each amount's float, as JSON writes it, once (as many kept)


def decimal_of(value: float | int | str | Decimal) -> Decimal:
    """An amount as the client wrote it: a JSON number's shortest text, exactly."""
    if type(value) is float:
        found = _FLOATS.get(value)
        if found is None:
            found = Decimal(str(value))
            # 0.0 and -0.0 are one key but two texts: neither is kept
            if value and len(_FLOATS) < MAX_FLOATS:
                _FLOATS[value] = found
        return found
    if isinstance(value, Decimal):
        return value
    return Decimal(str(value))


@dataclass(slots=True, unsafe_hash=True, order=True)
class Money:
    """An amount in a currency."""

    amount: Decimal
    currency: str

    @classmethod
    def of(cls, amount: float | int | str | Decimal, currency: str) -> Money:
        return cls(decimal_of(amount), currency)

    @classmethod
    def none(cls) -> Money:
        return cls(ZERO, NO_CURRENCY)

    @property
    def exponent(self) -> int:
        """Digits of the minor unit: 2 for USD, 0 for JPY, 3 for KWD."""
        return EXPONENTS.get(self.currency.upper(), 2)

    def rounded(self) -> Money:
        return Money(self.amount.quantize(Decimal(1).scaleb(-self.exponent), context=_WIDE), self.currency)

    def minor_units(self) -> int:
        """``10.23`` USD → ``1023``."""
        return int(self.amount.scaleb(self.exponent, context=_WIDE).to_integral_value(context=_WIDE))

    def to_json(self) -> float:
        amount = self.amount
        found = _AS_FLOATS.get(amount)
        if found is None:
            found = float(amount)
            # 0 and -0 are one key but two floats: neither is kept
            if amount and len(_AS_FLOATS) < MAX_FLOATS:
                _AS_FLOATS[amount] = found
        return found

    def __add__(self, other: Money) -> Money:
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other: Money) -> Money:
        return Money(self.amount - other.amount, self.currency)

    def times(self, factor: Decimal) -> Money:
        return Money(self.amount * factor, self.currency)


def text(amount: Decimal) -> str:
    """An amount in a sentence, written as the float JSON carries (``10.0``)."""
    return str(float(amount))


@dataclass(slots=True, unsafe_hash=True)
class Card:
    """A card as a request gives it (digits or an ``@token`` reference); ``repr`` hides number and CVV."""

    number: str | None = field(default=None, repr=False)
    holder: str | None = None
    expiration_month: int | None = None
    expiration_year: int | None = None
    cvv: str | None = field(default=None, repr=False)
    brand: str | None = None  # card.cardType when the caller gave it
    owner_id: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Card:
        get = data.get
        return cls(  # positional: in the field order
            get("cardNumber"),
            get("cardHolderName"),
            get("expirationMonth"),
            get("expirationYear"),
            get("cvv"),
            get("cardType"),
            get("ownerID"),
        )

    def with_number(self, number: str | None) -> Card:
        if number == self.number:
            return self
        holder, month, year, cvv = self.holder, self.expiration_month, self.expiration_year, self.cvv
        return Card(number, holder, month, year, cvv, self.brand, self.owner_id)


@dataclass(slots=True, unsafe_hash=True)
class AccountRef:
    """A stored gateway account a request names (and the client certificate it names)."""

    name: str
    certificate: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class InlineAccount:
    """A gateway account a request gives whole: the gateway and its credentials."""

    gateway: str | None
    credentials: tuple[Mapping[str, Any], ...]


@dataclass(slots=True, unsafe_hash=True)
class PaymentRequest:
    """One payment operation as asked, parsed once; the engine checks the currency."""

    operation: Operation
    account_name: str | None = None
    inline_account: InlineAccount | None = None
    certificate: str | None = None
    fallbacks: tuple[AccountRef, ...] = ()
    amount: Decimal | None = None
    currency: str | None = None
    card: Card | None = None
    user_token: str | None = None
    my_ref: str | None = None
    order_desc: str | None = None
    client_ip: str | None = None
    network_token_brand: str | None = None
    generate_token: bool = False
    ref_trans_id: str | None = None
    post_code: str | None = None  # payerDetails.postCode

    @classmethod
    def from_body(cls, operation: Operation, body: Mapping[str, Any]) -> PaymentRequest:
        get = body.get
        inline = get("paymentGatewayAccount")
        amount = get("amount")
        card = get("card")
        payer = get("payerDetails")
        fallbacks = get("fallbackUpgs")
        return cls(  # positional: in the field order
            operation,
            get("paymentGatewayAccountName"),
            InlineAccount(inline.get("paymentGatewayName"), tuple(inline.get("credentials") or ()))
            if inline is not None
            else None,
            get("certificateName"),
            tuple(
                AccountRef(entry["paymentGatewayAccountName"], entry.get("paymentGatewayCertName"))
                for entry in fallbacks
            )
            if fallbacks
            else (),
            decimal_of(amount) if amount is not None else None,
            get("currency"),
            Card(  # Card.from_json, one call less: positional, in the field order
                card.get("cardNumber"),
                card.get("cardHolderName"),
                card.get("expirationMonth"),
                card.get("expirationYear"),
                card.get("cvv"),
                card.get("cardType"),
                card.get("ownerID"),
            )
            if card
            else None,
            get("userToken"),
            get("myRef"),
            get("orderDesc"),
            payer.get("clientIPAddress") if payer else None,
            get("networkTokenBrand"),
            bool(get("generateToken")),
            get("refTransId"),
            payer.get("postCode") if payer else None,
        )


@dataclass(slots=True, unsafe_hash=True)
class OperationResult:
    """What a payment operation answers: its result and what the gateway said."""

    operation: Operation
    code: ResultCode
    money: Money
    description: str | None
    authorization_code: str | None = None
    custom_gateway_response: Any = None  # the gateway's payload (any JSON value)
    gateway_name: str | None = None
    gateway_reference: str | None = None
    gateway_result_code: Any = None
    gateway_result_description: Any = None
    gateway_result_sub_code: str | None = None
    gateway_result_sub_description: str | None = None
    gateway_token: str | None = None
    reject_reason: RejectReason | str | None = None

    @property
    def successful(self) -> bool:
        return self.code in (ResultCode.SUCCESS, ResultCode.ACCEPTED)

    def to_json(self) -> JsonObject:
        """The OperationResult with all 15 keys (the schema requires them)."""
        return {
            "authorizationCode": self.authorization_code,
            "currency": self.money.currency,
            "amount": self.money.to_json(),
            "operationType": str(self.operation),  # StrEnum: its value, without Enum's property
            "operationResultCode": str(self.code),
            "operationResultDescription": self.description,
            "customGatewayResponse": self.custom_gateway_response,
            "gatewayName": self.gateway_name,
            "gatewayReference": self.gateway_reference,
            "gatewayResultCode": self.gateway_result_code,
            "gatewayResultDescription": self.gateway_result_description,
            "gatewayResultSubCode": self.gateway_result_sub_code,
            "gatewayResultSubDescription": self.gateway_result_sub_description,
            "gatewayToken": self.gateway_token,
            "rejectReasonCode": str(self.reject_reason) if self.reject_reason is not None else None,
        }


@dataclass(slots=True, unsafe_hash=True)
class AttemptRecord:
    """One attempt of a request at one account (the journal's ``attempts`` entry)."""

    number: int
    account: str | None
    gateway: str
    timestamp: datetime
    result: OperationResult
    rule: str | None = None  # the scenario rule that decided it (None: the gateway's default)
    rule_source: str | None = None  # where that rule was written (``file:line``, ``runtime``)

    @property
    def is_fallback(self) -> bool:
        return self.number > 1

    def to_json(self) -> JsonObject:
        return {
            "attemptNumber": self.number,
            "paymentGatewayAccountName": self.account,
            "gatewayName": self.gateway,
            "isFallback": self.is_fallback,
            "timestamp": isoformat(self.timestamp),
            "rule": self.rule,
            "ruleSource": self.rule_source,
            "result": self.result.to_json(),
        }


class DropConnection(Exception):
    """Close the connection without an answer (a simulated network fault)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
