"""Settings: the command line and an optional YAML config file, checked on load.

Every key of the config file, its type and default: docs/reference/config.md."""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import field, fields
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from emulator.domain.datafiles import load_checked
from emulator.domain.records import dataclass


@dataclass(frozen=True)
class KeySpec:
    """One API key: its tenant's user name, account id, mode and client certificates."""

    key: str
    user_name: str
    account_id: int
    is_sandbox: bool
    certificates: tuple[str, ...] = ()


DEFAULT_KEYS: tuple[KeySpec, ...] = (
    KeySpec("sandbox-api-key", "sandbox-merchant", 10001, True),
    KeySpec("live-api-key", "live-merchant", 10002, False),
)

FAILOVER_MODES = ("all", "recoverable-only")
SUCCESS_STATUSES = ("by-result", "always-200", "always-202")
MOCK_TOKENIZATION = ("unsupported", "supported")  # the newest mock-PSP page; its older version
PRELOADED = ("accounts", "stringTokens", "sessions")  # per-key demo state (emulator.tenants.preload)


MIB = 1024 * 1024


@dataclass
class Limits:
    """How much payemu keeps per tenant, and how many tenants (:mod:`emulator.tenants.limits`)."""

    tenants: int = 1000  # created at run time (POST /_emulator/tenants, --any-key)
    tenant_idle_seconds: float = 300.0
    tokens: int = 10_000
    token_bytes: int = 16 * MIB
    transactions: int = 20_000
    journal_bytes: int = 8 * MIB
    sessions: int = 10_000
    named: int = 1000  # stored gateway accounts and client certificates
    sequences: int = 10_000  # scenario sequence counters (rule, card)
    tenant_bytes: int = 64 * MIB  # everything one tenant stores, weighed in bytes
    memory_bytes: int = 256 * MIB  # everything every tenant stores (sized for a 512 MB container)


LIMIT_KEYS: dict[str, str] = {  # config key (under ``limits:``) → Limits attribute
    "tenants": "tenants",
    "tenantIdleSeconds": "tenant_idle_seconds",
    "tokensPerTenant": "tokens",
    "tokenBytesPerTenant": "token_bytes",
    "transactionsPerTenant": "transactions",
    "journalBytesPerTenant": "journal_bytes",
    "sessionsPerTenant": "sessions",
    "namedItemsPerTenant": "named",
    "sequencesPerTenant": "sequences",
    "memoryBytesPerTenant": "tenant_bytes",
    "memoryBytes": "memory_bytes",
}

_LIMITS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        name: {"type": "number", "exclusiveMinimum": 0}
        if name == "tenantIdleSeconds"
        else {"type": "integer", "minimum": 1}
        for name in LIMIT_KEYS
    },
}


def limits_from_config(data: dict[str, Any], limits: Limits) -> Limits:
    """``limits`` with the values of a config file's ``limits:`` mapping applied."""
    for key, attribute in LIMIT_KEYS.items():
        if key in data:
            setattr(limits, attribute, data[key])
    return limits


def describe_limits(limits: Limits) -> list[tuple[str, object]]:
    """(config key, value) of every limit, for the banner."""
    by_attribute = {attribute: key for key, attribute in LIMIT_KEYS.items()}
    return [(by_attribute[f.name], getattr(limits, f.name)) for f in fields(limits)]


# Where every seeded tenant's clock starts unless --clock-start (config: clockStart) says
# otherwise: a fixed moment at which every gateway's documented test cards are valid
# (Adyen's test expiry 03/2030 is the nearest), so a seeded run declines none as expired.
SEEDED_CLOCK_START = datetime(2026, 1, 1, tzinfo=UTC)


def parse_clock_start(text: str, where: str) -> datetime:
    """An ISO 8601 date or date and time (UTC unless it names an offset)."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{where} {text!r}: an ISO 8601 date or time such as 2026-01-01 or 2026-01-01T09:00:00Z"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def clock_start_of(value: Any, where: str) -> datetime:
    """``clockStart`` of a config file: YAML reads an unquoted ISO timestamp itself."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return parse_clock_start(str(value)[:64], where)


