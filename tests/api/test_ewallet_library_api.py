"""The eWallet library's endpoints (/_emulator/ewallet/v1), its session token, the card
form's listener and the OTP challenge, in-process (the real library in a browser:
tests/ui/test_ewallet_library.py)."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.api.ewallet import LIBRARY_PREFIX
from emulator.cli.main import card_form_listener, main
from emulator.domain.config import Settings
from emulator.ewallet.cardform import OTP_CODE, WRONG_CODE
from emulator.scenarios import ScenarioError, parse_rules
from emulator.stores import ewallet_sessions as sessions
from emulator.tenants.tenants import Tenant
from emulator.ui import cardform
from tests.conftest import EWALLET_CARD as CARD
from tests.conftest import SANDBOX
from tests.conftest import setup_ewallet_tenant as setup_tenant
from tests.support.paths import REPO_ROOT

BASE = "http://testserver"
NEW_CARD = {
    "cardHolderName": "Jane Doe",
    "cardNumber": CARD,
    "expirationMonth": 12,
    "expirationYear": 2031,
    "cvv": "123",
}
DECLINED = "4000000000000002"


def claims(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # type: ignore[no-any-return]


def literal(value: Any) -> str:
    """A body as the library sends it: JSON.stringify of a string."""
    return json.dumps(value if isinstance(value, str) else json.dumps(value))


@pytest.fixture
def stored(tenant: Tenant) -> str:
    return setup_tenant(tenant)


@pytest.fixture
def shop(client: TestClient, stored: str) -> Iterator[TestClient]:
    """The sandbox tenant with accounts primary (declines), backup (approves) and a Stripe account."""
    account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_1"}]}
    assert client.put("/PaymentGatewayAccounts/stripe1", json=account).status_code == 200
    yield client


def start(client: TestClient, stored: str | None = None, **changes: Any) -> str:
    body: dict[str, Any] = {
        "operation": "CHARGE",
        "mode": "TEST",
        "currencyCode": "EUR",
        "amount": 25.0,
        "paymentGatewayAccountId": "stripe1",
        "allowedBrands": ["Visa", "MasterCard"],
    }
    if stored:
        body["storedCards"] = [{"token": stored, "lastDigits": "1111", "expirationMonth": 4, "expirationYear": 2031}]
    body.update(changes)
    answer = client.post("/EWalletOperations", json=body)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["token"])


def call(client: TestClient, token: str, method: str, name: str, body: Any = None, **query: str) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    content = None if body is None else (body if isinstance(body, str) else json.dumps(body))
    return client.request(method, f"{LIBRARY_PREFIX}/{name}", content=content, headers=headers, params=query)


def enter(client: TestClient, token: str, choice: dict[str, Any]) -> str:
    answer = call(client, token, "POST", "enterCard", choice)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["cardRef"])


# -- the session token -----------------------------------------------------------------
def test_session_token_payload_is_what_the_library_reads(shop: TestClient) -> None:
    pld = claims(start(shop))["pld"]
    assert pld["url"] == BASE + LIBRARY_PREFIX
    assert pld["op"] == "CHARGE"
    assert pld["wlt"] == [{"name": "CardPay"}]
    assert pld["stg"] == "Dev"
    assert pld["pub"] == sessions.PUBLIC_KEY
    assert pld["brndng"] == {"merchantName": "sandbox-merchant"}


@pytest.mark.parametrize(
    ("allowed", "expected"),
    [
        (None, [{"name": "CardPay"}]),
        (["cardpay1"], [{"name": "CardPay"}]),
        (["applepay-main", "cards-eu", "cards-us"], [{"name": "CardPay"}]),
        (["ApplePayMain", "googlepay1", "paypal"], []),
    ],
)
def test_wallets_never_list_what_cannot_work_offline(allowed: list[str] | None, expected: list[Any]) -> None:
    assert sessions.wallets({"allowedeWalletAccountIds": allowed}) == expected


# -- CORS and the bearer -----------------------------------------------------------------
def test_preflight_allows_the_library_headers(anon: TestClient) -> None:
    answer = anon.options(
        f"{LIBRARY_PREFIX}/charge",
        headers={
            "Origin": "http://localhost:3000",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == "*"
    assert "authorization" in answer.headers["access-control-allow-headers"].lower()
    assert "POST" in answer.headers["access-control-allow-methods"]


@pytest.mark.parametrize("bearer", ["", "opaque", "altered"])
def test_a_call_without_a_valid_session_token_is_401(shop: TestClient, bearer: str) -> None:
    token = start(shop)
    if bearer == "altered":
        head, body, signature = token.split(".")
        bearer = f"{head}.{body}.{signature[:-2]}AA"
    answer = shop.post(
        f"{LIBRARY_PREFIX}/validateSession",
        content=literal(""),
        headers={"Authorization": f"Bearer {bearer}", "Content-Type": "application/json", "Origin": "http://localhost"},
    )
    assert answer.status_code == 401
    assert answer.json()[0]["fieldName"] == "Authorization"
    assert answer.headers["access-control-allow-origin"] == "*"


def test_covered_countries_needs_no_token(anon: TestClient) -> None:
    answer = anon.get(f"{LIBRARY_PREFIX}/coveredCountries")
    assert answer.json() == {"countries": []}


# -- the card form's calls --------------------------------------------------------------
def test_validate_session_gives_the_form_its_data(shop: TestClient, stored: str) -> None:
    token = start(shop, stored)
    answer = call(shop, token, "POST", "validateSession", literal(""), eWalletName="CardPay")
    assert answer.json()["success"] is True
    data = json.loads(answer.json()["data"])
    assert data["authenticationOption"] == "None"
    assert data["amount"] == 25.0
    assert data["storedCards"][0]["lastDigits"] == "1111"
    assert stored not in answer.text  # the vault token stays on the server


def test_only_card_pay_is_emulated(shop: TestClient) -> None:
    answer = call(shop, start(shop), "POST", "validateSession", literal(""), eWalletName="GooglePay")
    assert answer.status_code == 400
    assert answer.json()[0]["fieldName"] == "eWalletName"


def test_brand_comes_from_the_bin_table(shop: TestClient) -> None:
    answer = call(shop, start(shop), "GET", "brand", iin="555555")
    assert answer.json()["brand"] == "MasterCard"


@pytest.mark.parametrize(
    ("card", "field"),
    [
        ({**NEW_CARD, "cardNumber": "41111"}, "card.cardNumber"),
        ({**NEW_CARD, "cardNumber": "378282246310005", "cvv": "1234"}, "card.cardNumber"),  # Amex not allowed
        ({**NEW_CARD, "cvv": "12"}, "card.cvv"),
    ],
)
def test_enter_card_checks_the_card_as_the_hosted_page(shop: TestClient, card: dict[str, Any], field: str) -> None:
    answer = call(shop, start(shop), "POST", "enterCard", {"card": card})
    assert answer.status_code == 400
    assert answer.json()[0]["fieldName"] == field


def test_pay_with_a_new_card_and_validate_the_result(shop: TestClient) -> None:
    token = start(shop)
    entered = call(shop, token, "POST", "enterCard", {"card": NEW_CARD}).json()
    assert entered["maskedCard"] == "411111******1111"
    paid = call(shop, token, "POST", "charge", literal({"cardRef": entered["cardRef"]}), eWalletName="CardPay")
    assert paid.status_code == 200, paid.text
    result = paid.json()["token"]
    assert claims(result)["pld"]["upgChargeResults"]["operationResultCode"] == "Success"
    bare = shop.post("/EWalletOperations/validateResults", json=result)
    assert bare.json()["upgChargeResults"]["operationResultCode"] == "Success"
    assert "x-payemu-warnings" not in bare.headers
    again = call(shop, token, "POST", "charge", literal({"cardRef": entered["cardRef"]}))
    assert again.status_code == 409


def test_validate_results_takes_the_token_wrapped_as_a_leniency(make_app: Any, stored: str) -> None:
    for strict, expected in ((False, 200), (True, 400)):
        app: Starlette = make_app(strict=strict)
        tenant = app.state.runtime.tenants.get("sandbox-api-key")
        setup_tenant(tenant)
        with TestClient(app, headers=SANDBOX) as client:
            token = start(client, paymentGatewayAccountId="backup")
            reference = enter(client, token, {"card": NEW_CARD})
            result = call(client, token, "POST", "charge", literal({"cardRef": reference})).json()["token"]
            wrapped = client.post("/EWalletOperations/validateResults", json={"token": result})
            assert wrapped.status_code == expected, wrapped.text
            if not strict:
                assert wrapped.headers["x-payemu-warnings"] == "wrapped-token=body"
                assert wrapped.json()["providerAccountId"] == "backup"


def test_a_decline_is_a_200_carrying_the_result(shop: TestClient) -> None:
    token = start(shop)
    reference = enter(shop, token, {"card": {**NEW_CARD, "cardNumber": DECLINED}})
    paid = call(shop, token, "POST", "charge", literal({"cardRef": reference}))
    assert paid.status_code == 200
    pld = claims(paid.json()["token"])["pld"]
    assert pld["upgChargeResults"]["rejectReasonCode"] == "CardDeclined"


def test_failover_lists_the_failed_attempt_in_the_token(shop: TestClient) -> None:
    token = start(shop, paymentGatewayAccountId="primary", fallbackUpgs=[{"paymentGatewayAccountId": "backup"}])
    reference = enter(shop, token, {"card": NEW_CARD})
    pld = claims(call(shop, token, "POST", "charge", literal({"cardRef": reference})).json()["token"])["pld"]
    assert [r["gatewayName"] for r in pld["failedUpgChargeResults"]] == ["NULLFailure"]
    assert pld["upgChargeResults"]["gatewayName"] == "NULLSuccess"


def test_stored_card_with_its_cvv(shop: TestClient, stored: str) -> None:
    token = start(shop, stored, paymentGatewayAccountId="backup")
    entered = call(shop, token, "POST", "enterCard", {"storedCard": 0, "cvv": "321"}).json()
    assert entered["maskedCard"] == "411111******1111"
    paid = call(shop, token, "POST", "tokenize", literal({"cardRef": entered["cardRef"]}))
    assert claims(paid.json()["token"])["pld"]["upgChargeResults"]["operationResultCode"] == "Success"


def test_a_card_reference_of_another_session_is_refused(shop: TestClient) -> None:
    reference = enter(shop, start(shop), {"card": NEW_CARD})
    answer = call(shop, start(shop), "POST", "charge", literal({"cardRef": reference}))
    assert answer.status_code == 400
    assert answer.json()[0]["fieldName"] == "cardRef"


def test_charge_body_that_is_not_json_text(shop: TestClient) -> None:
    answer = call(shop, start(shop), "POST", "charge", literal("not json"))
    assert answer.status_code == 400
    assert answer.json()[0]["fieldName"] == "body"


def test_the_journal_masks_the_entered_card(shop: TestClient) -> None:
    token = start(shop)
    enter(shop, token, {"card": NEW_CARD})
    journal = shop.get("/_emulator/requests")
    assert "LibraryEnterCard" in journal.text
    assert CARD not in journal.text
    assert '"cvv"' not in journal.text


# -- the OTP challenge -------------------------------------------------------------------
OTP_RULE = {
    "name": "otp-at-77",
    "when": {"amount": 77},
    "then": {"operationResultCode": "Success", "authentication": "otpbygenericui"},
}


def test_a_scenario_rule_asks_for_an_otp(shop: TestClient) -> None:
    assert shop.post("/_emulator/scenarios", json=OTP_RULE).status_code in (200, 201)
    token = start(shop, amount=77)
    data = json.loads(call(shop, token, "POST", "validateSession", literal("")).json()["data"])
    assert data["authenticationOption"] == "OtpByGenericUI"
    card = literal({"cardRef": enter(shop, token, {"card": NEW_CARD})})
    skipped = call(shop, token, "POST", "charge", card)
    assert skipped.status_code == 400

    wrong = call(shop, token, "POST", "startPayment", card).json()["transactionId"]
    assert call(shop, token, "GET", "otpStatus", transactionId=wrong).json()["data"] == "Pending"
    assert call(shop, token, "GET", "otpStatus", transactionId=wrong).json()["message"] == ""
    assert call(shop, token, "POST", "sendOtp", literal("0000"), transactionId=wrong).json()["success"] is False
    failed = call(shop, token, "GET", "otpStatus", transactionId=wrong).json()
    assert (failed["data"], failed["message"]) == ("Failure", WRONG_CODE)  # what the library shows
    assert call(shop, token, "POST", "charge", literal(wrong)).status_code == 400

    right = call(shop, token, "POST", "startPayment", card).json()["transactionId"]
    assert call(shop, token, "POST", "sendOtp", literal(OTP_CODE), transactionId=right).json()["success"] is True
    assert call(shop, token, "GET", "otpStatus", transactionId=right).json()["data"] == "Success"
    paid = call(shop, token, "POST", "charge", literal(right))
    assert claims(paid.json()["token"])["pld"]["upgChargeResults"]["operationResultCode"] == "Success"


def test_other_sessions_pay_without_a_challenge(shop: TestClient) -> None:
    assert shop.post("/_emulator/scenarios", json=OTP_RULE).status_code in (200, 201)
    data = json.loads(call(shop, start(shop, amount=78), "POST", "validateSession", literal("")).json()["data"])
    assert data["authenticationOption"] == "None"


def test_authentication_is_checked_in_scenario_files() -> None:
    rules = parse_rules(
        "scenarios:\n  - name: a\n    then: {operationResultCode: Success, authentication: otpbygenericui}\n", "f"
    )
    assert rules[0].outcomes[0].authentication == "OtpByGenericUI"
    with pytest.raises(ScenarioError) as bad:
        parse_rules("scenarios:\n  - name: a\n    then: {operationResultCode: Success, authentication: sms}\n", "f")
    assert "authentication" in str(bad.value.problems[0])


# -- the card form's listener --------------------------------------------------------------
def test_the_form_is_served_at_the_double_slash_path(app: Starlette) -> None:
    client = TestClient(cardform.PortSplit(app, cardform.app, 4200))
    page = client.get("http://localhost:4200//pay/")
    assert page.status_code == 200
    assert 'src="cardform.js"' in page.text
    assert "frame-ancestors *" in page.headers["content-security-policy"]
    script = client.get("http://localhost:4200//pay/cardform.js")
    assert 'send("Ready"' in script.text
    elsewhere = client.get("http://localhost:8080//pay/")  # payemu's own port: not the form
    assert elsewhere.status_code == 404


def test_the_form_site_is_made_by_its_first_request(app: Starlette) -> None:
    """Serving builds the form's site only once a request comes to its port, and then once."""
    made: list[Starlette] = []

    def make() -> Starlette:
        made.append(cardform.app())
        return made[-1]

    client = TestClient(cardform.PortSplit(app, make, 4200))
    assert client.get("http://localhost:8080/Utils/apiKey", headers={"X-Api-Key": "sandbox-api-key"}).status_code == 200
    assert made == []
    for _ in range(2):
        assert client.get("http://localhost:4200/pay/").status_code == 200
    assert len(made) == 1


