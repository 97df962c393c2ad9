"""The words of the payment interface, each spelled once, as :class:`enum.StrEnum` values
that compare, hash and serialize as the strings the JSON carries."""

from __future__ import annotations

from enum import StrEnum


class Operation(StrEnum):
    CHARGE = "Charge"
    PRE_AUTH = "PreAuth"
    CAPTURE = "Capture"
    VOID = "Void"
    REFUND = "Refund"
    TOKENIZE = "Tokenize"
    STATUS = "Status"


class ResultCode(StrEnum):
    SUCCESS = "Success"
    ACCEPTED = "Accepted"
    REJECTED = "Rejected"
    TEMPORARY_FAILURE = "TemporaryFailure"
    FATAL_FAILURE = "FatalFailure"
    NOT_IMPLEMENTED = "NotImplemented"


class RejectReason(StrEnum):
    """``rejectReasonCode`` values: gateway declines, the amount check, the ledger's refusals."""

    CARD_DECLINED = "CardDeclined"
    INSUFFICIENT_FUNDS = "InsufficientFunds"
    EXPIRED_CARD = "ExpiredCard"
    INVALID_CARD_NUMBER = "InvalidCardNumber"
    INVALID_CVV = "InvalidCvv"
    LOST_OR_STOLEN_CARD = "LostOrStolenCard"
    SUSPECTED_FRAUD = "SuspectedFraud"
    DO_NOT_HONOR = "DoNotHonor"
    LIMIT_EXCEEDED = "LimitExceeded"
    AUTHENTICATION_REQUIRED = "AuthenticationRequired"
    # a gateway's own check of the amount (0 or less), by default (catalog: cardChecks)
    INVALID_AMOUNT = "InvalidAmount"
    # the ledger refuses an operation on an earlier one
    TRANSACTION_NOT_FOUND = "TransactionNotFound"
    GATEWAY_MISMATCH = "GatewayMismatch"
    OPERATION_NOT_ALLOWED = "OperationNotAllowed"
    CURRENCY_MISMATCH = "CurrencyMismatch"
    ALREADY_VOIDED = "AlreadyVoided"
    ALREADY_CAPTURED = "AlreadyCaptured"
    ALREADY_REFUNDED = "AlreadyRefunded"
    AUTHORIZATION_EXPIRED = "AuthorizationExpired"
    AMOUNT_EXCEEDED = "AmountExceeded"
    OPERATION_IN_PROGRESS = "OperationInProgress"


class Fault(StrEnum):
    """What a scenario does to the connection: nothing, ``reset`` or ``lostResponse``."""

    NONE = "none"
    RESET = "reset"
    LOST_RESPONSE = "lostResponse"


OPERATIONS: tuple[str, ...] = tuple(o.value for o in Operation)
RESULT_CODES: tuple[str, ...] = tuple(c.value for c in ResultCode)
FAULTS: tuple[str, ...] = tuple(f.value for f in Fault)
# How the eWallet card form authenticates the customer before paying (the library's
# CardPay ``authenticationOption``; a scenario rule's ``then.authentication``).
AUTHENTICATION_OPTIONS: tuple[str, ...] = ("None", "OtpByGenericUI")
# The reject reasons a scenario rule may give (a gateway's declines).
DECLINE_REASONS: tuple[str, ...] = tuple(r.value for r in RejectReason)[:10]
# The final results an Accepted operation may settle to.
SETTLE_RESULTS: tuple[str, ...] = (
    ResultCode.SUCCESS.value,
    ResultCode.REJECTED.value,
    ResultCode.FATAL_FAILURE.value,
)

# Each member as a plain name too, for the payment path: on Python 3.11 every read of a member
# through its class (``ResultCode.SUCCESS``) goes through EnumType.__getattr__'s hook, some 600
# instructions (3.12 dropped the hook); a module's own name costs a few.
CHARGE = Operation.CHARGE
PRE_AUTH = Operation.PRE_AUTH
CAPTURE = Operation.CAPTURE
VOID = Operation.VOID
REFUND = Operation.REFUND
TOKENIZE = Operation.TOKENIZE
STATUS = Operation.STATUS
SUCCESS = ResultCode.SUCCESS
ACCEPTED = ResultCode.ACCEPTED
REJECTED = ResultCode.REJECTED
TEMPORARY_FAILURE = ResultCode.TEMPORARY_FAILURE
FATAL_FAILURE = ResultCode.FATAL_FAILURE
NOT_IMPLEMENTED = ResultCode.NOT_IMPLEMENTED
NO_FAULT = Fault.NONE
RESET = Fault.RESET
LOST_RESPONSE = Fault.LOST_RESPONSE

SUCCESSFUL = frozenset({SUCCESS, ACCEPTED})
DEFAULT_REJECT_REASON = RejectReason.CARD_DECLINED
HTTP_STATUS: dict[ResultCode, int] = {
    ResultCode.SUCCESS: 200,
    ResultCode.ACCEPTED: 202,
    ResultCode.REJECTED: 409,
    ResultCode.NOT_IMPLEMENTED: 409,
    ResultCode.FATAL_FAILURE: 500,
    ResultCode.TEMPORARY_FAILURE: 503,
}
# New payments (with fallbacks), operations on an earlier payment, and the status lookup.
PAYMENTS = frozenset({Operation.CHARGE, Operation.PRE_AUTH, Operation.TOKENIZE})
FOLLOW_UPS = frozenset({Operation.CAPTURE, Operation.VOID, Operation.REFUND})
# Operations that hold or move money (a later status, void or capture refers to them).
ORIGINALS = frozenset({Operation.CHARGE, Operation.PRE_AUTH})
