"""What one attempt sends a simulated gateway, and how the gateway words its answer.

:func:`speak` turns a result code into an OperationResult in the gateway's vocabulary: its
reference format, native result code and description, authorization-code and token
formats, and the ``customGatewayResponse`` rendered from its template. How each case is
spoken is planned once per gateway and case (:class:`_WordingPlan`) and the template values are
computed only when a template names them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from emulator.catalog import payloads
from emulator.catalog.catalog import GatewaySpec, ReferenceFormat
from emulator.catalog.identity_memo import IdentityMemo
from emulator.catalog.templates import Template, compiled
from emulator.domain import cards
from emulator.domain.clock import isoformat
from emulator.domain.model import Card, Money, OperationResult
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import CAPTURE, CHARGE, PRE_AUTH, REJECTED, STATUS, SUCCESS, Operation, ResultCode

if TYPE_CHECKING:
    from emulator.tenants.tenants import Tenant

# Operations whose successful answer carries an authorization code.
AUTHORIZING = frozenset({CHARGE, PRE_AUTH, CAPTURE, STATUS})


@dataclass(slots=True, unsafe_hash=True)
class GatewayAccount:
    """The gateway and credentials one attempt uses. ``name`` is the stored account's name,
    None for inline credentials; ``certificate`` the client certificate named for it."""

    gateway: GatewaySpec
    name: str | None
    credentials: dict[str, str | None]
    certificate: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class AttemptInput:
    """What one attempt sends to the gateway (card data already resolved)."""

    operation: Operation
    money: Money
    card: Card | None = None  # resolved: digits, after @token / userToken resolution
    my_ref: str | None = None
    order_desc: str | None = None
    client_ip: str | None = None
    network_token_brand: str | None = None
    generate_token: bool = False
    token_problem: str | None = None  # why the gateway refuses the userToken, if it does
    number: int = 1  # 1 = primary, 2 = first fallback, ...
    post_code: str | None = None  # payerDetails.postCode
    mocks_tokenize: bool = False  # the tenant reads the older mock-PSP page: the mocks tokenize

    @property
    def card_number(self) -> str | None:
        return self.card.number if self.card else None


def mint(tenant: Tenant, fmt: ReferenceFormat, operation: str, *, secret: bool = False) -> str:
    """A reference or code in the gateway's format; ``secret`` for a token that stands for a card."""
    draw = tenant.random_string if secret else tenant.random_id
    return fmt.prefix_for(operation) + draw(fmt.length, fmt.alphabet)


def new_reference(tenant: Tenant, spec: GatewaySpec, operation: str) -> str:
    """A gateway reference in the gateway's format, unique within the tenant."""
    reference = mint(tenant, spec.reference, operation)
    holds = tenant.ledger.holds
    while holds(reference):
        reference = mint(tenant, spec.reference, operation)
    return reference


class _Facts:
    """What the template values of one answer are computed from (each only when used)."""

    __slots__ = ("account", "approval", "code", "item", "reference", "tenant", "token")

    def __init__(
        self,
        tenant: Tenant,
        account: GatewayAccount,
        item: AttemptInput,
        code: ResultCode,
        reference: str,
        approval: str | None,
        token: str | None,
    ) -> None:
        self.tenant, self.account, self.item, self.code = tenant, account, item, code
        self.reference, self.approval, self.token = reference, approval, token


def _brand(f: _Facts) -> str | None:
    return (f.item.card.brand if f.item.card else None) or cards.brand_of(f.item.card_number)


# the values a gateway template may name (see the catalog's documentation)
_VALUES: dict[str, Callable[[_Facts], object]] = {
    "reference": lambda f: f.reference,
    "amount": lambda f: f.item.money.to_json(),
    "amountMinor": lambda f: f.item.money.minor_units(),
    "currency": lambda f: f.item.money.currency,
    "currencyLower": lambda f: f.item.money.currency.lower(),
    "operation": lambda f: str(f.item.operation),
    "authorizationCode": lambda f: f.approval,
    "approved": lambda f: f.code == SUCCESS,
    "cardBin": lambda f: (f.item.card_number or "")[:6] or None,
    "cardLast4": lambda f: (f.item.card_number or "")[-4:] or None,
    "cardBrand": _brand,
    "created": lambda f: isoformat(f.tenant.now()),
    "createdEpoch": lambda f: int(f.tenant.now().timestamp()),
    "myRef": lambda f: f.item.my_ref,
    "token": lambda f: f.token,
    "account": lambda f: f.account.name,
    "avsResult": lambda f: _looked_up(f.account.gateway.avs_results, f.item.post_code),
    "cvvResult": lambda f: _looked_up(f.account.gateway.cvv_results, f.item.card.cvv if f.item.card else None),
}