@dataclass
class Settings:
    """What ``payemu serve`` runs with: the command line over the config file over these defaults."""

    host: str = "127.0.0.1"
    port: int = 8080
    keys: tuple[KeySpec, ...] = DEFAULT_KEYS
    any_key: bool = False
    # --any-key-needs-admin: a new key becomes a tenant only with X-Admin-Key; None: when
    # listening beyond loopback (see any_key_admin_required, docs/http-limits-and-exposure.md)
    any_key_needs_admin: bool | None = None
    seed: int | None = None
    clock_start: datetime = SEEDED_CLOCK_START  # where a seeded tenant's clock starts
    failover: str = "all"
    strict: bool = False
    success_status: str = "by-result"
    mock_tokenization: str = "unsupported"
    journal_size: int = 1000
    scenario_paths: list[str] = field(default_factory=list)
    openapi_path: str | None = None
    log_level: str = "info"
    max_body_bytes: int = 1024 * 1024
    max_head_bytes: int = 64 * 1024  # request line + headers: 431 past it (see emulator.edge.protocol)
    max_url_bytes: int = 8 * 1024  # the request target (path and query): 414 past it
    # -- connections (emulator.edge.connections; docs/http-limits-and-exposure.md) --
    max_connections: int | None = None  # open at once; None: from RLIMIT_NOFILE at start
    write_timeout_seconds: float = 30.0  # a client reading nothing with a full write buffer is cut
    head_timeout_seconds: float = 30.0  # for the request line + headers to arrive
    watch: bool = False
    limits: Limits = field(default_factory=Limits)  # memory limits (Limits above)
    request_timeout_seconds: float = 60.0  # for the whole request: head and body (emulator.edge.protocol)
    shutdown_timeout_seconds: float = 10.0  # after SIGTERM, open connections get this long
    admin_key: str | None = None  # protects tenant creation, reload and the pages (emulator.endpoints.admin)
    return_origins: tuple[str, ...] = ()  # extra origins a payment page's returnUrl may have
    state_path: str | None = None  # --state: the SQLite file of every tenant's state
    card_form_port: int | None = 4200  # payemu serve: the eWallet card form's listener (0: any free port; None: off)
    access_log: bool = False  # payemu serve --access-log: one line per request (emulator.cli.accesslog)
    # per key: the accounts, string tokens and sessions the config file preloads
    preload: dict[str, dict[str, Any]] = field(default_factory=dict)

    def admits_admin(self, given: str | None) -> bool:
        """True when no admin key is set or ``given`` is it (compared in constant time)."""
        if self.admin_key is None:
            return True
        return given is not None and hmac.compare_digest(given.encode(), self.admin_key.encode())

    @property
    def any_key_admin_required(self) -> bool:
        """Whether a new ``--any-key`` key needs the admin key: as set, else when not on loopback."""
        if self.any_key_needs_admin is not None:
            return self.any_key_needs_admin
        return not is_loopback(self.host)


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address, bracketed or not."""
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_CONFIG_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "properties": {
        "keys": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["key"],
                "properties": {
                    "key": {"type": "string", "minLength": 1, "maxLength": 256},
                    "userName": {"type": "string", "minLength": 1},
                    "accountId": {"type": "integer", "minimum": 1},
                    "isSandbox": {"type": "boolean"},
                    "certificates": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1, "maxLength": 128},
                    },
                    # preloaded demo state, stored through the tenant's stores (emulator.tenants.preload)
                    "accounts": {"type": "array", "items": {"type": "object"}},
                    "stringTokens": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["token", "payload"],
                            "properties": {
                                "token": {"type": "string", "pattern": "^[A-Za-z0-9]{32}$"},
                                "payload": {"type": "string", "minLength": 1},
                            },
                        },
                    },
                    "sessions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["token", "request"],
                            "properties": {
                                "token": {"type": "string", "pattern": "^[A-Za-z0-9]{32}$"},
                                "request": {"type": "object"},
                            },
                        },
                    },
                },
            },
        },
        "anyKey": {"type": "boolean"},
        "anyKeyNeedsAdmin": {"type": ["boolean", "null"]},
        "seed": {"type": ["integer", "null"]},
        "clockStart": {},  # an ISO 8601 text (YAML may read it as a timestamp already)
        "failover": {"enum": list(FAILOVER_MODES)},
        "strict": {"type": "boolean"},
        "successStatus": {"enum": list(SUCCESS_STATUSES)},
        "mockTokenization": {"enum": list(MOCK_TOKENIZATION)},
        "journalSize": {"type": "integer", "minimum": 1, "maximum": 1000000},
        "scenarios": {"type": "array", "items": {"type": "string"}},
        "openapi": {"type": ["string", "null"]},
        "limits": _LIMITS_SCHEMA,
        "requestTimeoutSeconds": {"type": "number", "exclusiveMinimum": 0},
        "shutdownTimeoutSeconds": {"type": "number", "minimum": 0},
        "maxConnections": {"type": "integer", "minimum": 1, "maximum": 1000000},
        "writeTimeoutSeconds": {"type": "number", "exclusiveMinimum": 0},
        "adminKey": {"type": ["string", "null"], "minLength": 8, "maxLength": 256},
        "returnOrigins": {"type": "array", "items": {"type": "string", "pattern": "^https?://[^/?#\\\\@]+$"}},
    },
}


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file and the field."""


