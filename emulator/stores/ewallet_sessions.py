"""eWallet sessions: the checks beyond the schema, storage in the tenant, lookup by token.

A session expires :data:`SESSION_LIFETIME` after creation on the tenant's clock; the
runtime's :class:`SessionIndex` finds a payment page's session (its URL has no API key)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from emulator.domain import budget as weights
from emulator.domain import errors
from emulator.domain.budget import Budget
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import Operation

SESSION_LIFETIME = timedelta(minutes=30)
KEEP_EXPIRED = timedelta(days=1)  # expired sessions stay readable (results) this long
MAX_SESSIONS = 10_000  # per tenant by default (limits.sessionsPerTenant); the oldest are dropped first
CHECK_INDEX_EVERY = 1024  # sessions created between sweeps of stale index entries
SID_LENGTH = 24
WALLET = "CardPay"  # the one wallet payemu offers (see the README's eWallet section)
# Wallets the real library knows that cannot work offline (their scripts or bank pages are on
# the internet); an eWallet account id naming one is left out of the token's ``wlt``. Apple
# Pay especially: a failed script load rejects checkAvailability() for every wallet.
OFFLINE_WALLETS = ("ApplePay", "GooglePay", "PayPal", "BankPay", "UPI")
PUBLIC_KEY = "payemu-no-encryption"  # pld.pub: payemu's card form encrypts nothing with it
MAX_AMOUNT = 1_000_000_000_000

CHARGING = frozenset({"CHARGE", "CHARGE_AND_TOKENIZE", "PREAUTH_AND_TOKENIZE"})
TOKENIZING = frozenset({"TOKENIZE", "CHARGE_AND_TOKENIZE", "PREAUTH_AND_TOKENIZE"})
# eWallet operation → (payment engine operation, ask the gateway for a token)
ENGINE_OPERATION: dict[str, tuple[Operation, bool]] = {
    "CHARGE": (Operation.CHARGE, False),
    "CHARGE_AND_TOKENIZE": (Operation.CHARGE, True),
    "PREAUTH_AND_TOKENIZE": (Operation.PRE_AUTH, True),
    "TOKENIZE": (Operation.TOKENIZE, False),
}
_COUNTRY = r"^[A-Za-z]{2}$"
_VAULT_TOKEN = r"^[A-Za-z0-9]{32}$"


@dataclass
class SessionResult:
    """One payment made through the session's page (a decline too)."""

    result_id: str
    created_at: datetime
    success: bool
    data: dict[str, Any]  # the EWalletResultData answered by validateResults
    token: str  # the signed result token handed to the merchant


@dataclass
class Session:
    """One eWallet session: the request it was made with, its expiry and its payment results."""

    token: str
    request: dict[str, Any]  # the validated request, enum values in canonical case
    created_at: datetime
    expires_at: datetime
    results: dict[str, SessionResult] = field(default_factory=dict)
    paid_by: str | None = None  # result id of the successful payment
    busy: bool = False  # a payment is running
    sid: str = ""  # short id inside the token (the payments' myRef); preloaded sessions have none
    weight: int = 0  # bytes charged to the tenant's budget (weight_of), results included

    def weight_of(self) -> int:
        """What the session holds: an overhead, its token, its request and its results."""
        return (
            weights.SESSION
            + weights.text(self.token)
            + weights.weigh(self.request)
            + sum(
                weights.SESSION_RESULT + weights.text(result.token) + weights.weigh(result.data)
                for result in self.results.values()
            )
        )

    @property
    def reference(self) -> str:
        """The session's short reference: its id, or the token of a preloaded session."""
        return self.sid or self.token

    @property
    def operation(self) -> str:
        return str(self.request["operation"])

    @property
    def amount(self) -> float:
        return float(self.request["amount"])

    @property
    def currency(self) -> str:
        return str(self.request["currencyCode"])

    @property
    def stored_cards(self) -> list[dict[str, Any]]:
        return list(self.request.get("storedCards") or [])

    @property
    def allowed_brands(self) -> list[str]:
        return list(self.request.get("allowedBrands") or [])

    def state(self, now: datetime) -> str:
        if self.paid_by is not None:
            return "paid"
        if now >= self.expires_at:
            return "expired"
        return "open"

    def paid_result(self) -> SessionResult | None:
        return self.results.get(self.paid_by) if self.paid_by else None


