"""A merchant's site paying through payemu with the real eWallet JS library.

    cd examples/ewallet-page && npm ci          # @orchestrasolutions/ewallet from the npm registry
    payemu serve                                # in another terminal (it serves the card form on :4200)
    python3 server.py                           # then open http://localhost:3000/

The server does what a merchant's server does: it creates the eWallet session with its API
key (``POST /EWalletOperations``) and hands only the session token to the page, and it
verifies the result token the page sends back (``POST /EWalletOperations/validateResults``)
before believing it. The page (``index.html``, ``page.js``) loads the library from
``node_modules`` and pays in the library's card form, payemu's own on ``localhost:4200``:
the library opens it only when the page itself is on localhost.

Before serving, it sets up its payemu tenant as a test suite would (payemu-only calls):
the gateway accounts of the three kinds of session the page offers, and a runtime scenario
rule that makes sessions of 30.00 ask for a one-time code.

Standard library only. Options: ``--payemu URL`` (http://127.0.0.1:8080), ``--key``
(sandbox-api-key), ``--port`` (3000), ``--modules DIR`` (node_modules beside this file).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LIBRARY = Path("@orchestrasolutions", "ewallet", "dist", "index.js")
OTP_AMOUNT = 30.0
ACCOUNTS = {
    # Stripe (simulated) follows payemu's test cards: 4000 0000 0000 0002 is declined
    "shopStripe": {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_shop"}]},
    "shopFailing": {"paymentGatewayName": "NULLFailure", "credentials": []},
}
OTP_RULE = {
    "name": "example-otp-challenge",
    "description": "eWallet sessions of 30.00 ask for a one-time code (1234), then succeed",
    "when": {"amount": OTP_AMOUNT},
    "then": {"operationResultCode": "Success", "authentication": "OtpByGenericUI"},
}
KINDS: dict[str, dict[str, Any]] = {
    "card": {"amount": 12.5, "paymentGatewayAccountId": "shopStripe"},
    "failover": {
        "amount": 42.0,
        "paymentGatewayAccountId": "shopFailing",
        "fallbackUpgs": [{"paymentGatewayAccountId": "shopStripe"}],
    },
    "otp": {"amount": OTP_AMOUNT, "paymentGatewayAccountId": "shopStripe"},
}


class Payemu:
    def __init__(self, base: str, key: str) -> None:
        self.base = base.rstrip("/")
        self.key = key

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("X-Api-Key", self.key)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def prepare(self) -> None:
        for name, account in ACCOUNTS.items():
            status, body = self.call("PUT", f"/PaymentGatewayAccounts/{name}", account)
            if status >= 300:
                raise SystemExit(f"payemu refused the account {name}: {status} {body}")
        status, body = self.call("POST", "/_emulator/scenarios", OTP_RULE)
        if status >= 300:
            raise SystemExit(f"payemu refused the OTP rule: {status} {body}")

    def start_session(self, kind: str) -> tuple[int, Any]:
        request = {"operation": "CHARGE", "mode": "TEST", "currencyCode": "EUR", "paymentNote": f"example {kind}"}
        return self.call("POST", "/EWalletOperations", {**request, **KINDS[kind]})

    def validate(self, token: str) -> tuple[int, Any]:
        return self.call("POST", "/EWalletOperations/validateResults", token)


def handler_for(payemu: Payemu, modules: Path) -> type[BaseHTTPRequestHandler]:
    files = {
        "/": (HERE / "index.html", "text/html; charset=utf-8"),
        "/page.js": (HERE / "page.js", "text/javascript; charset=utf-8"),
        "/ewallet.js": (modules / LIBRARY, "text/javascript; charset=utf-8"),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = files.get(self.path.split("?", 1)[0])
            if found is None or not found[0].is_file():
                missing = "run npm ci in examples/ewallet-page" if found else "no such page"
                self.reply(404, {"error": missing})
                return
            self.send(200, found[0].read_bytes(), found[1])

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                asked = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self.reply(400, {"error": "send JSON"})
                return
            if self.path == "/session":
                kind = asked.get("kind") if isinstance(asked, dict) else None
                if kind not in KINDS:
                    self.reply(400, {"error": f"kind is one of {', '.join(KINDS)}"})
                    return
                status, body = payemu.start_session(kind)
                self.reply(200 if status == 200 else 502, {"token": body["token"]} if status == 200 else body)
            elif self.path == "/validate":
                token = asked.get("token") if isinstance(asked, dict) else None
                status, body = payemu.validate(token if isinstance(token, str) else "")
                self.reply(200 if status == 200 else 400, {"valid": status == 200, "result": body})
            else:
                self.reply(404, {"error": "no such call"})

        def reply(self, status: int, body: Any) -> None:
            self.send(status, json.dumps(body).encode(), "application/json")

        def send(self, status: int, body: bytes, media: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A merchant page paying through payemu with the real eWallet library")
    parser.add_argument("--payemu", default="http://127.0.0.1:8080", help="payemu's base URL")
    parser.add_argument("--key", default="sandbox-api-key", help="the merchant's API key at payemu")
    parser.add_argument("--port", type=int, default=3000, help="port of this site (on localhost)")
    parser.add_argument("--modules", type=Path, default=HERE / "node_modules", help="the npm ci folder")
    args = parser.parse_args(argv)
    if not (args.modules / LIBRARY).is_file():
        print(f"{args.modules / LIBRARY} is missing: run `npm ci` in {HERE}", file=sys.stderr)
        return 2
    payemu = Payemu(args.payemu, args.key)
    payemu.prepare()
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), handler_for(payemu, args.modules))
    print(f"merchant site on http://localhost:{httpd.server_address[1]}/ (payemu at {payemu.base})", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        httpd.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
