"""Operations of the schema whose behaviour is not built yet.

The route-coverage test reads this table: every operation of the schema is either
handled or listed here, never both. A pending operation answers 501 with a JSON body
naming the issue that builds it; it never pretends to work.
"""

from __future__ import annotations

PENDING: dict[str, str] = {
    "GatewayCharge": "issue 4 (payment engine)",
    "GatewayAuthorize": "issue 4 (payment engine)",
    "GatewayCapture": "issue 4 (payment engine)",
    "GatewayVoid": "issue 4 (payment engine)",
    "GatewayRefund": "issue 4 (payment engine)",
    "GatewayStatus": "issue 4 (payment engine)",
    "GatewayTokenize": "issue 4 (payment engine)",
    "StartSession": "issue 6 (eWallet sessions)",
    "ValidateResults": "issue 6 (eWallet sessions)",
}