class Sessions(Mapping[str, Session]):
    """A tenant's sessions by token, oldest first, at most ``limit``."""

    def __init__(self, limit: int = MAX_SESSIONS, budget: Budget | None = None) -> None:
        self._sessions: dict[str, Session] = {}
        self.limit = limit
        self.budget = budget or weights.unlimited()  # the tenant's, in bytes
        self.budget.sheddable(self, rank=1)  # finished sessions go with finished transactions
        self._latest: datetime | None = None  # the tenant's time at the last add (shed tells expiry by it)

    def __getitem__(self, token: str) -> Session:
        return self._sessions[token]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sessions)

    def __len__(self) -> int:
        return len(self._sessions)

    def add(self, session: Session) -> None:
        """Keep ``session``, dropping stale and, at the limit, the oldest; a 507 if it cannot fit."""
        now = self._latest = session.created_at
        session.weight = weight = session.weight_of()
        if weight > self.budget.limit:
            raise self.budget.refusal("body", weight, "This session")
        for token in [t for t, s in self._sessions.items() if now >= s.expires_at + KEEP_EXPIRED]:
            self._drop(token)
        while len(self._sessions) >= self.limit:
            self._drop(next(iter(self._sessions)))
        budget = self.budget
        while not budget.make_room(weight) and self._sessions:
            self._drop(next(iter(self._sessions)))
        if not budget.fits(weight):
            raise budget.refusal("body", weight, "This session")
        self._drop(session.token)
        self._sessions[session.token] = session
        budget.charge(weight)

    def shed(self, nbytes: int) -> int:
        """Drop the oldest finished sessions until ``nbytes`` are freed; the bytes freed."""
        freed = 0
        for token, session in list(self._sessions.items()):
            if freed >= nbytes:
                break
            now = self._latest or session.created_at
            if not session.busy and session.state(now) != "open":
                freed += session.weight
                self._drop(token)
        return freed

    def _drop(self, token: str) -> None:
        dropped = self._sessions.pop(token, None)
        if dropped is not None:
            self.budget.release(dropped.weight)

    def grow(self, session: Session, weight: int) -> None:
        if self._sessions.get(session.token) is session:
            session.weight += weight
            self.budget.charge(weight)

    def clear(self) -> None:
        """Drop every session (the tenant was removed)."""
        self.budget.release(sum(session.weight for session in self._sessions.values()))
        self._sessions.clear()

    def newest_first(self) -> Iterator[Session]:
        return reversed(list(self._sessions.values()))


if TYPE_CHECKING:  # types for the checker only (no class made at run time)
    from emulator.stores.certificates import Certificates

    class SessionOwner(Protocol):
        user_name: str
        sessions: Sessions
        certificates: Certificates

        @property
        def accounts(self) -> Mapping[str, Any]: ...

        @property
        def vault(self) -> Mapping[str, Any]: ...

        def random_string(self, length: int) -> str: ...

        def sign_token(self, body: Mapping[str, Any]) -> str: ...

        def now(self) -> datetime: ...

    class Indexed(Protocol):
        @property
        def session_index(self) -> SessionIndex[Any]: ...

        @property
        def tenants(self) -> Iterable[Any]: ...


def check_request(tenant: SessionOwner, body: dict[str, Any]) -> list[errors.FieldErrors]:
    """Problems the schema cannot see, one (fieldName, messages) entry each."""
    problems: list[errors.FieldErrors] = []
    operation = body["operation"]
    amount = body["amount"]
    if operation in CHARGING and amount <= 0:
        problems.append(("amount", [f"The field Amount must be greater than 0 for a {operation} session."]))
    if amount > MAX_AMOUNT:
        problems.append(("amount", [f"The field Amount must be at most {MAX_AMOUNT}."]))
    account = body.get("paymentGatewayAccountId")
    if not account:
        problems.append(
            ("paymentGatewayAccountId", [f"The PaymentGatewayAccountId field is required for a {operation} session."])
        )
    else:
        problems += _account_problems(tenant, account, "paymentGatewayAccountId")
    problems += _certificate_problems(tenant, body.get("paymentGatewayCertName"), "paymentGatewayCertName")
    for index, entry in enumerate(body.get("fallbackUpgs") or []):
        where = f"fallbackUpgs[{index}]"
        problems += _account_problems(tenant, entry["paymentGatewayAccountId"], f"{where}.paymentGatewayAccountId")
        certificate = entry.get("paymentGatewayCertName")
        problems += _certificate_problems(tenant, certificate, f"{where}.paymentGatewayCertName")
    for index, card in enumerate(body.get("storedCards") or []):
        problems += _stored_card_problems(tenant, card, f"storedCards[{index}]")
    country = body.get("countryCode")
    if country is not None and not re.match(_COUNTRY, country):
        problems.append(("countryCode", ["The field CountryCode must be a two-letter ISO 3166 country code."]))
    return problems


