"""Lightning Address payouts: LUD-16 resolution to an LUD-06 payRequest, then an invoice.

Why here and guarded: the domain is the merchant's choice, so the gateway
fetching ``https://<domain>/.well-known/lnurlp/<user>`` (and then the
service's callback URL) is an outbound request to an arbitrary host. Both
go through ``core.infra.netguard``: private, loopback, link-local and internal
addresses are refused before the request and again at connect time (DNS
rebinding), unless the operator allowed them with ``[plugin.lightning]
lnurl_allow_private_hosts = true`` (tests and a local LNURL server only; off
by default, and separate from ``webhooks.allow_private_urls``).

Checks (LUD-06): ``tag`` is ``payRequest``; the amount in millisatoshi lies
within ``minSendable``..``maxSendable``; the callback's invoice is for
exactly that amount and commits to the metadata: its ``description_hash``
is SHA-256 of the ``metadata`` string as served. LUD-16: the metadata names
this address (``text/identifier`` or ``text/email``).
"""

from __future__ import annotations

import hashlib
import json
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit, parse_qsl

import aiohttp

from ...api import AddressError, UnsafeUrl, check_public_url, outbound_session
from .bolt11 import Bolt11Invoice, decode_bolt11

__all__ = ["LnurlError", "Lookup", "PayParams", "fetch_pay_params", "request_invoice", "resolve"]

MAX_RESPONSE_BYTES = 64 * 1024


class LnurlError(Exception):
    """A Lightning Address could not be used; ``code`` is the API's error code.

    ``transient`` errors (the service did not answer) may succeed later;
    the others are the service's or the address's fault.
    """

    def __init__(self, message: str, code: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.transient = transient


@dataclass(frozen=True)
class PayParams:
    """An LUD-06 payRequest as served for one Lightning Address."""

    address: str
    callback: str
    min_sendable_msat: int
    max_sendable_msat: int
    metadata: str


@dataclass(frozen=True)
class Lookup:
    """How to reach Lightning Address services: the SSRF switch, a timeout, an extra CA."""

    allow_private: bool
    timeout_seconds: float
    ca_file: str | None = None

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if self.ca_file:
            context.load_verify_locations(cafile=self.ca_file)
        return context


def well_known_url(address: str) -> str:
    """LUD-16: ``user@domain`` -> ``https://domain/.well-known/lnurlp/user``."""
    user, domain = address.split("@")
    return f"https://{domain}/.well-known/lnurlp/{user}"


async def _get_json(lookup: Lookup, url: str) -> dict[str, Any]:
    if urlsplit(url).scheme != "https":
        raise LnurlError("a Lightning Address service must use https", "lightning_address_invalid")
    try:
        await check_public_url(url, allow_private=lookup.allow_private)
    except UnsafeUrl as exc:
        raise LnurlError(f"Lightning Address host refused: {exc}", "lightning_address_private_host") from None
    session = outbound_session(allow_private=lookup.allow_private, timeout_seconds=lookup.timeout_seconds)
    try:
        async with session, session.get(url, ssl=lookup.ssl_context(), allow_redirects=False,
                                        headers={"Accept": "application/json"}) as response:
            raw = await response.content.read(MAX_RESPONSE_BYTES + 1)
            status = response.status
    except OSError as exc:
        if "private or internal" in str(exc):
            raise LnurlError("Lightning Address host refused: points to a private or internal address",
                             "lightning_address_private_host") from None
        raise LnurlError(f"Lightning Address service unreachable: {exc}", "lightning_address_unreachable",
                         transient=True) from None
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise LnurlError(f"Lightning Address service unreachable: {type(exc).__name__}",
                         "lightning_address_unreachable", transient=True) from None
    if len(raw) > MAX_RESPONSE_BYTES:
        raise LnurlError("Lightning Address service answered too much", "lightning_address_invalid")
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise LnurlError(f"Lightning Address service answered HTTP {status} without a JSON object",
                         "lightning_address_invalid")
    if str(body.get("status", "")).upper() == "ERROR":
        raise LnurlError(f"Lightning Address service refused: {str(body.get('reason', ''))[:200]}",
                         "lightning_address_refused")
    if status != 200:
        raise LnurlError(f"Lightning Address service answered HTTP {status}", "lightning_address_invalid")
    return body


def _msat(body: dict[str, Any], name: str) -> int:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LnurlError(f"Lightning Address service sent an invalid {name}", "lightning_address_invalid")
    return value


def _names_address(metadata: str, address: str) -> bool:
    try:
        entries = json.loads(metadata)
    except ValueError:
        return False
    return isinstance(entries, list) and any(
        isinstance(e, list) and len(e) == 2 and e[0] in ("text/identifier", "text/email")
        and isinstance(e[1], str) and e[1].lower() == address for e in entries)


async def fetch_pay_params(lookup: Lookup, address: str) -> PayParams:
    """Step 1: the payRequest of ``address`` (already syntax-checked, lower case)."""
    body = await _get_json(lookup, well_known_url(address))
    if body.get("tag") != "payRequest" or not isinstance(body.get("callback"), str):
        raise LnurlError("Lightning Address service did not answer a payRequest", "lightning_address_invalid")
    metadata = body.get("metadata")
    if not isinstance(metadata, str) or not _names_address(metadata, address):
        raise LnurlError("Lightning Address metadata does not name this address", "lightning_address_invalid")
    low, high = _msat(body, "minSendable"), _msat(body, "maxSendable")
    if low > high:
        raise LnurlError("Lightning Address service sent minSendable above maxSendable", "lightning_address_invalid")
    return PayParams(address, body["callback"], low, high, metadata)


def check_amount(params: PayParams, amount_msat: int) -> None:
    """The amount must lie within the service's limits (LUD-06)."""
    if not params.min_sendable_msat <= amount_msat <= params.max_sendable_msat:
        raise LnurlError(
            f"amount outside what {params.address} accepts: {params.min_sendable_msat // 1000}"
            f"-{params.max_sendable_msat // 1000} sat", "lightning_address_amount_out_of_range")


def _with_amount(callback: str, amount_msat: int) -> str:
    parts = urlsplit(callback)
    query = parse_qsl(parts.query, keep_blank_values=True) + [("amount", str(amount_msat))]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))


