"""Lightning payout destinations: a BOLT 11 invoice or a Lightning Address.

Why: SPEC 4.3 accepts either for BTC_LN payouts. This module only checks
syntax and (for invoices) the network; resolving ``user@domain`` through the
domain's /.well-known/lnurlp endpoint, with its private-address refusal, is the
Lightning chain adapter's job, not a pure function's.
"""

from __future__ import annotations

import re

from ...api import AddressError, AddressFamily
from ...api.addresses import clean
from .bolt11 import MAX_BOLT11_LENGTH, decode_bolt11

__all__ = ["INVOICE_NETWORKS", "address_family", "validate_lightning", "validate_lightning_address"]

_LOCAL_RE = re.compile(r"[a-z0-9\-_.+]{1,64}")
_LABEL_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")

# gateway network -> invoice networks it accepts
INVOICE_NETWORKS = {
    "mainnet": frozenset({"mainnet"}),
    "testnet": frozenset({"testnet", "signet"}),
    "regtest": frozenset({"regtest"}),
}


def validate_lightning_address(address: object) -> str:
    """Syntax of a Lightning Address ``user@domain``; returns it in lower case.

    Local part: a-z 0-9 - _ . + ; domain: DNS labels with at least one dot and a
    top-level label that is not all digits (so IP literals are refused).
    """
    text = clean(address)
    if text.lower().startswith("lightning:"):
        text = text[10:]
    text = text.lower()
    if text.count("@") != 1:
        raise AddressError("a Lightning Address has exactly one @")
    local, domain = text.split("@")
    if not _LOCAL_RE.fullmatch(local):
        raise AddressError("Lightning Address user part allows only a-z 0-9 - _ . +")
    if domain.endswith("."):
        domain = domain[:-1]
    labels = domain.split(".")
    if len(labels) < 2 or len(domain) > 253:
        raise AddressError("Lightning Address domain needs a dot")
    if not all(_LABEL_RE.fullmatch(label) for label in labels):
        raise AddressError("Lightning Address domain is not a valid host name")
    if labels[-1].isdigit():
        raise AddressError("Lightning Address domain must be a name, not an IP address")
    return f"{local}@{domain}"


def validate_lightning(destination: object, network: str = "mainnet") -> str:
    """A BOLT 11 invoice for this network or a Lightning Address; returns the
    normalized form (lower case; the invoice without a "lightning:" scheme)."""
    accepted = INVOICE_NETWORKS.get(network)
    if accepted is None:
        raise AddressError(f"unknown network {network}")
    if isinstance(destination, str) and "@" in destination:
        return validate_lightning_address(destination)
    text = clean(destination, MAX_BOLT11_LENGTH)
    invoice = decode_bolt11(text)
    if invoice.network not in accepted:
        raise AddressError(f"a Lightning {invoice.network} invoice, not valid on {network}")
    return invoice.invoice


def address_family(network: str) -> AddressFamily:
    """The ``lightning`` family: validate only; invoices come from a node, not a seed."""
    return AddressFamily(
        "lightning", network, "Lightning: BOLT 11 invoice or Lightning Address", validate_lightning,
        no_derivation_reason="Lightning invoices are issued by the node, not derived",
    )