def _account_problems(tenant: SessionOwner, name: str, where: str) -> list[errors.FieldErrors]:
    if name in tenant.accounts:
        return []
    return [(where, [f"No stored payment gateway account is named '{name}'."])]


def _certificate_problems(tenant: SessionOwner, name: str | None, where: str) -> list[errors.FieldErrors]:
    if name is None:
        return []
    try:
        tenant.certificates.require(name, where)
    except errors.ApiError as exc:
        return list(exc.entries)
    return []


def _stored_card_problems(tenant: SessionOwner, card: dict[str, Any], where: str) -> list[errors.FieldErrors]:
    problems: list[errors.FieldErrors] = []
    token = card["token"]
    if not re.match(_VAULT_TOKEN, token) or token not in tenant.vault:
        problems.append((f"{where}.token", ["The token is not a string token of this account (POST /StringTokens)."]))
    year = card["expirationYear"]
    if not 2000 <= year <= 2100:
        problems.append((f"{where}.expirationYear", ["The field ExpirationYear must be a four-digit year."]))
    return problems


def create(
    tenant: SessionOwner, body: dict[str, Any], runtime: Indexed | None = None, library_url: str | None = None
) -> Session:
    """Check a schema-valid ``body`` and store a new session, or raise a 400."""
    problems = check_request(tenant, body)
    if problems:
        raise errors.invalid_many(problems)
    now = tenant.now()
    request = dict(body)
    if request.get("countryCode"):
        request["countryCode"] = request["countryCode"].upper()
    expires = now + SESSION_LIFETIME
    sid = tenant.random_string(SID_LENGTH)
    pld = payload(request, library_url, tenant.user_name)
    token = tenant.sign_token({"pld": pld, "sid": sid, "exp": int(expires.timestamp())})
    session = Session(token, request, now, expires, sid=sid)
    tenant.sessions.add(session)
    if runtime is not None:
        runtime.session_index.add(token, tenant, runtime.tenants)
    return session


def payload(request: Mapping[str, Any], library_url: str | None = None, merchant: str | None = None) -> dict[str, Any]:
    """The ``pld`` of a session token, read by the eWallet JS library."""
    # ``stg: Dev`` makes the library open its card form on localhost:4200 when the merchant
    # page runs on localhost: payemu's own form (``--card-form-port``).
    return {
        "op": request["operation"],
        "amt": request.get("amount"),
        "cur": request.get("currencyCode"),
        "ctry": request.get("countryCode"),
        "brnd": list(request.get("allowedBrands") or []),
        "wlt": wallets(request),
        "url": library_url,
        "stg": "Dev",
        "mode": "TEST",
        "pub": PUBLIC_KEY,
        "brndng": {"merchantName": merchant} if merchant else None,
    }


def wallets(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The token's ``wlt``: the card form, less the offline wallets (``OFFLINE_WALLETS``)."""
    allowed = [str(a) for a in request.get("allowedeWalletAccountIds") or []]
    cards = [a for a in allowed if not any(w.lower() in a.lower() for w in OFFLINE_WALLETS)]
    return [{"name": WALLET}] if cards or not allowed else []


if TYPE_CHECKING:  # a type for the checker only (no class made at run time)

    class _HasSessions(Protocol):
        sessions: Sessions


OwnerT = TypeVar("OwnerT", bound="_HasSessions")


class SessionIndex(Generic[OwnerT]):
    """Session token → tenant, swept of gone sessions every :data:`CHECK_INDEX_EVERY` additions."""

    def __init__(self) -> None:
        self._tenants: dict[str, OwnerT] = {}
        self._added = 0

    def __len__(self) -> int:
        return len(self._tenants)

    def add(self, token: str, tenant: OwnerT, live: Iterable[object]) -> None:
        self._tenants[token] = tenant
        self._added += 1
        if self._added % CHECK_INDEX_EVERY == 0:
            alive = {id(t) for t in live}
            for stale in [k for k, t in self._tenants.items() if id(t) not in alive or k not in t.sessions]:
                del self._tenants[stale]

    def find(self, token: str) -> tuple[OwnerT, Session] | None:
        tenant = self._tenants.get(token)
        session = tenant.sessions.get(token) if tenant is not None else None
        if tenant is None or session is None:
            return None
        return tenant, session


def find(runtime: Indexed, token: str) -> tuple[Any, Session] | None:
    """The session of that token and its tenant."""
    return runtime.session_index.find(token)


def iter_sessions(tenant: _HasSessions) -> Iterator[Session]:
    """Newest first."""
    return tenant.sessions.newest_first()
