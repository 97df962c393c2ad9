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
from emulator.catalog.templates import Template, compile_template
from emulator.domain import cards
from emulator.domain.clock import isoformat
from emulator.domain.model import Card, Money, OperationResult
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import (
    CAPTURE,
    CHARGE,
    PRE_AUTH,
    REJECTED,
    STATUS,
    SUCCESS,
    SUCCESSFUL,
    TOKENIZE,
    Operation,
    ResultCode,
)

if TYPE_CHECKING:
    from emulator.scenarios import RuleOutcome
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


def tokenizes(spec: GatewaySpec, item: AttemptInput) -> bool:
    """Whether the gateway tokenizes; a mock gateway does under the older mock-PSP reading."""
    return spec.tokenizes or (spec.always is not None and item.mocks_tokenize)


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


_AT_HAND = frozenset({"reference", "authorizationCode", "token"})  # speak() has them without _Facts
_DESCRIBED = frozenset({*_VALUES, "gatewayResultCode"})
_RESPONDED = _DESCRIBED | {"gatewayResultDescription"}


def answer(
    tenant: Tenant,
    account: GatewayAccount,
    item: AttemptInput,
    code: ResultCode,
    key: str,
    reason: str | None,
    text: str,
    outcome: RuleOutcome | None,
) -> OperationResult:
    """The gateway's answer to an attempt it decided ``code`` for: a new reference, an
    authorization code when it approved, a token when it tokenizes on this operation,
    spoken as :func:`speak` does (with the code, description and fields of the scenario's
    ``outcome``, if one decided)."""
    spec = account.gateway
    operation = item.operation
    gateway_code = gateway_description = None
    if outcome is not None:
        gateway_code, gateway_description = outcome.gateway_result_code, outcome.gateway_result_description
    # _plan_for's look in the kept plans, made here
    found = _PLANS.get((id(spec), code, operation, reason, key, gateway_code, gateway_description))
    if found is not None and found[0] is spec:
        plan = found[1]
    else:
        plan = _plan(spec, code, operation, reason, key, gateway_code, gateway_description)
    draw = tenant.random_id
    form = spec.reference
    reference = plan.reference_prefix + draw(form.length, form.alphabet)
    holds = tenant.ledger.holds
    while holds(reference):  # unique within the tenant
        reference = plan.reference_prefix + draw(form.length, form.alphabet)
    approval = token = None
    if code in SUCCESSFUL:
        form = spec.authorization_code
        approval = plan.approval_prefix + draw(form.length, form.alphabet)  # drawn while Accepted too
        if code != SUCCESS:
            approval = None  # nothing is authorized yet while Accepted
        elif tokenizes(spec, item) and (
            operation == TOKENIZE or (item.generate_token and operation in (CHARGE, PRE_AUTH))
        ):
            token = mint(tenant, spec.token, TOKENIZE, secret=True)
    fields = outcome.gateway_fields if outcome is not None else ()
    return _spoken(plan, tenant, account, item, code, reason, text, reference, approval, token, fields)


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
) -> OperationResult:
    """The OperationResult of ``code`` in the gateway's vocabulary under ``reference``: the
    native code and description for ``key`` (a result or reject reason) and the rendered
    ``customGatewayResponse``."""
    plan = _plan_for(account.gateway, code, item.operation, reason, key, None, None)
    return _spoken(plan, tenant, account, item, code, reason, text, reference, approval, None, ())


