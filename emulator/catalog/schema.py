"""The JSON Schemas of the gateway catalog: the shared file (``catalog.yaml``) and one
gateway's file (``gateways/<Name>.yaml``). Every fact a gateway file states is named in
its ``provenance`` with the public page it comes from, or labelled as payemu's guess.
"""

from __future__ import annotations

from typing import Any

from emulator.domain.vocabulary import OPERATIONS, RESULT_CODES
from emulator.domain.vocabulary import ResultCode as Result

RESULT_KEYS = (*RESULT_CODES, "AuthenticationFailed")
# How much payemu knows of a gateway, most first: its documented test inputs are modelled
# (sandbox), its credential names come from the record (credentials), or only its name is
# public (listed: any credential names are taken, outcomes are payemu's generic sandbox).
LEVELS = ("sandbox", "credentials", "listed")
ALPHABETS = {
    "digits": "0123456789",
    "upper": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "alnum": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "hex": "0123456789abcdef",
}
# The keys of a gateway file that state a fact about the real gateway: each one present
# needs its provenance (a source URL, or a guess with the reason).
FACT_KEYS = (
    "name",
    "credentialsNames",
    "optionalCredentials",
    "supportsNetworkToken",
    "tokenizes",
    "authorizationDays",
    "unsupportedOperations",
    "requires",
    "reference",
    "token",
    "authorizationCode",
    "always",
    "cardChecks",
    "testCards",
    "codes",
    "response",
    "triggers",
    "otherwise",
    "captureLimit",
    "refundLimit",
    "credentialModes",
    "avsResults",
    "cvvResults",
)
_TEXT = {"type": "string", "minLength": 1}
_OPERATION_LIST = {"type": "array", "items": {"enum": list(OPERATIONS)}}
FORMAT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["length", "alphabet"],
    "properties": {
        "prefix": {"type": "string"},
        "prefixByOperation": {
            "type": "object",
            "propertyNames": {"enum": list(OPERATIONS)},
            "additionalProperties": {"type": "string"},
        },
        "length": {"type": "integer", "minimum": 4, "maximum": 64},
        "alphabet": {"enum": list(ALPHABETS)},
    },
}
CODE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["code", "description"],
    "properties": {"code": {"type": "string"}, "description": {"type": "string"}},
}
CODES = {"type": "object", "required": list(RESULT_KEYS), "additionalProperties": CODE}
# What a gateway checks of the card and amount itself (see emulator.engine.checks).
CARD_CHECKS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "enabled": {"type": "boolean"},
        "cardOperations": _OPERATION_LIST,
        "amountOperations": _OPERATION_LIST,
        "luhn": {"type": "boolean"},
        "digits": {
            "type": "object",
            "additionalProperties": False,
            "required": ["min", "max"],
            "properties": {"min": {"type": "integer", "minimum": 1}, "max": {"type": "integer", "minimum": 1}},
        },
        "expiry": {"type": "boolean"},
        "cvvLength": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1, "maximum": 8}},
        "nonPositiveAmountReason": _TEXT,
        "accountVerification": {"type": "boolean"},
        "twoDigitYears": {"type": "boolean"},
        # the smallest payment per currency (major units), below which Charge and PreAuth are InvalidAmount
        "minimumAmounts": {"type": "object", "additionalProperties": {"type": "number", "exclusiveMinimum": 0}},
        "wholeMinorUnits": {"type": "boolean"},  # a fraction finer than the currency's minor unit is InvalidAmount
    },
}
_MODES: dict[str, Any] = {  # which values of one credential are sandbox and which live
    "type": "object",
    "additionalProperties": False,
    "required": ["credential", "live", "source"],
    "properties": {
        "credential": _TEXT,
        "sandbox": {"type": "string", "format": "regex"},  # absent: whatever is not live
        "live": {"type": "string", "format": "regex"},
        "source": _TEXT,  # a URL, or "payemu" for payemu's own convention
        "liveTestCard": CODE,  # a live credential paying one of the gateway's test cards: declined
        "testModeLiveCard": CODE,  # a test credential paying a card that is no test number: declined
    },
}
_RESULT_MAP = {"type": "object", "additionalProperties": {"type": "string", "maxLength": 8}}
_RESPONSE_OVERRIDES = {"type": "object", "additionalProperties": {"type": "object"}}
_URL = {"type": "string", "pattern": "^https?://[^\\s]+$"}
_ORIGIN = {  # one of the two
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "maxProperties": 1,
    "properties": {"source": _URL, "guess": _TEXT},
}
_PROVENANCE = {"type": "object", "additionalProperties": False, "properties": {key: _ORIGIN for key in FACT_KEYS}}
GATEWAY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "name",
        "displayName",
        "level",
        "paymentGatewayUrl",
        "description",
        "credentialsNames",
        "supportsNetworkToken",
        "tokenizes",
        "authorizationDays",
        "provenance",
    ],
    "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9]+$"},
        "displayName": _TEXT,
        "level": {"enum": list(LEVELS)},
        "paymentGatewayUrl": _TEXT,
        "description": _TEXT,
        "credentialsNames": {"type": "array", "items": _TEXT},
        "optionalCredentials": {"type": "array", "items": _TEXT},
        "supportsNetworkToken": {"type": "boolean"},
        "tokenizes": {"type": "boolean"},
        "authorizationDays": {"type": "integer", "minimum": 1, "maximum": 60},
        "unsupportedOperations": _OPERATION_LIST,
        "requires": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "certificate": {"type": "boolean"},
                "clientIPAddress": {"type": "boolean"},
                "orderDesc": {"type": "boolean"},
                "myRefMinLength": {"type": "integer", "minimum": 0},
                "cvv": {"type": "boolean"},
                "tokenizeCredential": _TEXT,  # tokenize only with this (optional) credential
            },
        },
        "always": {"enum": [Result.SUCCESS.value, Result.REJECTED.value]},
        "reference": FORMAT,
        "token": FORMAT,
        "authorizationCode": FORMAT,
        "codes": CODES,
        "response": {"type": "object"},
        "responseByResult": _RESPONSE_OVERRIDES,
        "responseByOperation": _RESPONSE_OVERRIDES,
        "cardChecks": CARD_CHECKS,
        # {avsResult} / {cvvResult}: the gateway's AVS result by payerDetails.postCode
        # and card-code result by card.cvv ("default": any other value or none)
        "avsResults": _RESULT_MAP,
        "cvvResults": _RESULT_MAP,
        # where the gateway's behaviour is documented (URLs); empty for a gateway without a public sandbox
        "sources": {"type": "array", "items": _URL},
        "credentialModes": _MODES,
        # the most a capture may take of its authorization, as a multiple (1 = never above it)
        "captureLimit": {"type": "number", "minimum": 1, "maximum": 2},
        # refunds refused this many days after the charge while `credential` is false
        "refundLimit": {
            "type": "object",
            "additionalProperties": False,
            "required": ["days", "unlessCredential"],
            "properties": {"days": {"type": "integer", "minimum": 1}, "unlessCredential": _TEXT},
        },
        # the card numbers the gateway's test account takes (its triggers name them)
        "testCards": {"type": "array", "items": {"type": "string", "pattern": "^[0-9]{12,19}$"}},
        # the gateway's own test inputs: scenario rules (docs/scenarios.md) that fire on it only
        "triggers": {"type": "array", "items": {"type": "object"}},
        # on a sandbox API key, the answer to an attempt no rule decided (the gateway's test
        # account refusing what its simulator does not know)
        "otherwise": {
            "type": "object",
            "additionalProperties": False,
            "required": ["operations", "operationResultCode", "gatewayResultCode", "gatewayResultDescription"],
            "properties": {
                "operations": _OPERATION_LIST,
                "operationResultCode": {"enum": list(RESULT_CODES)},
                "rejectReasonCode": _TEXT,
                "gatewayResultCode": _TEXT,
                "gatewayResultDescription": _TEXT,
            },
        },
        "provenance": _PROVENANCE,
    },
}
SHARED: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["cardChecks", "defaults"],
    "properties": {
        "cardChecks": CARD_CHECKS,
        # what a gateway file leaves out: payemu's generic vocabulary, labelled as payemu's guess
        "defaults": {
            "type": "object",
            "additionalProperties": False,
            "required": ["reference", "codes", "response"],
            "properties": {
                "reference": FORMAT,
                "codes": CODES,
                "response": {"type": "object"},
                # test numbers published for every sandbox, beside each gateway's own
                "publishedTestCards": {"type": "array", "items": {"type": "string", "pattern": "^[0-9]{12,19}$"}},
            },
        },
    },
}
