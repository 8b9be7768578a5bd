"""Notifications to the linked chat (docs/telegram.md, docs/decisions.md "Mini-app").

Sent: a payment reaching Paid, and a payout reaching a final state
(Confirmed or Failed). Each says what happened, the track id, the coin and
the amount, and nothing a chat shared with other people should not see: no
address, destination, transaction hash, order id, customer e-mail, failure
detail or balance. One message per logical event (the outbox key), so a
hook that runs twice after a crash queues one message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import store
from .bot import text_message
from .settings import settings_of

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway, PaymentView, PayoutView


def _amount(gateway: "Gateway", coin: str, units: Any) -> str:
    if units is None or coin not in gateway.coins:
        return coin
    return f"{gateway.coins.require(coin).format(int(units))} {coin}"


async def _send(gateway: "Gateway", merchant_id: str, key: str, text: str) -> None:
    if not settings_of(gateway).enabled:
        return
    link = await store.link_of(gateway, merchant_id)
    if link is None:
        return
    chat_id = int(link["chat_id"])
    await store.enqueue(gateway, f"{key}:{chat_id}", chat_id, text_message(chat_id, text))


async def payment_paid(gateway: "Gateway", payment: PaymentView) -> None:
    what = _amount(gateway, payment["pay_currency"], payment["pay_amount"])
    await _send(gateway, payment["merchant_id"], f"payment.paid:{payment['track_id']}",
                f"Payment {payment['track_id']} is paid: {what}.")


async def payout_finished(gateway: "Gateway", payout: PayoutView) -> None:
    what = _amount(gateway, payout["coin"], payout["amount"])
    if payout["status"] == "Confirmed":
        text = f"Payout {payout['track_id']} is confirmed: {what}."
    elif payout["status"] == "Failed":
        text = f"Payout {payout['track_id']} failed: {what} went back to your balance."
    else:
        return
    await _send(gateway, payout["merchant_id"], f"payout.{payout['status'].lower()}:{payout['track_id']}", text)
