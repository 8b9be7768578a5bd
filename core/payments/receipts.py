"""Signed settlement receipts (SPEC 4.2, receipt endpoint).

The receipt is canonical JSON (sorted keys, no whitespace, UTF-8) signed
with the operator's Ed25519 key. Verifiers check the signature over
``canonical`` exactly as received, never over a re-serialisation, and pin
the public key. A signature proves only that the gateway saw the payment
as Paid at ``issued_at``; the chain is checked through ``deposits[].tx_hash``.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Mapping, Sequence

from ..types.errors import InvalidRequest
from ..types.statuses import PAID
from .service import payment_deposits
from ..contract.gateway import PluginGateway as Gateway

RECEIPT_VERSION = 1
# DER prefix of SubjectPublicKeyInfo for Ed25519 (RFC 8410, section 4).
_ED25519_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")


def spki_pem(raw_public_key: bytes) -> str:
    """The SPKI PEM of a 32-byte Ed25519 public key."""
    der = base64.b64encode(_ED25519_SPKI_PREFIX + raw_public_key).decode()
    return "-----BEGIN PUBLIC KEY-----\n" + der + "\n-----END PUBLIC KEY-----\n"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def public_key_fields(gateway: "Gateway") -> dict[str, Any]:
    """The pinned-key fields shared by receipts and GET /v1/common/receipt-public-key."""
    secrets = gateway.require_secrets()
    raw = bytes(secrets.receipt_key.verify_key)
    return {
        "public_key": base64.b64encode(raw).decode(),
        "public_key_pem": spki_pem(raw),
        "algorithm": "Ed25519",
        "ephemeral": secrets.receipt_key_generated,
    }


def build_receipt(
    gateway: "Gateway", payment: Mapping[str, Any], deposits: Sequence[Mapping[str, Any]], issued_at: int
) -> dict[str, Any]:
    pay_coin = gateway.coins.require(payment["pay_currency"])
    credited = [d for d in deposits if d["status"] == "CREDITED"]
    return {
        "v": RECEIPT_VERSION,
        "type": "payment_receipt",
        "track_id": payment["track_id"],
        "merchant_id": payment["merchant_id"],
        "status": payment["status"],
        "pay_currency": payment["pay_currency"],
        "pay_amount": (
            None if payment["pay_amount"] is None else pay_coin.format(gateway.db.to_int(payment["pay_amount"]))
        ),
        "amount_fiat": payment["amount_fiat"],
        "fiat_currency": payment["fiat_currency"],
        "paid_at": payment["paid_at"],
        "deposits": [
            {
                "tx_hash": d["tx_hash"],
                "coin": d["coin"],
                "amount": gateway.coins.require(d["coin"]).format(gateway.db.to_int(d["amount"])),
                "confirmations": int(d["confirmations"]),
                "at": d["credited_at"],
            }
            for d in credited
        ],
        "issued_at": issued_at,
    }


async def issue_receipt(gateway: "Gateway", payment: Mapping[str, Any]) -> dict[str, Any]:
    """Sign a receipt for a Paid payment; anything else is refused."""
    if payment["status"] != PAID:
        raise InvalidRequest("receipts are issued for Paid payments only", code="payment_not_paid")
    receipt = build_receipt(gateway, payment, await payment_deposits(gateway, payment["track_id"]), gateway.now())
    canonical = canonical_json(receipt)
    signature = gateway.require_secrets().receipt_key.sign(canonical.encode("utf-8")).signature
    return {
        "receipt": receipt,
        "canonical": canonical,
        "signature": base64.b64encode(signature).decode(),
        **public_key_fields(gateway),
    }
