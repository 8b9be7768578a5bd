"""The operator's answer to a payout the signer's policy held: release it, or cancel it and give the money back.

Release (``orbchain payouts release``) queues the payout again with
``policy_released_by`` set: the signing boundary then lets it past the
operator's caps, allow-lists and the destination binding (the operator read
the destination), never past the ledger's reservation proof or a missing
approval, which hold it again.

Cancel (``orbchain payouts cancel``) fails it and re-credits the merchant
with what the LEDGER reserved for it (payouts in flight -> merchant
available, reference ``payout:<id>:release``, the same double-entry path as
any failed payout) and nothing when the ledger reserved nothing (a row
inserted by SQL), so an amount edited on the row can never mint money. One
conditional UPDATE moves the row, in the transaction that moves the money:
two cancels at once re-credit once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..events.outbox import enqueue_event
from ..ledger import book as ledger
from .service import CONFIRMING, POLICY_HELD, QUEUED, Row, fail_held, hook_record, webhook_body
from .payout_events import announce_payout
from .confirm_gate import NOT_SIGNED_FOR
from .reserve_release import give_back

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

CANCELLED_REASON = "cancelled_by_operator"
RELEASED_EVENT, CANCELLED_EVENT = "payout_policy_released", "payout_policy_cancelled"


async def find_held(gateway: "Gateway", ref: str) -> Row | None:
    """A payout by its id or track id (the operator may paste either)."""
    return await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :r OR track_id = :r", {"r": ref})


async def release_policy_hold(gateway: "Gateway", payout_id: str, by: str) -> Row | None:
    """Queue a policy-held payout again, past the operator's policy; None when it is not held by the policy.

    Never one held at confirmation (``confirm_gate``): its transaction is on the chain already, and queueing it
    would sign and pay it again.
    """
    now = gateway.now()
    async with gateway.db.transaction():
        row = await gateway.db.fetch_one(
            "UPDATE payouts SET stage = :queued, policy_released_by = :by, next_attempt_at = :now, updated_at = :now"
            " WHERE id = :id AND status = :s AND stage = :held AND COALESCE(policy_hold, '') <> :unsigned RETURNING *",
            {"queued": QUEUED, "by": by[:200], "now": now, "id": payout_id, "s": CONFIRMING, "held": POLICY_HELD,
             "unsigned": NOT_SIGNED_FOR})
    if row is not None:
        await announce_payout(gateway, row, RELEASED_EVENT, by=by, reason=row["policy_hold"])
    return row


async def cancel_policy_hold(gateway: "Gateway", payout_id: str, by: str) -> Row | None:
    """Fail a policy-held payout and re-credit what the ledger reserved for it; None when it is not held."""
    db = gateway.db
    now = gateway.now()
    posted = None
    async with db.transaction():
        row = await fail_held(db, payout_id, held_stage=POLICY_HELD, reason=CANCELLED_REASON, now=now)
        if row is None:
            return None
        # The ledger's figures, not the row's: an amount edited by SQL re-credits what was really reserved.
        posted = (await give_back(gateway, row)).posted
        if posted is not None:
            await enqueue_event(gateway, merchant_id=row["merchant_id"], event_type="payout.failed",
                                body=webhook_body(gateway, row), logical_key=f"payout.failed:{row['track_id']}",
                                url=row["callback_url"], request_id=row["request_id"])
    if posted is not None:
        await ledger.notify_posted(gateway, posted)
        await gateway.hooks.payout_finished(payout=hook_record(gateway, row))
    await announce_payout(gateway, row, CANCELLED_EVENT, by=by, reason=row["policy_hold"],
                          recredited="yes" if posted is not None else "no (nothing was reserved)")
    return row
