"""What binds a payout's destination to the money reserved for it: a keyed digest kept with the reservation.

The ledger's reserve posting proves who pays, what coin and how much, but
not where the money goes. At creation the reserve posting's memo takes an
HMAC of (payout id, merchant, coin, chain, amount, destination); the signing
boundary recomputes it from the row it is about to sign. Someone who can
write to the database but does not hold the gateway's secrets cannot make a
row (or change one) whose digest verifies, so an edited destination or
amount, or a forged reservation, is held instead of signed.

The key is derived from ``secrets.jwt_secret`` (a process that creates
payouts holds it today; the separate signer will share a key of its own,
docs/decisions.md). Rotating that secret leaves queued payouts unverifiable:
the signer holds them with ``binding_mismatch`` and the operator releases
them after reading their destinations (docs/payouts.md).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

from ..keys.derived import purpose_key

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

MEMO_PREFIX = "binding:v1:"
_KEY_PURPOSE = "core/payout-binding"  # the core's namespace: derived_key refuses it to plugins


def binding_key(gateway: "Gateway") -> bytes:
    """The binding key of this deployment, derived (never the secret itself) so it can be handed on alone."""
    return purpose_key(gateway.require_secrets(), _KEY_PURPOSE)


def payout_binding(key: bytes, *, payout_id: str, merchant_id: str, coin: str, chain: str, amount: int,
                   destination: str) -> str:
    """The memo a payout's reserve posting carries: ``binding:v1:<hex HMAC-SHA256>``."""
    text = "\n".join((payout_id, merchant_id, coin, chain, str(int(amount)), destination))
    return MEMO_PREFIX + hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def binding_matches(key: bytes, memo: str | None, *, payout_id: str, merchant_id: str, coin: str, chain: str,
                    amount: int, destination: str) -> bool:
    """Does the reservation's memo bind exactly these fields? Constant-time."""
    if not memo or not memo.startswith(MEMO_PREFIX):
        return False
    expected = payout_binding(key, payout_id=payout_id, merchant_id=merchant_id, coin=coin, chain=chain,
                              amount=amount, destination=destination)
    return hmac.compare_digest(memo, expected)
