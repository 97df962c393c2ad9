"""``payemu scenarios check|list|table``, ``payemu serve`` refusing bad files, and the
README's generated test-card table."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.catalog.loader import load_catalog
from emulator.cli import main as cli
from emulator.domain.config import Settings
from emulator.scenarios import builtin_table, describe, markdown_table, parse_rules
from emulator.scenarios.report import TABLE_END, TABLE_START, readme_with_table, write_readme
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
GOOD = "- {name: good, when: {amount: 12.5, currency: EUR}, then: {operationResultCode: Rejected}}\n"
BAD = "- name: bad\n  then: {operationResultCode: Success, fault: crash}\n"


def test_check_exit_codes_and_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(GOOD)
    bad.write_text(BAD)
    assert cli.main(["scenarios", "check", str(good)]) == 0
    assert capsys.readouterr().out == "1 file(s) OK\n"
    assert cli.main(["scenarios", "check", str(good), str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"{bad}:2: rule 'bad': then.fault: 'crash' is not one of none, reset, lostResponse\n"
    assert captured.out == ""


def test_check_as_a_command(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD + "- {name: bad, then: {operationResultCode: Success}}\n")
    run = subprocess.run(
        [sys.executable, "-m", "emulator", "scenarios", "check", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        f"{bad}:2: rule 'bad': then.fault: 'crash' is not one of none, reset, lostResponse",
        f"{bad}:3: duplicate rule name 'bad' (first at {bad}:1)",
    ]


def test_serve_refuses_bad_scenario_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: None)
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    assert cli.main(["serve", "--port", "1", "--scenarios", str(bad), str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"payemu: {tmp_path / 'nope'}: no such file or directory",
        f"payemu: {bad}:2: rule 'bad': then.fault: 'crash' is not one of none, reset, lostResponse",
    ]


def test_list_prints_the_effective_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    assert cli.main(["scenarios", "list", str(good)]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = rf"{re.escape(str(good))}:1 +good +amount=12\.50 currency=EUR → Rejected \(CardDeclined\)"
    assert re.fullmatch(first, lines[0])
    (funds,) = [line for line in lines if " insufficient-funds-amount " in line]
    assert re.fullmatch(
        r"emulator/data/default-scenarios\.yaml:\d+ +insufficient-funds-amount +"
        r"amount=9011\.00 operation=Charge,PreAuth,Capture,Refund → Rejected \(InsufficientFunds\)",
        funds,
    )
    assert len(lines) == 1 + len(builtin_rules_names())
    assert cli.main(["scenarios", "list", str(tmp_path / "bad.yaml")]) == 2


def builtin_rules_names() -> list[str]:
    return re.findall(r"\| `([a-z0-9-]+)` \|$", builtin_table(), re.M)


def test_describe_spells_out_every_kind_of_rule() -> None:
    rules = parse_rules(
        """
- name: seq
  when: {cardNumber: ["4111111111111111", "4242424242424242"], attempt: [1, 2]}
  sequence: [{operationResultCode: TemporaryFailure}, {operationResultCode: Success, delayMs: 20}]
- name: pending
  when: {amount: {min: 5, max: 6}, operation: charge}
  then: {operationResultCode: Accepted, settlesTo: Success, settleAfterSeconds: 5, gatewayResultCode: "P1"}
- name: anything
  then: {operationResultCode: Success, fault: lostResponse}
""",
        "runtime",
    )
    from emulator.scenarios.report import describe_rules

    assert describe_rules(rules).splitlines() == [
        "runtime  seq       cardNumber=4111111111111111,4242424242424242 attempt=1,2 → "
        "TemporaryFailure → Success, delay 20 ms (last repeats)",
        "runtime  pending   amount=5.00..6.00 operation=Charge → "
        "Accepted, gateway code P1, settles to Success after 5 s",
        "runtime  anything  any → Success, fault lostResponse",
    ]


def test_describe_of_settings_ends_with_the_built_in_cards(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    lines = describe(Settings(scenario_paths=[str(good)])).splitlines()
    assert lines[0].startswith(f"{good}:1  good")
    assert "reset-card" in "\n".join(lines)
    text = "\n".join(lines)
    # the gateways' own come before payemu's generic ones (rulebook.PRECEDENCE)
    assert text.index("authorizenet-declined-zip") < text.index("reset-card")
    assert "emulator/data/default-scenarios.yaml" in lines[-1]


def test_list_of_one_gateway_shows_its_triggers_and_payemus(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["scenarios", "list", "--gateway", "adyen"]) == 0
    listed = capsys.readouterr().out
    for holder in ("DECLINED", "CARD_EXPIRED", "NOT_ENOUGH_BALANCE", "BLOCK_CARD", "CVC_DECLINED", "REFERRAL", "ERROR"):
        assert f"holderName={holder} " in listed, holder
    assert "insufficient-funds-amount" in listed  # payemu's conventions apply to Adyen too
    assert "stripe-" not in listed  # Stripe's cards are not Adyen's
    assert "authorizenet-" not in listed


def test_list_of_a_mock_gateway_shows_no_default_trigger(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["scenarios", "list", "--gateway", "NULLSuccess"]) == 0
    assert capsys.readouterr().out.strip() == "(no rules)"


def test_list_of_a_mock_gateway_shows_the_users_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "scenarios:\n"
        "  - {name: no-funds, when: {amount: 42}, then: {operationResultCode: Rejected}}\n"
        "  - {name: stripe-only, when: {gateway: Stripe}, then: {operationResultCode: Rejected}}\n"
    )
    assert cli.main(["scenarios", "list", "--gateway", "NULLSuccess", str(mine)]) == 0
    listed = capsys.readouterr().out
    assert "no-funds" in listed  # a rule of yours applies on the mocks too
    assert "stripe-only" not in listed and "insufficient-funds-amount" not in listed


def test_list_of_an_unknown_gateway_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["scenarios", "list", "--gateway", "Nope"]) == 2
    assert "unknown gateway 'Nope'" in capsys.readouterr().err


def test_markdown_table_groups_cards_amounts_and_others() -> None:
    rules = parse_rules(
        """
