"""emulator.cli.accesslog: `payemu serve --access-log` prints one line per request, the key
masked; without the option nothing wraps the app."""

from __future__ import annotations

import asyncio
import io
import re
import signal

import httpx

from emulator.app.build import create_app
from emulator.cli import accesslog
from emulator.cli.main import CARD_FORM_PORT_ENV
from tests.support.servers import PayemuProcess

LINE = re.compile(r"^(\S+) (\S+) (\S+) (\S+) (\d+\.\d) ms key=(\S+)$")


def test_mask_key() -> None:
    assert accesslog.mask_key("sandbox-api-key") == "sand…ey"
    assert accesslog.mask_key("short") == "…"
    assert accesslog.mask_key(None) == "-"


def test_in_process_one_line_per_request_with_status_and_masked_key() -> None:
    out = io.StringIO()
    app = accesslog.wrap(create_app(), out)

    async def calls() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://payemu") as client:
            await client.get("/Utils/apiKey", headers={"X-Api-Key": "sandbox-api-key"})
            await client.get("/Tools/luhn?number=4111111111111111", headers={"X-Api-Key": "nope-not-a-key"})
            await client.get("/Utils/4111111111111111")

    asyncio.run(calls())
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    first, second, third = (match.groups() for match in parsed if match)
    assert first[1:4] == ("GET", "/Utils/apiKey", "200") and first[5] == "sand…ey"
    assert second[1:4] == ("GET", "/Tools/luhn", "401") and second[5] == "nope…ey"  # no query string
    assert third[2] == "/Utils/411111******1111" and third[3] == "404" and third[5] == "-"
    assert "sandbox-api-key" not in out.getvalue()
    assert app.state.runtime is not None  # the wrapped app's state stays reachable


def test_serve_with_and_without_the_option() -> None:
    for flag in (["--access-log"], []):
        with PayemuProcess("serve", *flag, env={CARD_FORM_PORT_ENV: "0"}) as process:
            charge = {
                "amount": 25.0,
                "currency": "USD",
                "card": {
                    "cardHolderName": "J",
                    "cardNumber": "4000000000000002",
                    "expirationMonth": 12,
                    "expirationYear": 2030,
                },
                "paymentGatewayAccount": {"paymentGatewayName": "NULLSuccess", "credentials": []},
            }
            url = f"{process.url}/PaymentGateway/charge"
            answer = httpx.post(url, json=charge, headers={"X-Api-Key": "live-api-key"})
            assert answer.status_code == 200
            _, text = process.stop(signal.SIGTERM)
        logged = [line for line in text.splitlines() if " POST /PaymentGateway/charge " in line]
        if flag:
            assert "access log     on" in text
            assert len(logged) == 1, text
            match = LINE.match(logged[0])
            assert match and match.group(4) == "200" and match.group(6) == "live…ey", logged
            assert "live-api-key" not in logged[0]  # (the banner lists the configured keys)
        else:
            assert logged == [], text
