"""The pytest plugin's journal helpers, and the README's "In CI" example as written there."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from emulator.testing import JOURNAL_FILTERS, ControlError, Payemu, PayemuServer
from tests.support.bodies import card
from tests.support.paths import REPO_ROOT

CARD = card(cardHolderName="Ada", cardNumber="4242424242424242")


@pytest.fixture(autouse=True)
def _schema_checked(payemu_server: PayemuServer) -> object:
    """Every answer the in-process server sent in these tests matches its schema."""
    yield
    if payemu_server.app is not None:
        violations = payemu_server.app.state.runtime.violations
        assert not violations, "responses broke the schema:\n" + "\n".join(violations)


def test_declined(payemu: Payemu) -> None:
    """The README's "In CI" example: a runtime rule decides on the mock gateway too."""
    payemu.add_scenario(
        {
            "name": "no-funds",
            "when": {"amount": 42.0},
            "then": {"operationResultCode": "Rejected", "rejectReasonCode": "InsufficientFunds"},
        }
    )
    body = {
        "amount": 42.0,
        "currency": "USD",
        "card": CARD,
        "paymentGatewayAccount": {"paymentGatewayName": "NULLSuccess", "credentials": []},
    }
    assert payemu.client.post("/PaymentGateway/charge", json=body).status_code == 409
    [attempt] = payemu.requests(status=409)[0]["attempts"]
    assert (attempt["rule"], attempt["ruleSource"]) == ("no-funds", "runtime")
    assert attempt["result"]["rejectReasonCode"] == "InsufficientFunds"


def _charge(payemu: Payemu, amount: float, gateway: str = "NULLSuccess", my_ref: str = "order-1") -> int:
    body = {
        "amount": amount,
        "currency": "USD",
        "card": CARD,
        "myRef": my_ref,
        "paymentGatewayAccount": {"paymentGatewayName": gateway, "credentials": []},
    }
    return payemu.client.post("/PaymentGateway/charge", json=body).status_code


def test_requests_and_count_take_the_filters(payemu: Payemu) -> None:
    payemu.add_scenario({"name": "down", "when": {"amount": 13}, "then": {"operationResultCode": "TemporaryFailure"}})
    statuses = [_charge(payemu, 13), _charge(payemu, 10, my_ref="order-2"), _charge(payemu, 10, "NULLFailure")]
    assert statuses == [503, 200, 409]
    payemu.client.get("/Utils/apiKey")
    assert [e["id"] for e in payemu.requests(status=409)] == [3]
    assert [e["id"] for e in payemu.requests(resultCode="TemporaryFailure")] == [1]
    assert [e["id"] for e in payemu.requests(gateway="NULLFailure", operationId="GatewayCharge")] == [3]
    assert [e["id"] for e in payemu.requests(myRef="order-2", method="POST")] == [2]
    assert payemu.count() == 4
    assert payemu.count(status=503) == 1
    assert payemu.count(method="GET", path="/Utils") == 1
    assert payemu.count(resultCode="Success") == 1
    with pytest.raises(ControlError, match="400") as caught:
        payemu.count(status="many")
    assert "status" in caught.value.body


def test_requests_reads_every_page(payemu: Payemu) -> None:
    for _ in range(3):
        payemu.client.get("/Utils/apiKey")
    page = payemu.client.get("/_emulator/requests", params={"pageSize": 2}).json()
    assert page["next"] == 2  # the listing pages ...
    assert [e["id"] for e in payemu.requests(pageSize=2)] == [1, 2, 3]  # ... the helper reads them all


def test_the_journal_example_of_the_ci_docs(payemu: Payemu) -> None:
    """docs/ci.md's pytest example of the journal filters, run as written there."""
    text = (REPO_ROOT / "docs" / "ci.md").read_text()
    section = text[text.index("## The journal") :]
    block = re.search(r"^```python\n(.*?)^```$", section, re.S | re.M)
    assert block is not None
    scope: dict[str, Any] = {}
    exec(compile(block.group(1), "docs/ci.md", "exec"), scope)
    scope["test_one_decline_and_the_rule_behind_it"](payemu)


@pytest.mark.parametrize("helper", ["requests", "count"])
def test_an_unknown_filter_is_a_type_error(payemu: Payemu, helper: str) -> None:
    """A mistyped filter would match every entry: ``count(stauts=409)`` must not answer 1."""
    payemu.client.get("/Utils/apiKey")
    with pytest.raises(TypeError) as caught:
        getattr(payemu, helper)(stauts=409)
    message = str(caught.value)
    assert message.startswith(f"{helper}() got an unknown filter 'stauts'; did you mean 'status'?")
    assert "(allowed: path, since, until, method, status, operationId, resultCode, gateway, myRef, limit" in message


def test_count_takes_no_page_size(payemu: Payemu) -> None:
    with pytest.raises(TypeError, match="unknown filter 'pageSize'"):
        payemu.count(pageSize=2)


def test_an_unknown_gateway_filter_is_refused_by_payemu(payemu: Payemu) -> None:
    with pytest.raises(ControlError) as caught:
        payemu.count(gateway="Strip")
    assert caught.value.status == 400
    assert "did you mean 'Stripe'?" in caught.value.body


def test_the_helpers_filters_are_the_control_apis() -> None:
    """JOURNAL_FILTERS names exactly the query parameters of GET /_emulator/requests/count."""
    document = json.loads((REPO_ROOT / "emulator/data/control.json").read_text())
    params = document["paths"]["/_emulator/requests/count"]["get"]["parameters"]
    assert tuple(param["name"] for param in params if param["in"] == "query") == JOURNAL_FILTERS