- {name: c, when: {cardNumber: "4111111111111111", currency: usd}, then: {operationResultCode: Rejected}}
- {name: a, description: "pipes | escaped", when: {amount: {min: 1, max: 2}},
   then: {operationResultCode: Success, delayMs: 5}}
- {name: o, when: {gateway: NULLSuccess}, then: {operationResultCode: FatalFailure}}
""",
        "t.yaml",
    )
    assert markdown_table(rules) == (
        "**Test cards**\n\n"
        "| card number | operations | outcome | reject reason | notes | rule |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| `4111111111111111` | any | Rejected | CardDeclined | currency USD only | `c` |\n\n"
        "**Test amounts (any card)**\n\n"
        "| amount | operations | outcome | reject reason | notes | rule |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| `1.00`–`2.00` | any | Success | — | delay 5 ms; pipes \\| escaped | `a` |\n\n"
        "**Other rules**\n\n"
        "| when | operations | outcome | reject reason | notes | rule |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| `gateway=NULLSuccess` | any | FatalFailure | — | gateway NULLSuccess only | `o` |\n"
    )


def test_docs_table_is_the_generated_one() -> None:
    readme = (ROOT / "docs" / "test-cards.md").read_text(encoding="utf-8")
    start, end = readme.index(TABLE_START) + len(TABLE_START), readme.index(TABLE_END)
    assert readme[start:end] == "\n" + builtin_table(), "run: payemu scenarios table --write-docs"
    assert readme.startswith("# Test cards and amounts")


def test_docs_tables_are_one_per_gateway_from_the_data() -> None:
    table = builtin_table()
    headings = re.findall(r"^### (.+)$", table, flags=re.M)
    catalog = load_catalog()
    assert headings == [
        *(f"{gateway.display_name} (`{gateway.name}`)" for gateway in catalog),
        "payemu's own test cards and amounts (every gateway but the mocks)",
    ]
    sections = dict(
        zip([h.split("`")[1] for h in headings[:-1]], re.split(r"^### .+$", table, flags=re.M)[1:], strict=False)
    )
    stripe, adyen, authorizenet = sections["Stripe"], sections["Adyen"], sections["AuthorizeNet"]
    payemu = table.split("### payemu's own")[1]
    assert (
        "| card `4000000000009979` | Charge, PreAuth, Tokenize | Rejected (LostOrStolenCard) | `stolen_card`" in stripe
    )
    assert "| capture | never above the authorization — [docs.stripe.com" in stripe
    assert (
        "| card.cardHolderName `CARD_EXPIRED` | Charge, PreAuth | Rejected (ExpiredCard) | `Refused` Expired Card"
        in adyen
    )
    assert "| payerDetails.postCode `46282` |" in authorizenet
    assert "| card.cvv `901` | Charge, PreAuth | Success | cvvResultCode `N` |" in authorizenet
    assert "none after 120 days unless `ECCenabled` is `true`" in authorizenet
    assert "4000000000009979" not in adyen + authorizenet + payemu
    assert "`4000009011000000`" in payemu
    assert "`66311` Invalid Test Amount" in sections["Cardstream"]
    assert "| requires | `card.cvv` — [developers.pcibooking.net" in sections["BAC"]
    for name in ("Azul", "Better", "Caterpay", "Gateline", "3GDirectPay"):  # no public sandbox of their own
        assert "No public sandbox of its own is modelled" in sections[name], name
    for gateway in catalog:  # every guess is labelled, every fact cites its page
        assert "*payemu's guess" in sections[gateway.name] or gateway.always, gateway.name


def test_docs_example_rules_are_valid() -> None:
    section = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(scenarios:.*?)```", section, re.S)
    assert example is not None
    assert [r.name for r in parse_rules(example.group(1), "docs/scenarios.md")] == [
        "big-amounts-decline",
        "flaky-then-fine",
    ]


def test_table_command_prints_and_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["scenarios", "table"]) == 0
    assert capsys.readouterr().out == builtin_table()
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{TABLE_START}\nold\n{TABLE_END}\nafter\n")
    assert write_readme(readme) is True
    assert readme.read_text() == f"# x\n{TABLE_START}\n{builtin_table()}{TABLE_END}\nafter\n"
    assert write_readme(readme) is False
    with pytest.raises(ValueError, match="markers"):
        readme_with_table("no markers here", "table")
