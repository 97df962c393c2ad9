"""Control: which published version of the interface serves the caller's key
(``PUT``/``GET``/``DELETE /_emulator/interface``)."""

from __future__ import annotations

from typing import Any

import yaml

from emulator.contract.wire import parse_json
from emulator.control.scenarios import ACCEPTED_MEDIA
from emulator.domain import budget as weights
from emulator.domain import errors
from emulator.domain.datafiles import parse_yaml
from emulator.endpoints import versions
from emulator.endpoints.pipeline import Call, Handler, Reply


async def read(call: Call) -> Reply:
    return Reply(200, versions.describe(call.runtime, call.tenant))


def _document(call: Call) -> Any:
    """The body's document: JSON by its media type, else YAML."""
    content_type = call.headers.get("content-type", "")
    media = content_type.split(";", 1)[0].strip().lower()
    if media not in ACCEPTED_MEDIA:
        raise errors.unsupported_media_type(content_type)
    text: str = call.body or ""
    if not text.strip():
        raise errors.invalid("body", "A body is required: an OpenAPI 3.0 document as JSON or YAML.")
    if "json" in media:
        return parse_json(text.encode())
    try:
        return parse_yaml(text)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise errors.invalid("body", f"The body is not JSON or YAML: {first}") from None


async def select(call: Call) -> Reply:
    # weighed before it is parsed and compiled: a refused document costs no transient build
    weight = weights.INTERFACE_FACTOR * len(call.body or "")
    more = weight - call.runtime.interface_weights.get(call.tenant, 0)
    budget = call.tenant.budget
    if more > 0 and not budget.make_room(more):
        raise budget.refusal("body", weight, "This interface document, compiled,")
    document = _document(call)
    try:
        api = versions.from_document(document, source="PUT /_emulator/interface")
    except versions.DocumentError as exc:
        raise errors.invalid("body", f"The document cannot be served: {exc}.") from None
    versions.choose(call.runtime, call.tenant, api, weight)
    return Reply(200, versions.describe(call.runtime, call.tenant))


async def restore(call: Call) -> Reply:
    versions.choose(call.runtime, call.tenant, None)
    return Reply(200, versions.describe(call.runtime, call.tenant))


HANDLERS: dict[str, Handler] = {
    "ControlInterface": read,
    "ControlSetInterface": select,
    "ControlResetInterface": restore,
}
