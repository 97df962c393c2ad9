"""Operations of the schema whose behaviour is not built yet.

The route-coverage test reads this table: every operation of the schema is either
handled or listed here, never both. A pending operation answers 501 with a JSON body
naming the issue that builds it; it never pretends to work.
"""

from __future__ import annotations

PENDING: dict[str, str] = {}
