"""docs/architecture.md against the code: a real charge, sent to a real server, enters the
modules the page's charge path lists in the order it lists them, and crosses no package
the path leaves out; the floors the page draws are the layers contract's."""

from __future__ import annotations

import importlib
import re
import threading
import tomllib
from collections.abc import Iterator
from types import FrameType
from typing import Any

import httpx
import pytest

from emulator.domain.config import Settings
from tests.support.bodies import STRIPE, charge
from tests.support.paths import REPO_ROOT
from tests.support.servers import in_thread

PAGE = REPO_ROOT / "docs" / "architecture.md"
MODULE = re.compile(r"`(emulator(?:\.\w+)+)`")
SANDBOX = {"X-Api-Key": "sandbox-api-key"}


def charge_path() -> list[list[str]]:
    """The modules of each step of the page's charge path: the numbered list after its
    marker comment, each step's first module the one it is about."""
    text = PAGE.read_text(encoding="utf-8")
    listing = text.split("<!-- charge path: checked by tests/docs/test_architecture.py -->", 1)[1]
    steps = re.split(r"\n(?=\d+\. )", listing.strip().split("\n\n", 1)[0])
    return [MODULE.findall(step) for step in steps]


def traced_charge() -> list[str]:
    """Every ``emulator`` module a charge's calls enter in the server's thread, in order
    (a module entered again straight after itself counted once)."""
    entered: list[str] = []
    recording = threading.Event()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and recording.is_set():
            name = frame.f_globals.get("__name__", "")
            if name.startswith("emulator.") and (not entered or entered[-1] != name):
                entered.append(name)

    threading.setprofile(profile)  # the server's thread, started below, is profiled
    try:
        with in_thread(Settings()) as server, httpx.Client(base_url=server.url, headers=SANDBOX) as client:
            assert client.put("/PaymentGatewayAccounts/main", json=STRIPE).status_code == 200
            assert client.post("/PaymentGateway/charge", json=charge(5)).status_code == 200  # first-use work done
            recording.set()
            answer = client.post("/PaymentGateway/charge", json=charge(5))
            recording.clear()
    finally:
        threading.setprofile(None)
    assert answer.status_code == 200
    assert answer.json()["operationResultCode"] == "Success"
    return entered


@pytest.fixture(scope="module")
def traced() -> Iterator[list[str]]:
    yield traced_charge()


def in_order(wanted: list[str], trace: list[str]) -> list[str]:
    """The modules of ``wanted`` not found in ``trace`` after the ones before them."""
    found = iter(trace)
    return [module for module in wanted if module not in found]


def test_the_page_lists_a_charge_path_of_modules_that_exist() -> None:
    steps = charge_path()
    assert len(steps) >= 20
    assert all(steps), "every step names the module it is about"
    for module in sorted({name for step in steps for name in step}):
        importlib.import_module(module)  # fails on a module that is no more


def test_a_real_charge_enters_the_listed_modules_in_the_listed_order(traced: list[str]) -> None:
    listed = [step[0] for step in charge_path()]
    missing = in_order(listed, traced)
    assert missing == [], f"not entered in the page's order: {missing}\nthe charge entered: {traced}"


def test_the_path_leaves_out_no_package_a_charge_crosses(traced: list[str]) -> None:
    named = {".".join(name.split(".")[:2]) for step in charge_path() for name in step}
    crossed = {".".join(name.split(".")[:2]) for name in traced}
    assert crossed - named == set(), f"packages a charge crosses that the page's path does not name: {crossed - named}"


def test_the_diagram_draws_the_floors_of_the_layers_contract() -> None:
    layers = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    contract = next(c for c in layers if c["id"] == "layers")["layers"]
    diagram = PAGE.read_text(encoding="utf-8").split("```text\n", 1)[1].split("```", 1)[0]
    drawn = [line.split(" ..")[0].strip() for line in diagram.splitlines() if ".." in line]
    assert drawn == [floor.replace("emulator.", "") for floor in contract]
