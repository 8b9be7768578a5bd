"""Confirming a payout only on a transaction signed for it: the watcher judges the row as the signer did.

Why: the worker confirms a broadcast payout once the node says its
``tx_hash`` is deep enough, and confirming books the row's amount out of
payouts in flight (the money of the other payouts on their way) and sends
``payout.confirmed`` to the row's ``callback_url``. A row written into the
database by hand (or by a compromised web process) that names the txid of a
real payout would confirm on that payout's transaction, which the node of
course reports as mined. The signer never signed anything for such a row, and
the chain's sender keeps its own signing records (``PayoutSender.signed_for``:
the devnet's ``devnet_txs.payout_id``), so the transaction must be one it
signed for THIS payout.

A payout whose transaction is not is never confirmed: it is held (stage
``policy_held``, ``policy_hold`` = :data:`NOT_SIGNED_FOR`) with its money
where it was, counted in ``orbchain_payouts_held_by_policy_total``, logged as
an ERROR, announced to the operator and to the merchant's activity log as any
hold by the signer's policy. The operator may only cancel it
(``payouts cancel``: the ledger's reserve, if any, given back); releasing it
would queue it to be signed and paid again, so ``policy_holds`` refuses to.
A sender without records (``signed_for`` None) is not judged: the row's word.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Sequence

from ..events import operator as operator_events
from ..events.operator import notify_operator
from ..types.chains import PayoutSender, SignedPayout
from .payout_events import announce_payout
from .service import BROADCAST, CONFIRMING, POLICY_HELD, Row
from .signing_gate import HELD_EVENT, count_hold, held_body

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

NOT_SIGNED_FOR = "tx_not_signed_for_payout"


async def vouched(gateway: "Gateway", sender: PayoutSender, group: Sequence[Row],
                  mined: SignedPayout | None) -> list[Row]:
    """The rows of ``group`` whose transaction (and ``mined`` replacement) was signed for them; holds the rest."""
    kept = []
    for row in group:
        hashes = [row["tx_hash"], *([mined.tx_hash] if mined is not None and mined.tx_hash != row["tx_hash"] else [])]
        verdicts = [await sender.signed_for(row["id"], tx_hash) for tx_hash in hashes]
        if False in verdicts:
            await _hold(gateway, row)
        else:
            kept.append(row)
    return kept


async def _hold(gateway: "Gateway", row: Row) -> None:
    """Take the claimed, broadcast payout out of the worker's hands, its money untouched; count and announce it."""
    db = gateway.db
    async with db.transaction():
        held = await db.fetch_one(
            "UPDATE payouts SET stage = :held, policy_hold = :reason, claimed_until = NULL, claim_token = NULL,"
            " updated_at = :now WHERE id = :id AND claim_token = :token AND status = :s AND stage = :broadcast"
            " RETURNING *", {"held": POLICY_HELD, "reason": NOT_SIGNED_FOR, "now": gateway.now(), "id": row["id"],
                             "token": row["claim_token"], "s": CONFIRMING, "broadcast": BROADCAST})
        if held is None:  # another worker holds the claim now: it judges the row itself
            return
        await notify_operator(gateway, operator_events.HELD, held_body(gateway, held, NOT_SIGNED_FOR),
                              f"{operator_events.HELD}:{held['id']}:{NOT_SIGNED_FOR}")
    count_hold(gateway, held, NOT_SIGNED_FOR)
    log.error("payout %s (%s, merchant %s) NOT confirmed: its transaction %s is mined but was not signed for it"
              " (a row written outside the gateway naming another payout's transaction?); held, its money untouched;"
              " cancel it with `orbchain payouts cancel %s`", held["id"], held["coin"], held["merchant_id"],
              held["tx_hash"], held["track_id"])
    await announce_payout(gateway, held, HELD_EVENT, reason=NOT_SIGNED_FOR)
