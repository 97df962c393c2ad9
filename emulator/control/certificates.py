"""Control: the caller's client certificate names (the real service takes them through
its portal; gateways that need one check ``tenant.certificates``)."""

from __future__ import annotations

from emulator.domain import errors
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.stores.certificates import Certificates


def _listing(names: Certificates) -> dict[str, list[str]]:
    return {"certificates": names.names()}


async def list_certificates(call: Call) -> Reply:
    return Reply(200, _listing(call.tenant.certificates))


async def add_certificate(call: Call) -> Reply:
    names = call.tenant.certificates
    name = call.body["name"]
    try:
        names.register(name)  # a 507 at the tenant's limit (hardening)
    except ValueError as exc:
        raise errors.invalid("name", str(exc)) from None
    return Reply(201, _listing(names))


async def remove_certificate(call: Call) -> Reply:
    names = call.tenant.certificates
    name = call.path["name"]
    if not names.remove(name):
        raise errors.not_found("name", f"No client certificate named '{name}' is registered.")
    return Reply(200, _listing(names))


HANDLERS: dict[str, Handler] = {
    "ControlCertificates": list_certificates,
    "ControlAddCertificate": add_certificate,
    "ControlRemoveCertificate": remove_certificate,
}
