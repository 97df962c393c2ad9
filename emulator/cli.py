"""The ``payemu`` command: ``serve`` and ``scenarios check|list``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from emulator import INTERFACE_VERSION, __version__
from emulator.config import ConfigError, Settings, load_config_file
from emulator.scenarios import ScenarioError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="payemu",
        description=f"Local emulator of the payment orchestration service (interface {INTERFACE_VERSION}).",
    )
    parser.add_argument("--version", action="version", version=f"payemu {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the emulator")
    serve.add_argument("--host", default=None, help=f"address to listen on (default {DEFAULT_HOST})")
    serve.add_argument("--port", type=int, default=None, help=f"port (default {DEFAULT_PORT})")
    serve.add_argument("--config", help="YAML config file (keys, seed, failover mode, ...)")
    serve.add_argument(
        "--scenarios", nargs="+", default=[], metavar="FILE_OR_DIR",
        help="scenario files or directories, matched before the built-in test cards",
    )
    serve.add_argument("--seed", type=int, default=None, help="deterministic ids, tokens, data and clocks")
    serve.add_argument("--any-key", action="store_true", help="every new non-empty key is a fresh sandbox tenant")
    serve.add_argument("--openapi", help="validate against another published OpenAPI document")
    serve.add_argument("--watch", action="store_true", help="reload scenario files when they change")
    serve.add_argument(
        "--strict", action="store_true", help="400 for what the real service tolerates (unknown properties, ...)"
    )
    serve.add_argument(
        "--journal-size", type=int, default=None, metavar="N",
        help="requests kept in each tenant's journal, oldest dropped first (default 1000)",
    )
    serve.add_argument(
        "--admin-key", default=None, metavar="SECRET",
        help="X-Admin-Key needed to create tenants, reload scenarios and open the dashboard",
    )
    serve.add_argument(
        "--request-timeout", type=float, default=None, metavar="SECONDS",
        help="the whole request (headers and body) must arrive within this (default 60)",
    )
    serve.add_argument(
        "--shutdown-timeout", type=float, default=None, metavar="SECONDS",
        help="after SIGTERM/SIGINT, open connections get this long before payemu exits anyway (default 10)",
    )
    serve.add_argument(
        "--return-origin", action="append", default=[], metavar="ORIGIN",
        help="an origin (https://shop.example) a payment page's returnUrl may have; repeatable",
    )
    serve.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
    )

    scenarios = commands.add_parser("scenarios", help="check or list scenario rules")
    actions = scenarios.add_subparsers(dest="action", required=True)
    check = actions.add_parser("check", help="validate scenario files; exit 1 on any error")
    check.add_argument("files", nargs="+")
    listing = actions.add_parser("list", help="print the effective rule table")
    listing.add_argument("files", nargs="*", help="extra scenario files (matched before the built-in ones)")
    listing.add_argument("--config", help="YAML config file")
    table = actions.add_parser("table", help="print the Markdown table of the built-in test cards")
    table.add_argument("--write-readme", action="store_true", help="write it into README.md between its markers")
    return parser


def settings_from(args: argparse.Namespace) -> Settings:
    settings = Settings()
    if getattr(args, "config", None):
        settings = load_config_file(args.config, settings)
    if getattr(args, "host", None):
        settings.host = args.host
    if getattr(args, "port", None) is not None:
        settings.port = args.port
    if getattr(args, "seed", None) is not None:
        settings.seed = args.seed
    if getattr(args, "any_key", False):
        settings.any_key = True
    if getattr(args, "openapi", None):
        settings.openapi_path = args.openapi
    if getattr(args, "watch", False):
        settings.watch = True
    if getattr(args, "strict", False):
        settings.strict = True
    if getattr(args, "journal_size", None) is not None:
        if args.journal_size < 1:
            raise ConfigError("--journal-size must be at least 1")
        settings.journal_size = args.journal_size
    if getattr(args, "admin_key", None):
        if len(args.admin_key) < 8:
            raise ConfigError("--admin-key must be at least 8 characters long")
        settings.admin_key = args.admin_key
    for name in ("request_timeout", "shutdown_timeout"):
        value = getattr(args, name, None)
        if value is not None:
            if value < 0 or (name == "request_timeout" and value == 0):
                raise ConfigError(f"--{name.replace('_', '-')} must be a positive number of seconds")
            setattr(settings, f"{name}_seconds", value)
    settings.return_origins += tuple(_origin(o) for o in getattr(args, "return_origin", None) or [])
    settings.scenario_paths += list(getattr(args, "scenarios", None) or getattr(args, "files", None) or [])
    settings.log_level = getattr(args, "log_level", "info")
    return settings


def _origin(text: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"--return-origin {text!r} is not an http(s) origin such as https://shop.example")
    return f"{parts.scheme}://{parts.netloc}".lower()


def banner(settings: Settings, schema_version: str, schema_source: str) -> str:
    base = f"http://{settings.host}:{settings.port}"
    keys = ", ".join(f"{k.key} ({'sandbox' if k.is_sandbox else 'live'})" for k in settings.keys)
    lines = [
        f"payemu {__version__} — payment orchestration emulator, interface {INTERFACE_VERSION}",
        f"  listening on   {base}",
        f"  API keys       {keys}{' (+ any key: --any-key)' if settings.any_key else ''}",
        f"  schema         {schema_source} (version {schema_version})",
        f"  dashboard      {base}/_emulator/",
    ]
    if settings.seed is not None:
        lines.append(f"  seed           {settings.seed}")
    lines.append(f"  admin key      {'set (X-Admin-Key)' if settings.admin_key else 'none'}")
    from emulator.http.admin import exposure_warning

    warning = exposure_warning(settings)
    if warning:
        lines.append(warning)
    return "\n".join(lines)


def serve(settings: Settings) -> int:
    from emulator.http.app import create_app
    from emulator.server import serve_forever

    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    from emulator.http.versions import DocumentError

    try:
        app = create_app(settings)
    except DocumentError as exc:
        raise ConfigError(f"--openapi: {exc}") from None
    runtime = app.state.runtime
    print(banner(settings, runtime.api.version, runtime.api.source), flush=True)
    serve_forever(app, settings)
    print("payemu stopped", flush=True)
    return 0


def scenarios_command(args: argparse.Namespace) -> int:
    from emulator import scenarios

    if args.action == "check":
        problems = scenarios.check_files(args.files)
        for problem in problems:
            print(problem, file=sys.stderr)
        if not problems:
            print(f"{len(args.files)} file(s) OK")
        return 1 if problems else 0
    if args.action == "table":
        if args.write_readme:
            changed = scenarios.write_readme()
            print(f"{scenarios.report.README}: test-card table {'updated' if changed else 'already up to date'}")
        else:
            print(scenarios.builtin_table(), end="")
        return 0
    settings = settings_from(args)
    print(scenarios.describe(settings))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return serve(settings_from(args))
        return scenarios_command(args)
    except ConfigError as exc:
        print(f"payemu: {exc}", file=sys.stderr)
        return 2
    except ScenarioError as exc:
        print("payemu: scenario files have problems:", file=sys.stderr)
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
