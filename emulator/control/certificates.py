"""Control: the caller's client certificate names (the real service takes them through
its portal; gateways that need one check ``tenant.certificates``)."""

from __future__ import annotations

from emulator import errors, limits
from emulator.pipeline import Call, Handler, Reply

MAX_CERTIFICATES = 1000


def _listing(names: set[str]) -> dict[str, list[str]]:
    return {"certificates": sorted(names)}


async def list_certificates(call: Call) -> Reply:
    return Reply(200, _listing(call.tenant.certificates))


async def add_certificate(call: Call) -> Reply:
    names = call.tenant.certificates
    name = call.body["name"]
    limits.admit_name(call.tenant, names, name, "client certificates", "name")
    if name not in names and len(names) >= MAX_CERTIFICATES:
        raise errors.invalid("name", f"A tenant holds at most {MAX_CERTIFICATES} certificate names.")
    names.add(name)
    return Reply(201, _listing(names))


async def remove_certificate(call: Call) -> Reply:
    names = call.tenant.certificates
    name = call.path["name"]
    if name not in names:
        raise errors.not_found("name", f"No client certificate named '{name}' is registered.")
    names.discard(name)
    return Reply(200, _listing(names))


HANDLERS: dict[str, Handler] = {
    "ControlCertificates": list_certificates,
    "ControlAddCertificate": add_certificate,
    "ControlRemoveCertificate": remove_certificate,
}