def test_the_library_finds_its_strings_on_the_form_site(app: Starlette) -> None:
    """The library reads ``assets/i18n/{language}.json`` beside the form, CORS-preflighted
    (it sends an Authorization header): an empty map, so it keeps its own strings."""
    client = TestClient(cardform.PortSplit(app, cardform.app, 4200))
    url = "http://localhost:4200//pay/assets/i18n/en.json"
    origin = {"Origin": "http://localhost:5173"}
    preflight = client.options(
        url,
        headers={**origin, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"},
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "authorization" in preflight.headers["access-control-allow-headers"]
    strings = client.get(url, headers={**origin, "Authorization": ""})
    assert (strings.status_code, strings.json()) == (200, {})
    assert strings.headers["access-control-allow-origin"] == "*"
    unknown = client.get("http://localhost:4200//pay/assets/i18n/../../x.json")
    assert unknown.status_code == 404 and unknown.json()[0]["fieldName"] == "path"
    odd = client.get("http://localhost:4200//pay/assets/i18n/english.json", headers=origin)
    assert odd.status_code == 404 and "two-letter" in odd.json()[0]["errors"][0]
    assert odd.headers["access-control-allow-origin"] == "*"


def test_a_busy_card_form_port_is_reported_not_fatal() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        sock, line = card_form_listener(Settings(card_form_port=port))
    assert sock is None
    assert line is not None
    assert f"cannot listen on localhost:{port}" in line
    assert "--no-card-form" in line


def test_the_card_form_can_be_turned_off() -> None:
    sock, line = card_form_listener(Settings(card_form_port=None))
    assert sock is None
    assert "off" in (line or "")


def test_card_form_port_out_of_range(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--card-form-port", "70000"]) == 2
    assert "--card-form-port 70000" in capsys.readouterr().err


# -- the document ----------------------------------------------------------------------------
def test_the_library_document_is_valid_openapi_with_a_handler_per_operation(runtime: Any) -> None:

    from openapi_spec_validator import validate

    from emulator.contract.openapi import OpenApi
    from emulator.domain.datafiles import data_path
    from emulator.ewallet.cardform import Desk
    from emulator.ui import library

    document = json.loads(data_path("library.json").read_text())
    validate(document)
    linked = REPO_ROOT / "schemas" / "library.json"
    assert linked.read_text() == data_path("library.json").read_text()
    api = OpenApi.load(data_path("library.json"))
    assert set(library.handlers(runtime, Desk())) == {op.operation_id for op in api.operations.values()}
    assert all(op.path.startswith(LIBRARY_PREFIX + "/") for op in api.operations.values())


def test_the_card_form_port_may_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PAYEMU_CARD_FORM_PORT", "not-a-port")
    assert main(["serve"]) == 2
    assert "PAYEMU_CARD_FORM_PORT=not-a-port" in capsys.readouterr().err