def load_config_file(path: str | Path, settings: Settings | None = None) -> Settings:
    """Read ``path`` into ``settings`` (a new default Settings when None)."""
    settings = settings or Settings()
    path = Path(path)
    data = load_checked(path, _CONFIG_SCHEMA, "config file", "config", ConfigError) or {}
    base = path.parent
    if "keys" in data:
        settings.keys = tuple(_key_spec(i, item) for i, item in enumerate(data["keys"]))
        names = [k.key for k in settings.keys]
        if len(set(names)) != len(names):
            raise ConfigError(f"{path}: keys: the same key is listed twice")
    settings.any_key = data.get("anyKey", settings.any_key)
    settings.any_key_needs_admin = data.get("anyKeyNeedsAdmin", settings.any_key_needs_admin)
    settings.seed = data.get("seed", settings.seed)
    if "clockStart" in data:
        settings.clock_start = clock_start_of(data["clockStart"], f"{path}: clockStart")
    settings.failover = data.get("failover", settings.failover)
    settings.strict = data.get("strict", settings.strict)
    settings.success_status = data.get("successStatus", settings.success_status)
    settings.mock_tokenization = data.get("mockTokenization", settings.mock_tokenization)
    settings.journal_size = data.get("journalSize", settings.journal_size)
    for item in data.get("keys", []):
        preload = {name: item[name] for name in PRELOADED if item.get(name)}
        if preload:
            settings.preload[item["key"]] = preload
    settings.scenario_paths += [str(base / p) for p in data.get("scenarios", [])]
    settings.limits = limits_from_config(data.get("limits", {}), settings.limits)
    settings.request_timeout_seconds = data.get("requestTimeoutSeconds", settings.request_timeout_seconds)
    settings.shutdown_timeout_seconds = data.get("shutdownTimeoutSeconds", settings.shutdown_timeout_seconds)
    settings.admin_key = data.get("adminKey", settings.admin_key)
    settings.max_connections = data.get("maxConnections", settings.max_connections)
    settings.write_timeout_seconds = data.get("writeTimeoutSeconds", settings.write_timeout_seconds)
    settings.return_origins += tuple(origin.lower() for origin in data.get("returnOrigins", []))
    if data.get("openapi"):
        settings.openapi_path = str(base / data["openapi"])
    return settings


def _key_spec(index: int, item: dict[str, Any]) -> KeySpec:
    sandbox = item.get("isSandbox", True)
    return KeySpec(
        key=item["key"],
        user_name=item.get("userName", f"merchant-{index + 1}"),
        account_id=item.get("accountId", 10001 + index),
        is_sandbox=sandbox,
        certificates=tuple(item.get("certificates", ())),
    )