def _spoken(
    plan: _WordingPlan,
    tenant: Tenant,
    account: GatewayAccount,
    item: AttemptInput,
    code: ResultCode,
    reason: str | None,
    text: str,
    reference: str,
    approval: str | None,
    token: str | None,
    gateway_fields: tuple[tuple[str, Any], ...],
) -> OperationResult:
    """The OperationResult ``plan`` words, with the fields a scenario sets in its response."""
    operation = item.operation
    # the values at hand (_AT_HAND), then those the templates read that take some working out
    values: dict[str, Any] = {"reference": reference, "authorizationCode": approval, "token": token}
    if plan.values:
        facts = _Facts(tenant, account, item, code, reference, approval, token)
        for name, value in plan.values:
            values[name] = value(facts)
    description = plan.description
    if plan.described is not None:
        description = values["gatewayResultDescription"] = plan.described.fill(values)
    response = plan.response.fill(values) if plan.response else None
    if gateway_fields and isinstance(response, dict):
        _set_fields(response, gateway_fields)
    return OperationResult(  # positional: in the field order
        operation,
        code,
        item.money,
        text,
        approval if operation in AUTHORIZING else None,
        response,
        account.gateway.name,
        reference,
        plan.code,
        description,
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

    __slots__ = ("approval_prefix", "code", "described", "description", "reference_prefix", "response", "values")

    def __init__(
        self,
        spec: GatewaySpec,
        operation: Operation,
        code: Any,
        description: Any,
        described: Template | None,
        response: Template | None,
        values: tuple[tuple[str, Any], ...],
    ) -> None:
        self.reference_prefix = spec.reference.prefix_for(operation)  # of the reference minted for it
        self.approval_prefix = spec.authorization_code.prefix_for(operation)  # of its authorization code
        self.code = code  # gatewayResultCode
        self.description = description  # gatewayResultDescription, when the same in every answer
        self.described = described  # else its template
        self.response = response  # customGatewayResponse, when the gateway has one
        self.values = values  # (name, how to compute it) of each other value the two read


# (id(spec), code, operation, reason, key, scenario's code, scenario's description) → (spec, plan)
_PLANS: dict[tuple[Any, ...], tuple[GatewaySpec, _WordingPlan]] = {}
_MAX_PLANS = 4096  # then the plans start over


def _plan_for(
    spec: GatewaySpec,
    code: ResultCode,
    operation: Operation,
    reason: str | None,
    key: str,
    gateway_code: str | None,
    gateway_description: str | None,
) -> _WordingPlan:
    """The plan of this case (see :func:`_plan`), made on its first answer."""
    found = _PLANS.get((id(spec), code, operation, reason, key, gateway_code, gateway_description))
    if found is not None and found[0] is spec:
        return found[1]
    return _plan(spec, code, operation, reason, key, gateway_code, gateway_description)


def _plan(
    spec: GatewaySpec,
    code: ResultCode,
    operation: Operation,
    reason: str | None,
    key: str,
    gateway_code: str | None,
    gateway_description: str | None,
) -> _WordingPlan:
    """The native code and description, the answer template with every value that is the
    same in each answer of this case already in it, and the values left to compute, for
    ``key`` of ``code`` at ``spec`` (or the code and description a scenario gives): made
    once per gateway and case, and kept (by the spec's identity, with the spec)."""
    native = spec.code_for(key)
    result_code = gateway_code if gateway_code is not None else native.code
    constants: dict[str, Any] = {
        "operation": operation._value_,
        "approved": code == SUCCESS,
        "gatewayResultCode": result_code,
    }
    wording = gateway_description if gateway_description is not None else native.description
    described: Template | None = compile_template(wording, _DESCRIBED, constants)
    description = None
    if described is not None and not described.names:
        description = constants["gatewayResultDescription"] = described.fill(constants)
        described = None
    response = None
    if spec.response:
        response = compile_template(payloads.template(spec, code, operation, reason, key), _RESPONDED, constants)
    names = (described.names if described else frozenset()) | (response.names if response else frozenset())
    values = tuple((name, _VALUES[name]) for name in sorted(names) if name in _VALUES and name not in _AT_HAND)
    plan = _WordingPlan(spec, operation, result_code, description, described, response, values)
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    _PLANS[(id(spec), code, operation, reason, key, gateway_code, gateway_description)] = (spec, plan)
    return plan
