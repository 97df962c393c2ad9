"""The ports ``payemu serve`` listens on, for a harness as much as for a person: ``--port``
and ``--card-form-port`` (0: any free port, named in the banner), the card form turned off
(``--no-card-form``, ``PAYEMU_CARD_FORM_PORT=off``), the card form's listener and its banner
line, and the ``--ready-file`` written once requests are answered (:mod:`emulator.cli.ready`)."""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Callable

from emulator.domain.config import ConfigError, Settings

MAX_PORT = 65535
CARD_FORM_PORT_ENV = "PAYEMU_CARD_FORM_PORT"  # the default of --card-form-port when set


def card_form_port(args: argparse.Namespace, settings: Settings) -> None:
    """--card-form-port (0: any free port), --no-card-form, or $PAYEMU_CARD_FORM_PORT
    (a port, or ``off``)."""
    form_port = getattr(args, "card_form_port", None)
    text = os.environ.get(CARD_FORM_PORT_ENV, "").strip()
    if form_port is None and text:
        if text.lower() == "off":
            settings.card_form_port = None
        elif not text.isdigit() or int(text) > MAX_PORT:
            raise ConfigError(f"{CARD_FORM_PORT_ENV}={text}: a port from 0 (any free port) to {MAX_PORT}, or off")
        else:
            settings.card_form_port = int(text)
    if form_port is not None:
        if not 0 <= form_port <= MAX_PORT:
            raise ConfigError(f"--card-form-port {form_port}: a port is a number from 0 (any free port) to {MAX_PORT}")
        settings.card_form_port = form_port
    if getattr(args, "no_card_form", False):
        settings.card_form_port = None


def ready_writer(settings: Settings, form_sock: socket.socket | None, path: str | None) -> Callable[[], None] | None:
    """What writes ``--ready-file`` once the server listens (None without the option)."""
    if path is None:
        return None
    from emulator.cli import ready

    form_port = form_sock.getsockname()[1] if form_sock is not None else None
    data = ready.contents(settings.host, settings.port, form_port)
    return lambda: ready.write(path, data)


def card_form_listener(settings: Settings) -> tuple[socket.socket | None, str | None]:
    """The eWallet card form's socket on localhost (bound, or None) and the banner's line
    about it. A port in use is no reason to fail: the banner says so and what to do."""
    from emulator.edge.server import bind_socket

    port = settings.card_form_port
    if port is None:
        return None, "off (--no-card-form); the real eWallet library needs it on localhost:4200"
    if port and port == settings.port:
        return None, f"off: port {port} is payemu's own port; choose another --card-form-port"
    try:
        sock = bind_socket(settings.host, port)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        return None, (
            f"NOT served: cannot listen on localhost:{port} ({reason}). The real eWallet library opens its "
            f"card form at http://localhost:4200//pay/ only: stop what holds port {port} and restart payemu, "
            "or run payemu with --no-card-form and use the hosted page (/_emulator/pay/<token>) or "
            "payemu's payments-library.js instead"
        )
    return sock, f"http://localhost:{sock.getsockname()[1]}//pay/#/cardEntry (the eWallet library's form)"
