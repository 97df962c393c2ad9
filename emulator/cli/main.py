"""The ``payemu`` command: ``serve`` and ``scenarios check|list``."""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Sequence

from emulator.cli import environment
from emulator.cli.banner import banner
from emulator.cli.ports import CARD_FORM_PORT_ENV, MAX_PORT, card_form_listener, card_form_port, ready_writer
from emulator.domain.config import ConfigError, Settings, load_config_file, parse_clock_start
from emulator.domain.didyoumean import Parser, parse, subparser
from emulator.domain.release import INTERFACE_VERSION, __version__
from emulator.scenarios import ScenarioError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
READY_FILE_ENV = "PAYEMU_READY_FILE"  # --ready-file's variable (the Docker image's health check sets it)


SERVE_DESCRIPTION = """\
Run the emulator: the published payment orchestration interface, the control API under
/_emulator and the dashboard at /_emulator/. Every API key is its own tenant with its own
accounts, tokens, transactions, journal and clock."""

SERVE_EXAMPLES = """\
examples:
  payemu serve                                  # http://127.0.0.1:8080, keys sandbox-api-key / live-api-key
  payemu serve --port 9000 --seed 42            # another port; deterministic ids and clocks
  payemu serve --config demo.yaml --state demo.sqlite
                                                # preloaded demo keys; state kept across restarts
  payemu serve --scenarios rules/ --watch       # your scenario rules, reloaded when they change
  payemu serve --host 0.0.0.0 --any-key         # reachable from other machines; any key is a sandbox tenant
  payemu serve --openapi exports/1.0.9.json     # validate against an older published document

try it:
  curl -H 'X-Api-Key: sandbox-api-key' http://127.0.0.1:8080/Utils/apiKey"""


