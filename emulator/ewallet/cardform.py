"""What payemu's card form and the real eWallet JS library do with a session between
opening the form and paying: the entered card, the OTP challenge, the authentication option.

payemu's form hands the card to payemu (``enterCard``) and gives the library only a
reference, so no card number passes through the library (which logs its ``CardData``),
the journal or the merchant page. A scenario rule with ``then.authentication`` makes the
form ask for a one-time code: :data:`OTP_CODE` passes."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from emulator.domain import errors
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import AUTHENTICATION_OPTIONS
from emulator.stores.ewallet_sessions import ENGINE_OPERATION, Session

if TYPE_CHECKING:
    from emulator.tenants.services import Services
    from emulator.tenants.tenants import Tenant

OTP_CODE = "1234"  # the one-time code that passes a challenge (any other fails it)
WRONG_CODE = "The one-time code is not the one the bank sent: the payment was not authorized."
NO_AUTHENTICATION = AUTHENTICATION_OPTIONS[0]
PENDING, PASSED, FAILED = "Pending", "Success", "Failure"
REFERENCE_LENGTH = 32
MAX_ENTRIES = 10_000  # card references (and challenges) kept per tenant; the oldest go first


@dataclass
class CardFormEntry:
    """What a customer entered in the card form of an eWallet session."""

    session_token: str
    choice: dict[str, Any]  # as the hosted page's POST: {"card": {...}} or {"storedCard": i, "cvv": ...}


@dataclass
class Challenge:
    """A card-form entry waiting for the customer's authentication code."""

    session_token: str
    entry: CardFormEntry
    status: str = PENDING

    @property
    def message(self) -> str:
        """What the library shows the customer when the challenge failed (empty otherwise)."""
        return WRONG_CODE if self.status == FAILED else ""


class _Book:
    __slots__ = ("challenges", "entries")

    def __init__(self) -> None:
        self.entries: OrderedDict[str, CardFormEntry] = OrderedDict()
        self.challenges: OrderedDict[str, Challenge] = OrderedDict()


class Desk:
    """Card references and challenges, bounded per tenant so one tenant never pushes out another's."""

    def __init__(self, limit: int = MAX_ENTRIES) -> None:
        self.limit = limit
        self._books: weakref.WeakKeyDictionary[Tenant, _Book] = weakref.WeakKeyDictionary()

    def _book(self, tenant: Tenant) -> _Book:
        book = self._books.get(tenant)
        if book is None:
            book = self._books[tenant] = _Book()
        return book

    def enter(self, tenant: Tenant, session: Session, choice: dict[str, Any]) -> str:
        reference = tenant.random_string(REFERENCE_LENGTH)
        entries = self._book(tenant).entries
        entries[reference] = CardFormEntry(session.token, choice)
        _trim(entries, self.limit)
        return reference

    def entry(self, tenant: Tenant, session: Session, reference: Any) -> CardFormEntry:
        found = self._book(tenant).entries.get(reference) if isinstance(reference, str) else None
        if found is None or found.session_token != session.token:
            raise errors.invalid(
                "cardRef", "No card was entered in the card form of this session under this reference."
            )
        return found

    def challenge(self, tenant: Tenant, session: Session, entry: CardFormEntry) -> str:
        transaction_id = tenant.random_string(REFERENCE_LENGTH)
        challenges = self._book(tenant).challenges
        challenges[transaction_id] = Challenge(session.token, entry)
        _trim(challenges, self.limit)
        return transaction_id

    def find_challenge(self, tenant: Tenant, session: Session, transaction_id: Any) -> Challenge:
        challenges = self._book(tenant).challenges
        found = challenges.get(transaction_id) if isinstance(transaction_id, str) else None
        if found is None or found.session_token != session.token:
            raise errors.invalid("transactionId", "No OTP challenge of this session has this transaction id.")
        return found

    def answer(self, tenant: Tenant, session: Session, transaction_id: Any, code: Any) -> Challenge:
        found = self.find_challenge(tenant, session, transaction_id)
        if found.status == PENDING:
            found.status = PASSED if code == OTP_CODE else FAILED
        return found

    def passed(self, tenant: Tenant, session: Session, transaction_id: Any) -> CardFormEntry:
        found = self.find_challenge(tenant, session, transaction_id)
        if found.status != PASSED:
            raise errors.invalid("transactionId", f"The OTP challenge is not passed (status {found.status}).")
        return found.entry

    def held(self, tenant: Tenant) -> int:
        book = self._books.get(tenant)
        return 0 if book is None else len(book.entries) + len(book.challenges)


def _trim(table: OrderedDict[str, Any], limit: int) -> None:
    while len(table) > limit:
        table.popitem(last=False)


def authentication(runtime: Services, tenant: Tenant, session: Session) -> str:
    """The session form's ``authenticationOption``: the first matching rule's, else ``None``."""
    from emulator.scenarios import Attempt

    account = tenant.accounts.get(session.request["paymentGatewayAccountId"])
    operation, _ = ENGINE_OPERATION[session.operation]
    attempt = Attempt(
        card_number=None,
        amount=session.amount,
        currency=session.currency,
        operation=operation,
        gateway=account.gateway if account is not None else "",
        account=session.request["paymentGatewayAccountId"],
    )
    for rule in runtime.scenarios.rules(tenant):
        chosen = rule.outcomes[0].authentication
        if chosen and rule.match.matches(attempt):
            return chosen
    return NO_AUTHENTICATION
