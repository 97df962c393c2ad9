"""pytest plugin for test suites that pay through payemu (entry point ``pytest11: payemu``).

``payemu_server`` (session): an in-process payemu on a free port (or ``--payemu-port``), or
the one at ``--payemu-url`` / ``PAYEMU_URL``. ``payemu`` (function): a fresh isolated tenant
with ``client`` and the control API's helpers (``add_scenario``, ``requests``, ``count``,
``advance_clock``, ...), removed when the test ends. Every tenant of a session shares one
connection pool, so the fixture costs a test about a millisecond. Importing this module
starts nothing. A mistake the plugin can see before the tests run (a bad scenarios or
config file, a URL where no payemu answers within :data:`CONNECT_SECONDS`) stops the run
with one line (``pytest.UsageError``, exit status 4).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import httpx
    from starlette.applications import Starlette

    from emulator.cli.sharedpool import SharedPool
    from emulator.domain.config import Settings
    from emulator.edge.server import BackgroundServer

URL_ENV = "PAYEMU_URL"
SEED_ENV = "PAYEMU_SEED"
CONNECT_SECONDS = 5.0  # how long a --payemu-url is retried before the run stops
_SERVER = pytest.StashKey["PayemuServer"]()
_REMOTE = pytest.StashKey["PayemuServer"]()
_SETTINGS = pytest.StashKey["Settings"]()


class ControlError(AssertionError):
    """A control API call that did not succeed (the message holds payemu's answer)."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"payemu {method} {path} answered {status}: {body}")
        self.status = status
        self.body = body


# -- the server ------------------------------------------------------------------------
class PayemuServer:
    """A payemu the tests talk to: in-process (``app`` set) or remote (``app`` None)."""

    def __init__(self, base_url: str, seeded: bool, app: Starlette | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.seeded = seeded
        self.app = app
        self.startup_seconds = 0.0
        self._server: BackgroundServer | None = None
        self._pool: SharedPool | None = None

    @property
    def pool(self) -> SharedPool:
        """The connection pool every tenant's client of this server shares (made on first use)."""
        if self._pool is None:
            from emulator.cli.sharedpool import SharedPool

            self._pool = SharedPool()
        return self._pool

    @classmethod
    def start(cls, settings: Settings | None = None, port: int = 0) -> PayemuServer:
        """Serve a new app on ``port`` of the loopback (0: a free one); returns once it accepts requests."""
        from emulator.app.build import create_app
        from emulator.domain.config import Settings
        from emulator.edge.server import BackgroundServer

        began = time.perf_counter()
        settings = settings or Settings()
        app = create_app(settings)
        running = BackgroundServer(app, settings, port=port)
        made = cls(running.url, settings.seed is not None, app)
        made._server = running
        made.startup_seconds = time.perf_counter() - began
        return made

    @classmethod
    def connect(cls, base_url: str, wait: float = CONNECT_SECONDS) -> PayemuServer:
        """A payemu already running at ``base_url`` (checked through its health call, retried
        for ``wait`` seconds while nothing answers: a container may still be starting)."""
        import httpx

        url = base_url.rstrip("/")
        deadline = time.monotonic() + wait
        while True:
            try:
                response = httpx.get(url + "/_emulator/health", timeout=max(0.5, min(5.0, wait)))
                break
            except httpx.HTTPError as exc:
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"no payemu answers at {url} after {wait:g} s: {exc}") from exc
                time.sleep(0.25)
        try:
            seeded = bool(response.json().get("seeded")) if response.status_code == 200 else None
        except ValueError:
            seeded = None
        if seeded is None:
            raise RuntimeError(f"{url} is not a payemu (its /_emulator/health answered {response.status_code})")
        return cls(url, seeded)

    def stop(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._server is not None:
            self._server.stop()
            self._server = None

    def tenant(self, sandbox: bool = True, user_name: str | None = None, label: str | None = None) -> Payemu:
        """A fresh tenant. On a seeded payemu, ``label`` (e.g. the test's node id) fixes its
        key, so the test gets the same ids and codes whatever runs before or beside it."""
        body: dict[str, Any] = {"sandbox": sandbox}
        if user_name:
            body["userName"] = user_name
        if label is not None and self.seeded:
            body["apiKey"] = "pytest-" + hashlib.sha256(label.encode()).hexdigest()[:32]
        status, text = self.pool.call(self.base_url, "POST", "/_emulator/tenants", body)
        if status == 409 and "apiKey" in body:
            # the key is in use (another session on this server): take a random one
            del body["apiKey"]
            status, text = self.pool.call(self.base_url, "POST", "/_emulator/tenants", body)
        if status != 201:
            raise ControlError("POST", "/_emulator/tenants", status, text)
        return Payemu(self.base_url, json.loads(text), self.pool)


# -- one tenant --------------------------------------------------------------------------
class Payemu:
    """One isolated tenant of a payemu, and the control calls a test needs."""

    def __init__(self, base_url: str, tenant: dict[str, Any], pool: SharedPool | None = None) -> None:
        if pool is None:
            from emulator.cli.sharedpool import SharedPool

            pool = SharedPool()
        self.base_url = base_url
        self.api_key: str = tenant["apiKey"]
        self.account_id: int = tenant["accountId"]
        self.user_name: str = tenant["userName"]
        self.is_sandbox: bool = tenant["isSandbox"]
        self._pool = pool
        self._client: httpx.Client | None = None

    @property
    def client(self) -> httpx.Client:
        """An ``httpx.Client`` for this tenant: its base URL and ``X-Api-Key`` (made on first use)."""
        if self._client is None:
            self._client = self._pool.client(self.base_url, {"X-Api-Key": self.api_key})
        return self._client

    def __repr__(self) -> str:
        return f"<payemu tenant {self.api_key} at {self.base_url}>"

    def _control(self, method: str, path: str, expect: int = 200, **kwargs: Any) -> Any:
        response = self.client.request(method, "/_emulator" + path, **kwargs)
        if response.status_code != expect:
            raise ControlError(method, "/_emulator" + path, response.status_code, response.text)
        return response.json() if response.content else None

    def add_scenario(self, rules: dict[str, Any] | list[dict[str, Any]] | str) -> list[dict[str, Any]]:
        """Add runtime rules for this tenant, in front of every other rule: one rule, a list,
        a ``{"scenarios": [...]}`` dict, or YAML text of a scenario file. Returns them."""
        if isinstance(rules, str):
            content, media = rules.encode(), "application/yaml"
        else:
            content, media = json.dumps(rules).encode(), "application/json"
        rules_added: list[dict[str, Any]] = self._control(
            "POST", "/scenarios", 201, content=content, headers={"Content-Type": media}
        )["rules"]
        return rules_added

    def remove_scenario(self, name: str | None = None) -> list[str]:
        """Remove one runtime rule by name, or all of them; returns the removed names."""
        removed: list[str] = self._control("DELETE", "/scenarios" + (f"/{name}" if name else ""))["removed"]
        return removed

    def scenarios(self) -> list[dict[str, Any]]:
        """The effective rules for this tenant, first match first."""
        rules: list[dict[str, Any]] = self._control("GET", "/scenarios")["rules"]
        return rules

    def requests(self, **filters: str | int | None) -> list[dict[str, Any]]:
        """Journal entries of this tenant, oldest first, every page; ``filters``: :data:`JOURNAL_FILTERS`
        (and ``pageSize``, the entries each call reads). Another name is a ``TypeError``; a value
        payemu does not know (a gateway, an operationId) a :class:`ControlError`."""
        params = _filters("requests", filters, (*JOURNAL_FILTERS, "pageSize"))
        entries: list[dict[str, Any]] = []
        while True:
            page = self._control("GET", "/requests", params=params)
            entries += page["requests"]
            if page["next"] is None:
                return entries
            params["after"] = page["next"]

    def count(self, **filters: str | int | None) -> int:
        """How many journal entries of this tenant pass ``filters`` (as :meth:`requests`)."""
        params = _filters("count", filters, JOURNAL_FILTERS)
        return int(self._control("GET", "/requests/count", params=params)["count"])

    def advance_clock(self, by: str | float) -> dict[str, Any]:
        """Move this tenant's clock forward (``"8d"``, ``"1h30m"``, or seconds)."""
        answer: dict[str, Any] = self._control("POST", "/clock", json={"advance": by})
        return answer

    def clock(self) -> dict[str, Any]:
        answer: dict[str, Any] = self._control("GET", "/clock")
        return answer

    def transactions(self) -> list[dict[str, Any]]:
        """Every transaction of the tenant, oldest first (all pages of the listing)."""
        found: list[dict[str, Any]] = []
        path = "/transactions"
        while True:
            page = self._control("GET", path)
            found += page["transactions"]
            if not page.get("next"):
                return found
            path = f"/transactions?after={page['next']}"

    def add_certificate(self, name: str) -> list[str]:
        names: list[str] = self._control("POST", "/certificates", 201, json={"name": name})["certificates"]
        return names

    def reset(self) -> None:
        """Empty every store of this tenant (accounts, tokens, ledger, journal, clock, rules)."""
        self._control("POST", "/reset")

    def close(self, remove: bool = True) -> None:
        """Close the client; ``remove`` also deletes the tenant from the server."""
        try:
            if remove:
                self._pool.call(self.base_url, "DELETE", "/_emulator/tenants/current", key=self.api_key)
        finally:
            if self._client is not None:
                self._client.close()


JOURNAL_FILTERS = tuple("path since until method status operationId resultCode gateway myRef limit".split())  # noqa: SIM905
"""The filters of :meth:`Payemu.requests` and :meth:`Payemu.count` (the control API's)."""


def _filters(method: str, filters: dict[str, str | int | None], allowed: tuple[str, ...]) -> dict[str, str | int]:
    """The query of a journal call; ``TypeError`` for a filter that does not exist (a
    mistyped one would otherwise match every entry)."""
    from emulator.domain.didyoumean import unknown

    for name in filters:
        if name not in allowed:
            raise TypeError(f"{method}() got an {unknown('filter', name, allowed)}")
    return {key: value for key, value in filters.items() if value is not None}


# -- pytest wiring ---------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("payemu", "payemu payment emulator")
    group.addoption(
        "--payemu-url",
        default=None,
        help=f"use the payemu running at this URL instead of an in-process one (or set {URL_ENV})",
    )
    group.addoption(
        "--payemu-seed",
        type=int,
        default=None,
        help=f"seed of the in-process payemu: byte-identical ids and codes per test (or set {SEED_ENV})",
    )
    group.addoption(
        "--payemu-scenarios",
        action="append",
        default=[],
        metavar="FILE_OR_DIR",
        help="scenario files for the in-process payemu (repeatable)",
    )
    group.addoption("--payemu-config", default=None, help="payemu config file for the in-process payemu")
    group.addoption(
        "--payemu-port",
        type=int,
        default=None,
        help="port of the in-process payemu on 127.0.0.1 (default: a free one; under pytest-xdist, "
        "worker gwN takes PORT+N)",
    )
    group.addoption(
        "--payemu-keep-tenants",
        action="store_true",
        help="keep each test's tenant after the test (to look at its journal afterwards)",
    )


def _settings(config: pytest.Config) -> Settings:
    """The in-process payemu's settings; ``pytest.UsageError`` naming a bad file or value."""
    from emulator.domain.config import ConfigError, Settings, load_config_file
    from emulator.scenarios import check_files

    settings = Settings()
    try:
        if config.getoption("payemu_config"):
            settings = load_config_file(config.getoption("payemu_config"), settings)
    except ConfigError as exc:
        raise pytest.UsageError(f"--payemu-config: {_one_line(str(exc))}") from None
    seed = config.getoption("payemu_seed")
    if seed is None and os.environ.get(SEED_ENV):
        try:
            seed = int(os.environ[SEED_ENV])
        except ValueError:
            raise pytest.UsageError(f"{SEED_ENV}={os.environ[SEED_ENV]}: a seed is a whole number") from None
    if seed is not None:
        settings.seed = seed
    settings.scenario_paths += list(config.getoption("payemu_scenarios"))
    if settings.scenario_paths:
        problems = check_files(settings.scenario_paths)
        if problems:
            raise pytest.UsageError(f"--payemu-scenarios: {_one_line('; '.join(problems))}")
    settings.log_level = "warning"
    return settings


def _one_line(text: str, limit: int = 2000) -> str:
    """``text`` on one line, at most ``limit`` characters (a file may hold many problems)."""
    return " | ".join(part.strip() for part in text.splitlines() if part.strip())[:limit]


def _port(config: pytest.Config) -> int:
    """--payemu-port, shifted by the pytest-xdist worker's number (gw3: PORT+3)."""
    port: int | None = config.getoption("payemu_port")
    if port is None:
        return 0
    worker = getattr(config, "workerinput", {}).get("workerid", "")
    if worker.startswith("gw") and worker[2:].isdigit():
        port += int(worker[2:])
    if not 0 <= port <= 65535:
        raise pytest.UsageError(f"--payemu-port {port}: a port is a number from 0 (any free port) to 65535")
    return port


def pytest_configure(config: pytest.Config) -> None:
    """Check what the options name before any test runs: files, port, URL (one line each)."""
    if config.getoption("payemu_config", None) or config.getoption("payemu_scenarios", None):
        config.stash[_SETTINGS] = _settings(config)
    if config.getoption("payemu_port", None) is not None:
        _port(config)


def pytest_sessionstart(session: pytest.Session) -> None:
    """A --payemu-url / PAYEMU_URL must answer (retried for a few seconds) before the tests run."""
    config = session.config
    url = config.getoption("payemu_url") or os.environ.get(URL_ENV)
    if url and not hasattr(config, "workerinput"):  # once, by the controller under pytest-xdist
        try:
            config.stash[_REMOTE] = PayemuServer.connect(url)
        except RuntimeError as exc:
            raise pytest.UsageError(f"--payemu-url: {exc}") from None


@pytest.fixture(scope="session")
def payemu_server(pytestconfig: pytest.Config) -> Iterator[PayemuServer]:
    """The payemu of this test session (see the module docstring)."""
    url = pytestconfig.getoption("payemu_url") or os.environ.get(URL_ENV)
    if url:
        remote = pytestconfig.stash.get(_REMOTE, None)
        yield remote if remote is not None else PayemuServer.connect(url)
        return
    settings = pytestconfig.stash.get(_SETTINGS, None) or _settings(pytestconfig)
    port = _port(pytestconfig)
    try:
        server = PayemuServer.start(settings, port)
    except OSError as exc:
        raise pytest.UsageError(f"--payemu-port {port}: cannot listen: {exc.strerror or exc}") from None
    pytestconfig.stash[_SERVER] = server
    try:
        yield server
    finally:
        server.stop()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    server = config.stash.get(_SERVER, None)
    if server is not None:
        terminalreporter.write_line(
            f"payemu: in-process server at {server.base_url} started in {server.startup_seconds:.3f} s"
        )


@pytest.fixture
def payemu(payemu_server: PayemuServer, request: pytest.FixtureRequest) -> Iterator[Payemu]:
    """A fresh isolated tenant of payemu for this test, removed afterwards."""
    tenant = payemu_server.tenant(label=request.node.nodeid)
    try:
        yield tenant
    finally:
        tenant.close(remove=not request.config.getoption("payemu_keep_tenants"))
