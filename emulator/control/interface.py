"""Control: which published version of the interface serves the caller's key.

``PUT /_emulator/interface`` with an OpenAPI 3.0 document as the body serves the caller's
tenant with it (requests validated against it, answers shaped for it); ``DELETE`` goes
back to the server's document; ``GET`` tells which one serves.
"""

from __future__ import annotations

from emulator import errors, versions
from emulator.pipeline import Call, Handler, Reply


async def read(call: Call) -> Reply:
    return Reply(200, versions.describe(call.runtime, call.tenant))


async def select(call: Call) -> Reply:
    try:
        api = versions.from_document(call.body, source="PUT /_emulator/interface")
    except versions.DocumentError as exc:
        raise errors.invalid("body", f"The document cannot be served: {exc}.") from None
    versions.choose(call.runtime, call.tenant, api)
    return Reply(200, versions.describe(call.runtime, call.tenant))


async def restore(call: Call) -> Reply:
    versions.choose(call.runtime, call.tenant, None)
    return Reply(200, versions.describe(call.runtime, call.tenant))


HANDLERS: dict[str, Handler] = {
    "ControlInterface": read,
    "ControlSetInterface": select,
    "ControlResetInterface": restore,
}
