"""Each gateway's triggers (tests/cases/gateways/<Name>.yaml) do not fire on any other
gateway: the input is answered there as that gateway answers the base charge. A module of
its own beside tests/catalog/test_gateway_cases.py, so the two share the test workers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from emulator.contract.openapi import OpenApi
from emulator.domain.cards import luhn_valid
from tests.catalog.test_gateway_cases import (
    BOOK,
    CATALOG,
    COMPARED,
    DATA,
    OWN,
    SHARED_BACK,
    _input,
    one_app,
    run,
    same_sandbox,
)
from tests.support.quickclient import QuickClient


@pytest.fixture(scope="module")
def client(openapi: OpenApi) -> Iterator[QuickClient]:
    """One app for every comparison (each answer is asked once: :func:`_answer`)."""
    yield from one_app(openapi)


def _behaviour(name: str) -> str:
    """What decides how a gateway without test inputs of its own answers an input: its card
    checks, native codes, requirements, modes and the credentials its case file stores."""
    spec = CATALOG[name]
    return repr(
        (
            spec.codes,
            spec.card_checks,
            spec.avs_results,
            spec.cvv_results,
            (spec.requires_certificate, spec.requires_client_ip, spec.requires_order_desc, spec.requires_cvv),
            (spec.min_my_ref, spec.always, sorted(spec.unsupported), spec.modes, spec.otherwise, spec.test_cards),
            (spec.credentials, spec.optional_credentials, spec.capture_limit, spec.refund_limit),
            (spec.tokenizes, spec.tokenize_credential, spec.authorization_days),
            DATA[name]["credentials"],
        )
    )


# where a trigger must not fire: every gateway with test inputs of its own, and of the rest
# (payemu's generic sandbox: the listed gateways, most alike) one for each distinct behaviour
_ALIKE: dict[str, str] = {}
for _name in CATALOG.names():
    if not CATALOG[_name].triggers:
        _ALIKE.setdefault(_behaviour(_name), _name)
COMPARED_ON = [name for name in CATALOG.names() if CATALOG[name].triggers or name in _ALIKE.values()]


@pytest.mark.parametrize(("name", "row"), OWN, ids=[f"{n}-{r['name']}" for n, r in OWN])
def test_trigger_does_not_fire_on_other_gateways(client: QuickClient, name: str, row: dict[str, Any]) -> None:
    """On every other gateway (of gateways alike in behaviour, one: :data:`COMPARED_ON`) the
    trigger's input is answered as that gateway answers the base charge; a row's
    ``elsewhere`` is what payemu's generic checks answer instead, on every gateway that
    checks cards and approves the base charge."""
    for gateway in COMPARED_ON:
        shared = gateway in row.get("sharedWith", ()) or name in SHARED_BACK.get((gateway, _input(row)), ())
        if gateway == name or shared or same_sandbox(name, gateway):
            continue
        base = _base(client, gateway)
        answer = _answer(client, gateway, row)
        where = f"{row['name']} ({name}'s trigger) on {gateway}: {answer}"
        refused = _test_mode_refusal(gateway, row)
        if refused is not None:  # a test mode that declines cards outside its test numbers (Stripe)
            assert answer["gatewayResultCode"] == refused, where
            continue
        if "elsewhere" in row:
            if base["operationResultCode"] == "Success" and not CATALOG[gateway].always:  # not the mocks
                for key, value in row["elsewhere"].items():
                    assert answer[key] == value, where
            continue
        assert [answer[key] for key in COMPARED] == [base[key] for key in COMPARED], where


def _test_mode_refusal(gateway: str, row: dict[str, Any]) -> str | None:
    """The code ``gateway``'s test mode declines the row's card with, when it is none of
    the test numbers that gateway takes (its own and the published ones), else None."""
    modes = CATALOG[gateway].modes
    number = row.get("set", {}).get("card.cardNumber")
    if modes is None or modes.test_mode_live_card is None or number is None:
        return None
    if number in modes.test_cards or number in BOOK.test_cards(gateway) or not luhn_valid(number):
        return None
    return modes.test_mode_live_card.code


_BASES: dict[str, Any] = {}  # each gateway's answer to the base charge: the same for every trigger
_ANSWERS: dict[tuple[str, str, str], Any] = {}  # a gateway's answer to one input, asked once per run


def _answer(client: QuickClient, gateway: str, row: dict[str, Any]) -> Any:
    key = (gateway, _input(row), json.dumps(row.get("credentials"), sort_keys=True, default=str))
    if key not in _ANSWERS:
        _ANSWERS[key] = run(client, gateway, row).json()
    return _ANSWERS[key]


def _base(client: QuickClient, gateway: str) -> Any:
    if gateway not in _BASES:
        _BASES[gateway] = run(client, gateway, {}).json()
    return _BASES[gateway]
