"""Payment URIs (BIP-21, EIP-681, Solana Pay, ``tron:``) from a payment view, shared by chain plugins.

Why: the hosted page's QR and its "Open in wallet" link are the same text
(``decide_qr_payload``), so a payer who scans and one who taps get the same
request. Amounts go through the coin's base units (``Coin.to_units``, then
``Coin.format`` or the integer itself), never a float: what the URI asks
for is exactly what the payment's ledger expects.
"""

from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import quote

from ..api import Coin


def amount_units(payment: Mapping[str, Any], coin: Coin) -> int | None:
    """The payment's amount in base units; None when it names none (the payer types it)."""
    amount = payment.get("pay_amount")
    return coin.to_units(amount) if amount else None


def _query(pairs: list[tuple[str, str]]) -> str:
    return "?" + "&".join(f"{key}={quote(value, safe='')}" for key, value in pairs) if pairs else ""


def decimal_uri(scheme: str, payment: Mapping[str, Any], coin: Coin, **extra: str) -> str | None:
    """``<scheme>:<address>?amount=<coin units>`` (BIP-21, Solana Pay, ``tron:``), extra keys after it.

    The amount is a plain decimal with no exponent and no trailing zeros
    (``Coin.format``): what BIP-21 and Solana Pay require.
    """
    address = payment.get("address")
    if not address:
        return None
    units = amount_units(payment, coin)
    pairs = [("amount", coin.format(units))] if units else []
    pairs += [(key.replace("_", "-"), value) for key, value in extra.items()]
    return f"{scheme}:{address}{_query(pairs)}"


def eip681_uri(payment: Mapping[str, Any], coin: Coin, chain_id: int) -> str | None:
    """EIP-681: ``ethereum:<to>@<chain>?value=<wei>`` for a native coin, a ``transfer`` call for a token.

    Both amounts are integers of base units (wei, the token's smallest unit):
    no wallet reads an integer as ether, which ``value=0.5`` risks.
    """
    address = payment.get("address")
    if not address:
        return None
    units = amount_units(payment, coin)
    if coin.contract is None:
        return f"ethereum:{address}@{chain_id}" + (f"?value={units}" if units else "")
    pairs = [("address", address)] + ([("uint256", str(units))] if units else [])
    return f"ethereum:{coin.contract}@{chain_id}/transfer{_query(pairs)}"