async def request_invoice(lookup: Lookup, params: PayParams, amount_msat: int, network: set[str]) -> Bolt11Invoice:
    """Step 2: ask the callback for an invoice of ``amount_msat`` and check it (amount, hash, network)."""
    check_amount(params, amount_msat)
    body = await _get_json(lookup, _with_amount(params.callback, amount_msat))
    if not isinstance(body.get("pr"), str):
        raise LnurlError("Lightning Address service answered without an invoice (pr)", "lightning_address_invalid")
    try:
        invoice = decode_bolt11(body["pr"])
    except AddressError as exc:
        raise LnurlError(f"Lightning Address service sent an invalid invoice: {exc}", "lightning_address_invalid") \
            from None
    if invoice.network not in network:
        raise LnurlError(f"Lightning Address service sent a {invoice.network} invoice", "lightning_address_invalid")
    if invoice.amount_msat != amount_msat:
        raise LnurlError("Lightning Address invoice is not for the requested amount", "lightning_address_invalid")
    if invoice.description_hash != hashlib.sha256(params.metadata.encode("utf-8")).hexdigest():
        raise LnurlError("Lightning Address invoice does not commit to the service's metadata",
                         "lightning_address_invalid")
    return invoice


async def resolve(lookup: Lookup, address: str, amount_msat: int, network: set[str]) -> Bolt11Invoice:
    """Both steps: the checked invoice ``address`` issues for ``amount_msat``."""
    params = await fetch_pay_params(lookup, address)
    return await request_invoice(lookup, params, amount_msat, network)
