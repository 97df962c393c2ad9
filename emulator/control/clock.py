"""Control: read and advance the caller's virtual clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from emulator.domain import errors
from emulator.domain.clock import isoformat, parse_duration
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.tenants.tenants import Tenant

# Far enough for any test, far enough from datetime's year 9999 that expiry arithmetic
# on an advanced clock can never overflow.
LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def clock_json(tenant: Tenant) -> dict[str, Any]:
    clock = tenant.clock
    return {"now": isoformat(clock.now()), "offset": clock.offset.total_seconds(), "frozen": clock.frozen}


async def read(call: Call) -> Reply:
    return Reply(200, clock_json(call.tenant))


async def advance(call: Call) -> Reply:
    try:
        delta = parse_duration(call.body["advance"])
        too_far = call.tenant.now() + delta >= LATEST
    except ValueError as exc:
        message = str(exc).rstrip(".")
        raise errors.invalid("advance", f"{message[:1].upper()}{message[1:]}.") from None
    except OverflowError:
        raise errors.invalid("advance", f"The clock cannot move past {LATEST.year}-01-01.") from None
    if too_far:
        raise errors.invalid("advance", f"The clock cannot move past {LATEST.year}-01-01.")
    call.tenant.clock.advance(delta)
    return Reply(200, clock_json(call.tenant))


HANDLERS: dict[str, Handler] = {"ControlClock": read, "ControlAdvanceClock": advance}