def build_parser(serving: bool = False) -> argparse.ArgumentParser:
    """The command line; with ``serving`` (``payemu serve``), its other commands left out."""
    parser = Parser(
        prog="payemu",
        description=f"Local emulator of the payment orchestration service (interface {INTERFACE_VERSION}).",
        epilog="Run 'payemu serve --help' for the server's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"payemu {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="run the emulator",
        description=SERVE_DESCRIPTION,
        epilog=SERVE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--host", default=None, help=f"address to listen on (default {DEFAULT_HOST}; in a container 0.0.0.0)"
    )
    serve.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"TCP port; 0: any free one, shown in the banner (default {DEFAULT_PORT})",
    )
    serve.add_argument(
        "--ready-file",
        metavar="PATH",
        help='once requests are answered, write {"url", "port", "cardFormUrl"} here as JSON, removed on exit '
        "(for test harnesses)",
    )
    serve.add_argument(
        "--config",
        metavar="FILE",
        help="YAML config file: keys (with preloaded accounts, tokens, ...), seed, failover mode",
    )
    serve.add_argument(
        "--scenarios",
        nargs="+",
        default=[],
        metavar="FILE_OR_DIR",
        help="scenario files or directories, matched before the built-in test cards",
    )
    serve.add_argument("--seed", type=int, default=None, help="deterministic ids, tokens, data and clocks")
    serve.add_argument("--clock-start", metavar="WHEN", help="where seeded clocks start (ISO 8601; default 2026-01-01)")
    serve.add_argument("--any-key", action="store_true", help="every new non-empty key is a fresh sandbox tenant")
    serve.add_argument(
        "--openapi", metavar="FILE", help="serve and validate against another published OpenAPI document (JSON or YAML)"
    )
    serve.add_argument("--watch", action="store_true", help="reload scenario files when they change")
    serve.add_argument(
        "--strict", action="store_true", help="400 for what the real service tolerates (unknown properties, ...)"
    )
    serve.add_argument(
        "--journal-size",
        type=int,
        default=None,
        metavar="N",
        help="requests kept in each tenant's journal, oldest dropped first (default 1000)",
    )
    serve.add_argument(
        "--admin-key",
        default=None,
        metavar="SECRET",
        help="X-Admin-Key needed to create tenants, reload scenarios and open the dashboard",
    )
    serve.add_argument(
        "--request-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="the whole request (headers and body) must arrive within this (default 60)",
    )
    serve.add_argument(
        "--shutdown-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="after SIGTERM/SIGINT, open connections get this long before payemu exits anyway (default 10)",
    )
    serve.add_argument(
        "--return-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an origin (https://shop.example) a payment page's returnUrl may have; repeatable",
    )
    serve.add_argument(
        "--state",
        metavar="FILE",
        help="keep every tenant's state in this SQLite file: restored at start, each change on disk within 1 s "
        "(answers wait while the file trails)",
    )
    serve.add_argument(
        "--card-form-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve the eWallet card form the real JS library opens, on localhost:PORT "
        f"(default ${CARD_FORM_PORT_ENV} or 4200, where the library looks for it; 0: any free port)",
    )
    serve.add_argument(
        "--no-card-form",
        action="store_true",
        help=f"do not serve the eWallet card form (or {CARD_FORM_PORT_ENV}=off)",
    )
    # -- exposure (emulator.stores.admission; docs/http-limits-and-exposure.md) --
    serve.add_argument(
        "--any-key-needs-admin",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --any-key, a new key becomes a tenant only on a request carrying X-Admin-Key "
        "(default: on when --host is not loopback, off on loopback)",
    )
    # -- connection limits (emulator.edge.connections; docs/http-limits-and-exposure.md) --
    serve.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="connections open at once; past it the longest-idle one is closed "
        "(default: the file-descriptor limit less an eighth)",
    )
    serve.add_argument(
        "--write-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a client that reads none of its answers for this long is disconnected (default 30)",
    )
    serve.add_argument(
        "--access-log",
        action="store_true",
        help="print one line per request: client, method, path, status, time in ms, API key masked",
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="how much the server logs (default info)",
    )

    # -- proxy, record, replay and verify (emulator.proxy) --
    from emulator.proxy import commands as proxying

    proxying.add_replay_options(serve)
    environment.name_variables(serve)  # PAYEMU_PORT, PAYEMU_HOST, ... (emulator.cli.environment)
    if serving:
        return parser
    proxying.add_parsers(commands)
    # --

    scenarios = commands.add_parser("scenarios", help="check or list scenario rules")
    actions = scenarios.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="validate scenario files; exit 1 on any error")
    check.add_argument("files", nargs="+", metavar="FILE", help="scenario files or directories to check")
    listing = actions.add_parser("list", help="print the effective rule table")
    listing.add_argument("files", nargs="*", metavar="FILE", help="extra scenario files (matched before the built-in)")
    listing.add_argument("--config", metavar="FILE", help="YAML config file whose scenario files are listed too")
    listing.add_argument("--gateway", metavar="NAME", help="only the rules that can fire on this gateway")
    table = actions.add_parser("table", help="print the Markdown table of the built-in test cards")
    table.add_argument(
        "--write-docs",
        "--write-readme",
        dest="write_docs",
        action="store_true",
        help="write it into docs/test-cards.md",
    )
    from emulator.state.commands import add_commands  # payemu state migrate OLD NEW

    add_commands(commands)
    return parser


def settings_from(args: argparse.Namespace) -> Settings:
    settings = Settings()
    if getattr(args, "config", None):
        settings = load_config_file(args.config, settings)
    if getattr(args, "host", None):
        settings.host = args.host
    if getattr(args, "port", None) is not None:
        if not 0 <= args.port <= MAX_PORT:
            raise ConfigError(f"--port {args.port}: a port is a number from 0 (any free port) to {MAX_PORT}")
        settings.port = args.port
    if getattr(args, "state", None):
        settings.state_path = args.state
    card_form_port(args, settings)
    if getattr(args, "seed", None) is not None:
        settings.seed = args.seed
    if getattr(args, "clock_start", None):
        settings.clock_start = parse_clock_start(args.clock_start, "--clock-start")
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
    _connection_limits(args, settings)
    settings.scenario_paths += list(getattr(args, "scenarios", None) or getattr(args, "files", None) or [])
    settings.log_level = getattr(args, "log_level", "info")
    settings.access_log = bool(getattr(args, "access_log", False))
    return settings


