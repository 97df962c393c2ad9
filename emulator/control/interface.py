"""Control: which published version of the interface serves the caller's key
(``PUT``/``GET``/``DELETE /_emulator/interface``)."""

from __future__ import annotations

from typing import Any

from emulator.contract.wire import parse_json
from emulator.control.scenarios import ACCEPTED_MEDIA
from emulator.domain import budget as weights
from emulator.domain import errors
from emulator.domain.datafiles import safe_loader
from emulator.domain.safeparse import check_yaml
from emulator.endpoints import versions
from emulator.endpoints.pipeline import Call, Handler, Reply


async def read(call: Call) -> Reply:
    return Reply(200, versions.describe(call.runtime, call.tenant))


def _document(call: Call) -> Any:
    """The body's document: JSON by its media type, else YAML (room made first for what
    PyYAML builds of it, :data:`~emulator.domain.budget.YAML_VALUE` a value)."""
    content_type = call.headers.get("content-type", "")
    media = content_type.split(";", 1)[0].strip().lower()
    if media not in ACCEPTED_MEDIA:
        raise errors.unsupported_media_type(content_type)
    text: str = call.body or ""
    if not text.strip():
        raise errors.invalid("body", "A body is required: an OpenAPI 3.0 document as JSON or YAML.")
    if "json" in media:
        return parse_json(text.encode())
    import yaml  # PyYAML: when a YAML document is first read

    try:
        _afford(call, weights.YAML_VALUE * check_yaml(text), "This YAML document, while it is read,")
        return yaml.load(text, Loader=safe_loader())
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise errors.invalid("body", f"The body is not JSON or YAML: {first}") from None


def _afford(call: Call, weight: int, what: str) -> None:
    """Room for ``weight`` bytes in the tenant's budget and the process's, or a 507. The
    key's current document stays charged meanwhile: both are held until the swap."""
    budget = call.tenant.budget
    if not budget.make_room(weight):
        raise budget.refusal("body", weight, what)


async def select(call: Call) -> Reply:
    # room is made before each step that builds (parsing, then the validators), so a
    # refused document costs no transient build; the control calls run one at a time
    _afford(call, weights.INTERFACE_FACTOR * len(call.body or ""), "This interface document, parsed,")
    document = _document(call)
    weighed: list[int] = []

    def afford(weight: int) -> None:
        weighed.append(weight)
        _afford(call, weight, "This interface document, compiled,")

    try:
        api = versions.from_document(document, "PUT /_emulator/interface", afford)
    except versions.DocumentError as exc:
        raise errors.invalid("body", f"The document cannot be served: {exc}.") from None
    versions.choose(call.runtime, call.tenant, api, weighed[0] if weighed else 0)
    return Reply(200, versions.describe(call.runtime, call.tenant))


async def restore(call: Call) -> Reply:
    versions.choose(call.runtime, call.tenant, None)
    return Reply(200, versions.describe(call.runtime, call.tenant))


HANDLERS: dict[str, Handler] = {
    "ControlInterface": read,
    "ControlSetInterface": select,
    "ControlResetInterface": restore,
}
