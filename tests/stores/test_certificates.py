"""Client certificate names per tenant."""

from __future__ import annotations

import pytest

from emulator.domain.errors import ApiError
from emulator.stores import certificates
from tests.conftest import bare_tenant


def test_config_certificates_are_registered() -> None:
    tenant = bare_tenant(seed=None, certificates=["myClientCert"])
    certificates.require_certificate(tenant, "myClientCert", "certificateName")
    assert certificates.names(tenant) == ["myClientCert"]
    assert certificates.is_registered(tenant, "myClientCert")
    assert not certificates.is_registered(tenant, "myclientcert")


def test_unknown_certificate_is_refused_clearly() -> None:
    tenant = bare_tenant(seed=None)
    with pytest.raises(ApiError) as caught:
        certificates.require_certificate(tenant, "nope", "fallbackUpgs[1].paymentGatewayCertName")
    assert caught.value.status == 400
    assert caught.value.body == [
        {
            "fieldName": "fallbackUpgs[1].paymentGatewayCertName",
            "errors": [
                "Unknown client certificate 'nope'. Register it with POST /_emulator/certificates "
                "or in the config file."
            ],
        }
    ]
    with pytest.raises(ApiError) as caught:
        certificates.require_certificate(tenant, None, "certificateName")
    assert caught.value.body[0]["fieldName"] == "certificateName"


def test_register_and_remove() -> None:
    tenant = bare_tenant(seed=None)
    assert tenant.certificates.register("a") is True
    assert tenant.certificates.register("a") is False
    certificates.require_certificate(tenant, "a", "certificateName")
    assert tenant.certificates.remove("a") is True
    assert tenant.certificates.remove("a") is False
    with pytest.raises(ApiError):
        certificates.require_certificate(tenant, "a", "certificateName")
    for bad in ("", "x" * 129, "tab\there"):
        with pytest.raises(ValueError):
            tenant.certificates.register(bad)
    assert tenant.certificates.register("x" * 128) is True


def test_reset_restores_the_configured_names() -> None:
    tenant = bare_tenant(seed=None, certificates=["cfg"])
    tenant.certificates.register("extra")
    tenant.reset()
    assert certificates.names(tenant) == ["cfg"]


def test_certificates_are_perbare_tenant(seed=None) -> None:
    one, two = bare_tenant(seed=None), bare_tenant(seed=None)
    one.certificates.register("mine")
    assert not certificates.is_registered(two, "mine")