def _looked_up(results: dict[str, str], given: str | None) -> str | None:
    """The gateway's result for ``given`` (a post code, a card code), else its default."""
    found = results.get((given or "").strip())
    return found if found is not None else results.get("default")


_AT_HAND = frozenset({"reference", "authorizationCode", "token", "operation"})  # speak() has them without _Facts
_DESCRIBED = frozenset({*_VALUES, "gatewayResultCode"})
_RESPONDED = _DESCRIBED | {"gatewayResultDescription"}


def speak(
    tenant: Tenant,
    account: GatewayAccount,
    item: AttemptInput,
    code: ResultCode,
    key: str,
    reason: str | None,
    text: str,
    *,
    reference: str,
    approval: str | None = None,
    token: str | None = None,
    gateway_code: str | None = None,
    gateway_description: str | None = None,
    gateway_fields: tuple[tuple[str, Any], ...] = (),
) -> OperationResult:
    """The OperationResult of ``code`` in the gateway's vocabulary: native code and
    description for ``key`` (a result or reject reason) unless a scenario gave its own,
    and the rendered ``customGatewayResponse`` with the fields a scenario sets in it."""
    spec = account.gateway
    operation = item.operation
    money = item.money
    plan = _plan(spec, code, operation, reason, key, gateway_code, gateway_description)
    # the values at hand (_AT_HAND), then those the templates read that take some working out
    values: dict[str, Any] = {
        "gatewayResultCode": plan.code,
        "reference": reference,
        "authorizationCode": approval,
        "token": token,
        "operation": operation._value_,
    }
    if plan.values:
        facts = _Facts(tenant, account, item, code, reference, approval, token)
        for name, value in plan.values:
            values[name] = value(facts)
    values["gatewayResultDescription"] = plan.described.fill(values)
    response = plan.response.fill(values) if plan.response else None
    if gateway_fields and isinstance(response, dict):
        _set_fields(response, gateway_fields)
    return OperationResult(  # positional: in the field order
        operation,
        code,
        money,
        text,
        approval if operation in AUTHORIZING else None,
        response,
        spec.name,
        reference,
        values["gatewayResultCode"],
        values["gatewayResultDescription"],
        None,  # gatewayResultSubCode
        None,  # gatewayResultSubDescription
        token,
        reason if code == REJECTED else None,
    )


def _set_fields(response: dict[str, Any], fields: tuple[tuple[str, Any], ...]) -> None:
    """Set each ``(dotted path, value)`` in a freshly filled answer (a missing or non-object
    step on the way becomes an object)."""
    for path, value in fields:
        *parents, last = path.split(".")
        node = response
        for name in parents:
            step = node.get(name)
            if not isinstance(step, dict):
                step = node[name] = {}
            node = step
        node[last] = value


class _WordingPlan:
    """How one case of a gateway is spoken (see :func:`_plan`)."""

    __slots__ = ("code", "described", "response", "values")

    def __init__(
        self, code: Any, described: Template, response: Template | None, values: tuple[tuple[str, Any], ...]
    ) -> None:
        self.code = code  # gatewayResultCode
        self.described = described  # gatewayResultDescription
        self.response = response  # customGatewayResponse, when the gateway has one
        self.values = values  # (name, how to compute it) of each other value the two read


_PLANS: IdentityMemo[_WordingPlan] = IdentityMemo()


def _plan(
    spec: GatewaySpec,
    code: ResultCode,
    operation: Operation,
    reason: str | None,
    key: str,
    gateway_code: str | None,
    gateway_description: str | None,
) -> _WordingPlan:
    """The native code, the compiled description and answer templates, and the values
    they read, for ``key`` of ``code`` at ``spec``: made once per gateway and case (a
    scenario's own code or description is planned afresh)."""
    if gateway_code is None and gateway_description is None:
        return _PLANS.get(
            (id(spec), code, operation, reason, key), spec, _made_plan, spec, code, operation, reason, key
        )
    return _made_plan(spec, code, operation, reason, key, gateway_code, gateway_description)


def _made_plan(
    spec: GatewaySpec,
    code: ResultCode,
    operation: Operation,
    reason: str | None,
    key: str,
    gateway_code: str | None = None,
    gateway_description: str | None = None,
) -> _WordingPlan:
    native = spec.code_for(key)
    described = compiled(gateway_description if gateway_description is not None else native.description, _DESCRIBED)
    response = compiled(payloads.template(spec, code, operation, reason, key), _RESPONDED) if spec.response else None
    names = (described.names | response.names) if response else described.names
    values = tuple((name, _VALUES[name]) for name in sorted(names) if name in _VALUES and name not in _AT_HAND)
    return _WordingPlan(gateway_code if gateway_code is not None else native.code, described, response, values)
