"""Each gateway's test triggers: the built-in rules naming a gateway (its documented test
inputs, from its catalog file) apart from payemu's own conventions (rules naming none), for
``payemu scenarios list --gateway NAME`` and the per-gateway sections of docs/test-cards.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from emulator.catalog.catalog import LEVEL_NOTES, Catalog, GatewaySpec
from emulator.domain.vocabulary import ResultCode
from emulator.scenarios.model import Rule

PAYEMU = "payemu"  # the `origin` of payemu's own conventions
_INPUTS = (  # the when keys that name a test input, as the tables show them
    ("cardNumber", "card"),
    ("holderName", "card.cardHolderName"),
    ("postCode", "payerDetails.postCode"),
    ("cvv", "card.cvv"),
    ("amount", "amount"),
)


def _any_is_builtin(rule: Rule) -> bool:
    return True


def applies(rule: Rule, gateway: GatewaySpec, builtin: Callable[[Rule], bool] = _any_is_builtin) -> bool:
    """Whether ``rule`` can fire on ``gateway``: a rule naming a gateway fires on that one
    only; a built-in rule naming none (payemu's conventions) on every gateway but the
    mocks; a user's rule naming none on every gateway. ``builtin``: whether a rule is one
    of payemu's (by default every rule is)."""
    named = rule.match.gateway
    if named is not None:
        return named == gateway.name.casefold()
    return gateway.always is None or rule.match.account is not None or not builtin(rule)


def for_gateway(
    rules: Iterable[Rule], gateway: GatewaySpec, builtin: Callable[[Rule], bool] = _any_is_builtin
) -> list[Rule]:
    """The rules of ``rules`` that can fire on ``gateway``, in matching order."""
    return [rule for rule in rules if applies(rule, gateway, builtin)]


def own(rules: Iterable[Rule], gateway: GatewaySpec) -> list[Rule]:
    """The rules that name ``gateway`` (its own documented triggers)."""
    return [rule for rule in rules if rule.match.gateway == gateway.name.casefold()]


def _trigger(rule: Rule) -> str:
    when = rule.data.get("when", {})
    parts = []
    for key, label in _INPUTS:
        if key in when:
            if isinstance(when[key], dict):  # a range: {min, max}, either end open
                parts.append(f"{label} {_range(when[key])}")
                continue
            values = when[key] if isinstance(when[key], list) else [when[key]]
            parts.append(f"{label} " + "<br>".join(f"`{value}`" for value in values))
    return "; ".join(parts) or f"`{rule.when_text()}`"


def _range(bounds: dict[str, float]) -> str:
    low, high = bounds.get("min"), bounds.get("max")
    if low is not None and high is not None:
        return f"`{low:.2f}`–`{high:.2f}`"
    return f"≥ `{low:.2f}`" if low is not None else f"≤ `{high:.2f}`"


def native(rule: Rule, gateway: GatewaySpec) -> str:
    """The gateway's own code and text for the rule's (last) outcome."""
    outcome = rule.outcomes[-1]
    result = outcome.operation_result_code
    key = (outcome.reject_reason_code if result == ResultCode.REJECTED else None) or result
    spoken = gateway.code_for(key)
    code = outcome.gateway_result_code or spoken.code
    text = outcome.gateway_result_description or spoken.description
    fields = "".join(f"; {path} `{value}`" for path, value in outcome.gateway_fields)
    return f"`{code}` {text}{fields}"


def native_success(gateway: GatewaySpec) -> str:
    spoken = gateway.code_for(ResultCode.SUCCESS)
    return f"`{spoken.code}` {spoken.description}"


def _source(rule: Rule) -> str:
    source = str(rule.data.get("origin") or PAYEMU)
    return f"[{source.split('://', 1)[-1].rstrip('/')}]({source})" if "://" in source else source


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def gateway_table(rules: Iterable[Rule], gateway: GatewaySpec) -> str:
    """One gateway's own triggers: trigger → outcome → native code → source."""
    header = ["trigger", "operations", "outcome", "native code", "source", "rule"]
    lines = [_line(header), _line(["---"] * len(header))]
    for rule in own(rules, gateway):
        when = rule.data.get("when", {})
        operations = when.get("operation")
        ops = "any" if operations is None else ", ".join(operations if isinstance(operations, list) else [operations])
        outcome = rule.outcomes[-1]
        shown = outcome.operation_result_code + (
            f" ({outcome.reject_reason_code})" if outcome.reject_reason_code else ""
        )
        if outcome.approved_amount is not None:
            shown += f", approves {outcome.approved_amount:.2f} at most"
        if outcome.delay_from_cents:
            shown += ", after the amount's cents in seconds"
        row = [_trigger(rule), ops, shown, native(rule, gateway), _source(rule), f"`{rule.name}`"]
        lines.append(_line(row))
    named = {number for rule in own(rules, gateway) for number in rule.match.card_numbers or ()}
    approving = [number for number in gateway.test_cards if number not in named]
    if approving:  # the test cards that approve (those a trigger names are in its row)
        cards = "card " + "<br>".join(f"`{number}`" for number in approving)
        row = [cards, "Charge, PreAuth", "Success", native_success(gateway), _cited(gateway, "testCards"), "—"]
        lines.append(_line(row))
    for field, results in (("avsResultCode", gateway.avs_results), ("cvvResultCode", gateway.cvv_results)):
        given = "payerDetails.postCode" if field == "avsResultCode" else "card.cvv"
        for value, result in results.items():
            if value != "default":
                source = _source_link(gateway)
                lines.append(
                    _line([f"{given} `{value}`", "Charge, PreAuth", "Success", f"{field} `{result}`", source, "—"])
                )
    return "\n".join(lines)


def _source_link(gateway: GatewaySpec) -> str:
    first = gateway.sources[0] if gateway.sources else PAYEMU
    return _link(first)


def _link(url: str) -> str:
    return f"[{url.split('://', 1)[-1].rstrip('/')}]({url})" if "://" in url else url


def _cited(gateway: GatewaySpec, fact: str) -> str:
    """Where a fact of the gateway's file comes from: its page, or payemu's guess and why."""
    kind, text = gateway.origin(fact)
    return _link(text) if kind == "source" else f"*{text}*"


def _facts(gateway: GatewaySpec) -> list[tuple[str, str]]:
    """The rows of a gateway's requirements table: (what, value and where it comes from)."""
    names = ", ".join(f"`{n}`" for n in gateway.credentials) or ("any names" if gateway.listed else "none")
    if gateway.listed and gateway.credentials:
        names += " (any other names are taken too; none is required)"
    rows = [
        ("level", f"{gateway.level}: {LEVEL_NOTES[gateway.level]}"),
        ("credentials", f"{names} — {_cited(gateway, 'credentialsNames')}"),
    ]
    if gateway.optional_credentials:
        optional = ", ".join(f"`{n}`" for n in gateway.optional_credentials)
        rows.append(("optional credentials", f"{optional} — {_cited(gateway, 'optionalCredentials')}"))
    needs = gateway.needs()
    if needs:
        rows.append(("requires", f"{', '.join(needs)} — {_cited(gateway, 'requires')}"))
    if gateway.unsupported:
        missing = ", ".join(sorted(gateway.unsupported))
        rows.append(("not supported", f"{missing} — {_cited(gateway, 'unsupportedOperations')}"))
    rows.append(("tokenizes", f"{'yes' if gateway.tokenizes else 'no'} — {_cited(gateway, 'tokenizes')}"))
    tokens = "yes" if gateway.supports_network_token else "no"
    rows.append(("network tokens", f"{tokens} — {_cited(gateway, 'supportsNetworkToken')}"))
    limit = gateway.capture_limit
    capture = "never above the authorization" if limit == 1 else f"up to {float(limit) * 100:g} % of the authorization"
    chosen = "*payemu's choice: the gateway documents no limit (Fidelity: capture-ceiling)*"
    cited = _cited(gateway, "captureLimit") if "captureLimit" in gateway.provenance else chosen
    rows.append(("capture", f"{capture} — {cited}"))
    if gateway.refund_limit is not None:
        window = gateway.refund_limit
        text = f"none after {window.days} days unless `{window.unless}` is `true`"
        rows.append(("refunds", f"{text} — {_cited(gateway, 'refundLimit')}"))
    if gateway.otherwise is not None:
        rest = gateway.otherwise
        ops = ", ".join(rest["operations"])
        text = f"{ops} that no trigger names: `{rest['gatewayResultCode']}` {rest['gatewayResultDescription']}"
        rows.append(("sandbox keys", f"{text} — {_cited(gateway, 'otherwise')}"))
    rows += _card_modes(gateway)
    rows.append(("result codes", _cited(gateway, "codes")))
    return rows


def _card_modes(gateway: GatewaySpec) -> list[tuple[str, str]]:
    """The rows of a gateway that declines a card of the other mode than its credential."""
    modes = gateway.modes
    if modes is None:
        return []
    rows = []
    cited = _cited(gateway, "codes")  # the page that lists the decline codes
    if modes.live_test_card is not None:
        declined = f"`{modes.live_test_card.code}` {modes.live_test_card.description}"
        rows.append(("live key, test card", f"Rejected (CardDeclined) {declined} — {cited}"))
    if modes.test_mode_live_card is not None:
        declined = f"`{modes.test_mode_live_card.code}` {modes.test_mode_live_card.description}"
        text = f"any card but its own, payemu's and the published test numbers: Rejected (CardDeclined) {declined}"
        rows.append(("test key, real card", f"{text} — {cited} (Fidelity: test-mode-real-cards)"))
    return rows


_NOT_MOCKS = "payemu's test cards and amounts do not apply."
_GENERIC = (
    "No public sandbox of its own is modelled: payemu's generic sandbox applies "
    "(card checks, payemu's test cards and amounts below)."
)


def section(rules: list[Rule], gateway: GatewaySpec) -> str:
    """One gateway's part of docs/test-cards.md: its requirements and its own triggers."""
    lines = [f"### {gateway.display_name} (`{gateway.name}`)", "", "| | |", "|---|---|"]
    lines += [_line([what, value]) for what, value in _facts(gateway)]
    if gateway.always is not None:
        outcome = "approves" if gateway.always == ResultCode.SUCCESS else "declines"
        lines += ["", f"A mock gateway: it {outcome} every operation, whatever the card or amount; {_NOT_MOCKS}"]
    elif own(rules, gateway) or gateway.avs_results or gateway.cvv_results:
        lines += ["", f"Its own test inputs (they fire on {gateway.name} only):", "", gateway_table(rules, gateway)]
    else:
        lines += ["", _GENERIC]
    return "\n".join(lines)


def markdown(rules: list[Rule], catalog: Catalog, payemu_table: str) -> str:
    """The docs' test-card section: one part per gateway (requirements and its own
    triggers, each with its source), then payemu's own test cards and amounts."""
    parts = [section(rules, gateway) for gateway in catalog]
    parts.append(
        "### payemu's own test cards and amounts (every gateway but the mocks)\n\n"
        "No real sandbox knows these: they are payemu's convention, so one suite can reach every "
        "outcome through any gateway. Each gateway answers them in its own codes.\n\n" + payemu_table.rstrip("\n")
    )
    return "\n\n".join(parts) + "\n"