def _connection_limits(args: argparse.Namespace, settings: Settings) -> None:
    """--max-connections and --write-timeout (see emulator.edge.connections), and
    --any-key-needs-admin."""
    if getattr(args, "any_key_needs_admin", None) is not None:
        settings.any_key_needs_admin = args.any_key_needs_admin
    cap = getattr(args, "max_connections", None)
    if cap is not None:
        if cap < 1:
            raise ConfigError("--max-connections must be at least 1")
        settings.max_connections = cap
    timeout = getattr(args, "write_timeout", None)
    if timeout is not None:
        if timeout <= 0:
            raise ConfigError("--write-timeout must be a positive number of seconds")
        settings.write_timeout_seconds = timeout


def _origin(text: str) -> str:
    from emulator.endpoints.origins import canonical_origin

    origin = canonical_origin(text)
    if origin is None:
        raise ConfigError(f"--return-origin {text!r} is not an http(s) origin such as https://shop.example")
    return origin


def serve(settings: Settings, replay: tuple[str | None, bool] = (None, False), ready_file: str | None = None) -> int:
    gc.disable()  # while start-up builds what the server keeps; serve_forever() freezes it and turns it on
    from emulator.app.build import create_app
    from emulator.edge.protocol import require_parser
    from emulator.edge.server import bind_socket, serve_forever
    from emulator.endpoints.versions import DocumentError

    require_parser()  # before anything says payemu is listening
    if ready_file:
        from emulator.cli import ready

        problem = ready.check(ready_file)
        if problem:
            raise ConfigError(f"--ready-file {ready_file}: {problem}")
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    try:
        app = create_app(settings)
    except DocumentError as exc:
        raise ConfigError(f"--openapi: {exc}") from None
    from emulator.proxy.commands import replay_note, wrap_replay  # --replay (emulator.proxy)

    served = wrap_replay(app, *replay)  # the recording is read before anything listens
    try:
        sock = bind_socket(settings.host, settings.port)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(f"cannot listen on {settings.host}:{settings.port}: {reason.lower()}") from None
    settings.port = sock.getsockname()[1]  # the port chosen for --port 0
    form_sock, form_line = card_form_listener(settings)
    on_started = ready_writer(settings, form_sock, ready_file)
    print(banner(settings, app.state.runtime, form_line) + replay_note(served), flush=True)
    if settings.access_log:  # off: not even a wrapper (the fast path stays as measured)
        from emulator.cli import accesslog

        served = accesslog.wrap(served)
    if form_sock is None:
        serve_forever(served, settings, sock, on_started=on_started)
    else:
        from emulator.ui import cardform

        split = cardform.PortSplit(served, cardform.app, form_sock.getsockname()[1])
        serve_forever(split, settings, sock, [form_sock], on_started)
    if ready_file:
        from emulator.cli import ready

        ready.remove(ready_file)
    print("payemu stopped", flush=True)
    from emulator.state import exit_status

    return exit_status(app)  # 1 when a save of --state failed


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
        if args.write_docs:
            if not scenarios.report.PAGE.is_file():
                page = "/".join(scenarios.report.PAGE.parts[-2:])
                print(
                    f"payemu: --write-docs writes {page} of a payemu checkout; "
                    "this payemu is installed without one (run it from a clone)",
                    file=sys.stderr,
                )
                return 2
            changed = scenarios.write_readme()
            print(f"{scenarios.report.PAGE}: test-card table {'updated' if changed else 'already up to date'}")
        else:
            print(scenarios.builtin_table(), end="")
        return 0
    print(scenarios.describe(settings_from(args), getattr(args, "gateway", None)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(serving=given[:1] == ["serve"])
    args = parse(parser, given)
    if args.command != "serve":
        gc.enable()  # (off while payemu's modules were imported: emulator.__main__)
    try:
        if args.command == "serve":
            from emulator.proxy.commands import replay_wrapper  # --replay (emulator.proxy)

            environment.apply(subparser(parser, args), args)
            ready_file = args.ready_file or None
            return serve(settings_from(args), replay_wrapper(args), ready_file)
        if args.command in ("proxy", "verify"):  # emulator.proxy
            from emulator.proxy import commands as proxying

            return proxying.run(args, settings_from)
        if args.command == "state":
            from emulator.state import migrate

            return migrate.run(args)
        return scenarios_command(args)
    except ConfigError as exc:
        print(f"payemu: {exc}", file=sys.stderr)
        return 2
    except ScenarioError as exc:
        for problem in exc.problems:
            print(f"payemu: {problem}", file=sys.stderr)
        return 2
