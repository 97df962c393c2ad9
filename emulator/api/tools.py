"""``/Tools``: card facts from the BIN table, the Luhn check and the card risk check.

Numbers are read as the tools reference writes them (spaces and dashes dropped) and must
be all digits under any served document, however loose its own pattern."""

from __future__ import annotations

from emulator.domain import errors
from emulator.domain.cards import MAX_BIN, MIN_BIN, default_table, luhn_valid
from emulator.domain.risk import assess, default_ip_table
from emulator.endpoints.pipeline import Call, Handler, Reply

_SEPARATORS = str.maketrans("", "", " -")


def digits(call: Call, name: str, low: int, high: int) -> str:
    """The query parameter ``name`` as ``low`` to ``high`` digits, else a 400 naming it."""
    value = str(call.query[name]).strip().translate(_SEPARATORS)
    if not (value.isascii() and value.isdigit() and low <= len(value) <= high):
        raise errors.invalid(name, f"The field {name} must be {low} to {high} digits (spaces and dashes allowed).")
    return value


def _iin(call: Call) -> str:
    return digits(call, "iin", MIN_BIN, MAX_BIN)


async def country_lookup(call: Call) -> Reply:
    iin = _iin(call)
    country = default_table().lookup(iin).country
    if country is None:
        raise errors.not_found("iin", f"No issuing country is known for BIN {iin}.")
    return Reply(200, {"countryCode": country})


async def brand_lookup(call: Call) -> Reply:
    brand = default_table().lookup(_iin(call)).brand
    return Reply(200, {"brand": brand.tools_name if brand else None, "brandLogoUrl": brand.logo_url if brand else None})


async def iin_lookup(call: Call) -> Reply:
    return Reply(200, default_table().lookup(_iin(call)).to_iin_data())


async def luhn_check(call: Call) -> Reply:
    number = digits(call, "number", 8, 19)
    table = default_table()
    iin_data = table.lookup(number, whole_card=True).to_iin_data() if call.query.get("metaData") else None
    return Reply(200, {"iinData": iin_data, "luhnValid": luhn_valid(number), "error": table.length_problem(number)})


async def card_validate(call: Call) -> Reply:
    body = call.body
    try:
        ip = default_ip_table().facts(body["clientIPAddress"])
    except ValueError:
        raise errors.invalid("clientIPAddress", "The ClientIPAddress field must be an IPv4 or IPv6 address.") from None
    info = default_table().lookup(_iin(call))
    row = info.row
    billing = body["countryCode"]
    result = assess(info.country, ip.country, billing, ip.anonymous_proxy)
    return Reply(
        200,
        {
            "description": result.description,
            "riskLevel": result.level,
            "cardBrand": info.brand.tools_name if info.brand else None,
            "cardType": row.card_type if row else None,
            "cardCategory": row.category if row else None,
            "issuerName": row.issuer if row else None,
            "issuerCountry": info.country,
            "countryByIP": ip.country,
            "countryFromBillingAddress": billing,
            "anonymousProxyUsed": ip.anonymous_proxy,
        },
    )


HANDLERS: dict[str, Handler] = {
    "CountryLookup": country_lookup,
    "BrandLookup": brand_lookup,
    "IinLookup": iin_lookup,
    "LuhnCheck": luhn_check,
    "CardValidate": card_validate,
}
