"""The command-line side of the package: ``payemu proxy``, ``payemu verify`` and ``serve --replay``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from emulator.domain.config import ConfigError, Settings

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from emulator.app.application import App

PROXY_EXAMPLES = """\
examples:
  payemu proxy --upstream https://sandbox.example.com                 # on http://127.0.0.1:8080
  payemu proxy --upstream https://sandbox.example.com --record run.har --port 9000
  payemu serve --replay run.har --replay-strict                       # answer from the recording

Point your client at the proxy: each answer is the upstream's; X-Payemu-Violations names
what broke the interface document, and the dashboard (/_emulator/) shows the journal."""

VERIFY_EXAMPLES = """\
examples:
  payemu verify --upstream https://sandbox.example.com --api-key "$SANDBOX_KEY"
  payemu verify --upstream https://sandbox.example.com --api-key "$SANDBOX_KEY" --json drift.json

exit status: 0 nothing drifts, 1 something does, 2 usage or connection error (or a live key)."""


def add_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    proxy = commands.add_parser(
        "proxy",
        help="forward to the real service, validate both ways, record as HAR",
        description="Forward every request to the upstream service and return its answers unchanged, "
        "validating requests and answers against the interface document.",
        epilog=PROXY_EXAMPLES,
        formatter_class=raw,
    )
    proxy.add_argument("--upstream", required=True, metavar="URL", help="the service's base URL (http or https)")
    proxy.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    proxy.add_argument("--port", type=int, default=None, help="TCP port (default 8080)")
    proxy.add_argument("--record", metavar="FILE", help="append every exchange to this HAR 1.2 file (masked)")
    proxy.add_argument("--openapi", metavar="FILE", help="validate against another published OpenAPI document")
    proxy.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="upstream deadline (30)")
    proxy.add_argument("--admin-key", default=None, metavar="SECRET", help="X-Admin-Key for the dashboard")
    proxy.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"], help="(info)"
    )

    verify = commands.add_parser(
        "verify",
        help="run the conformance script against the real service and payemu; print the drift",
        description="Run payemu's conformance script against the upstream service and against a local payemu, "
        "and report per operation where they differ.",
        epilog=VERIFY_EXAMPLES,
        formatter_class=raw,
    )
    verify.add_argument("--upstream", required=True, metavar="URL", help="the service's base URL (your sandbox)")
    verify.add_argument("--api-key", required=True, metavar="KEY", help="a sandbox API key of the upstream")
    verify.add_argument(
        "--account", metavar="NAME", help="pay through this gateway account instead of the mock gateways"
    )
    verify.add_argument("--json", metavar="FILE", help="also write the report as JSON (format: payemu-verify 1)")
    verify.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="per request (30)")


def add_replay_options(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--replay", metavar="FILE", help="answer requests recorded in this HAR file (payemu proxy --record)"
    )
    serve.add_argument(
        "--replay-strict",
        action="store_true",
        help="with --replay: a request not in the recording gets a 404 naming the nearest recorded one",
    )


def replay_wrapper(args: argparse.Namespace) -> tuple[str | None, bool]:
    path = getattr(args, "replay", None)
    strict = bool(getattr(args, "replay_strict", False))
    if strict and not path:
        raise ConfigError("--replay-strict needs --replay FILE")
    return path, strict


def wrap_replay(app: App, path: str | None, strict: bool) -> ASGIApp:
    if not path:
        return app
    from emulator.proxy.har import HarError
    from emulator.proxy.replay import Recording, Replay

    try:
        recording = Recording(path)
    except HarError as exc:
        raise ConfigError(f"--replay: {exc}") from None
    return Replay(app, recording, strict)


def replay_note(served: object) -> str:
    """The banner's line about ``--replay`` ("" without it)."""
    # loaded by wrap_replay only: without --replay, serving imports neither the replay
    # nor the HTTP client it forwards with (httpx, whose command-line part alone takes 40 ms)
    replay = sys.modules.get("emulator.proxy.replay")
    if replay is None or not isinstance(served, replay.Replay):
        return ""
    recording = served.recording
    strict = ", strict: a request not in it gets a 404" if served.strict else ", else the simulation answers"
    return f"\n  replay         {recording.path} ({len(recording.entries)} exchanges{strict})"


def run(args: argparse.Namespace, settings_from: Callable[[argparse.Namespace], Settings]) -> int:
    """``payemu proxy`` or ``payemu verify``; ``settings_from`` is handed down by the command line."""
    if args.command == "proxy":
        return proxy_command(args, settings_from(args))
    from emulator.proxy import verify

    return verify.main(args)


def proxy_command(args: argparse.Namespace, settings: Settings) -> int:
    from emulator.app.build import create_app
    from emulator.edge.server import bind_socket, serve_forever
    from emulator.endpoints.versions import DocumentError
    from emulator.proxy.forward import Proxy, Upstream, check_url
    from emulator.proxy.har import HarError, HarWriter

    upstream = Upstream(check_url(args.upstream), args.timeout)
    if args.timeout <= 0:
        raise ConfigError("--timeout must be a positive number of seconds")
    settings.any_key = True  # every key that goes through has a journal
    settings.card_form_port = None
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    try:
        local = create_app(settings)
    except DocumentError as exc:
        raise ConfigError(f"--openapi: {exc}") from None
    recorder = None
    if args.record:
        try:
            recorder = HarWriter(args.record)
        except (HarError, OSError) as exc:
            raise ConfigError(f"--record: {exc}") from None
    try:
        sock = bind_socket(settings.host, settings.port)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise ConfigError(f"cannot listen on {settings.host}:{settings.port}: {reason}") from None
    base = f"http://{settings.host}:{settings.port}"
    print(f"payemu proxy — {base} → {upstream.url}", flush=True)
    print(f"  schema         {local.state.runtime.api.source}", flush=True)
    print(f"  recording      {args.record or 'off (--record FILE)'}", flush=True)
    print(f"  dashboard      {base}/_emulator/", flush=True)
    try:
        serve_forever(Proxy(local, upstream, recorder), settings, sock)
    finally:
        if recorder is not None:
            recorder.close()
    print("payemu proxy stopped", flush=True)
    return 0
