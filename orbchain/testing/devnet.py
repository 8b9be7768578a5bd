"""Paying a payment on the devnet from a plugin's own tests, through the core scanner.

A feature plugin reacts to money arriving (a subscription period paid, a
cashback posted at credit time); its tests need a payment paid the way a
payer pays. The devnet (the built-in simulated chain, on in development)
takes the transfer, mines it to the confirmations the deposit needs, and the
core scanner sees it exactly as it sees a real chain.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping

# The deposit is final once it left PENDING: CREDITED, held CONFIRMED by a plugin, or FAILED.
_WAITING = "PENDING"


def gateway_of(client_or_gateway: Any) -> Any:
    """The gateway behind an aiohttp test client (``make_client``, ``merchant_shop.client``) or the gateway itself."""
    from ..core.gateway import Gateway
    from ..web.keys import GATEWAY

    if isinstance(client_or_gateway, Gateway):
        return client_or_gateway
    app = getattr(client_or_gateway, "app", None)
    if app is None or GATEWAY not in app:
        raise TypeError(f"pay_on_devnet needs a test client of an Orbchain app or a Gateway, got {client_or_gateway!r}")
    return app[GATEWAY]


def _track_id(payment: Any) -> str:
    if isinstance(payment, str):
        return payment
    track_id = payment.get("track_id") if isinstance(payment, Mapping) else getattr(payment, "track_id", None)
    if not isinstance(track_id, str) or not track_id:
        raise TypeError(f"pay_on_devnet needs a track id or a payment with a track_id, got {payment!r}")
    return track_id


def _units(coin: Any, amount: int | str | Decimal | None, due: int | None, track_id: str) -> int:
    if amount is None:
        if due is None:
            raise ValueError(f"payment {track_id}: the payer chooses the amount; pass amount=")
        return due
    if isinstance(amount, bool) or not isinstance(amount, (int, str, Decimal)):
        raise TypeError(f"amount must be base units (int) or a decimal in {coin.symbol} (str, Decimal), got {amount!r}")
    return amount if isinstance(amount, int) else coin.to_units(Decimal(amount))


async def pay_on_devnet(client_or_gateway: Any, payment: Any, amount: int | str | Decimal | None = None, *,
                        confirm: bool = True) -> Any:
    """Pay ``payment`` on the devnet, mine it to its confirmations and scan; the payment afterwards.

    ``payment`` is a track id, the ``data`` of a payment the API answered, or
    an ``orbchain.api.PaymentRecord``; it needs its address (a
    hosted invoice has one once its coin is chosen). ``amount`` defaults to
    what the payment asks; an ``int`` is base units, a ``str``/``Decimal`` a
    decimal in the payment's coin (pay less to test an underpayment).
    ``confirm=False`` leaves the transfer in the mempool, scanned once: the
    payment shows Paying. Returns the :class:`~orbchain.api.PaymentRecord`
    read after the last scan. A deposit still PENDING after its confirmations
    (a plugin's ``filter_credit_postings`` refused, say; the log names it) raises
    ``AssertionError``.
    """
    from ..chains.devnet import devnet_chain
    from ..core.watching.scanner import scan_chain
    from ..core.receiving.payment_services import find_payment

    gateway = gateway_of(client_or_gateway)
    chain, adapter = devnet_chain(gateway), gateway.chains.get("devnet")
    if chain is None or adapter is None:
        raise RuntimeError("the devnet is off: it runs in development unless [plugin.devnet] enabled = false"
                           " or the plugin is blocked")
    track_id = _track_id(payment)
    record = await find_payment(gateway, track_id)
    if record is None:
        raise LookupError(f"no payment {track_id}")
    if not record.address:
        raise ValueError(f"payment {track_id} has no address yet: choose its coin first (the hosted page's picker)")
    coin = gateway.coins.require(record.pay_currency)
    tx_hash = await chain.pay(coin, record.address, _units(coin, amount, record.pay_amount, track_id))
    await scan_chain(gateway, adapter)
    if confirm:
        await _mine_until_final(gateway, chain, adapter, tx_hash)
    return await find_payment(gateway, track_id)


async def _mine_until_final(gateway: Any, chain: Any, adapter: Any, tx_hash: str) -> None:
    """One block at a time (each scanned) until the deposit is no longer PENDING; at most its threshold."""
    from ..core.watching.scanner import scan_chain

    blocks = 0
    while True:
        rows = await gateway.db.fetch_all("SELECT status, threshold FROM deposits WHERE chain = :c AND tx_hash = :h",
                                          {"c": adapter.name, "h": tx_hash})
        if rows and all(row["status"] != _WAITING for row in rows):
            return
        needed = max((int(row["threshold"]) for row in rows), default=1)
        if blocks >= needed:
            state = "still PENDING" if rows else "never seen by the scanner"
            raise AssertionError(f"devnet transfer {tx_hash}: its deposit is {state} after {blocks} block(s)"
                                 " (a plugin refused its credit? the log names it)")
        await chain.mine(1)
        await scan_chain(gateway, adapter)
        blocks += 1


async def crediting_scan(gateway: Any, address: str, log: Any, blocks: int = 20) -> Any:
    """One block at a time, each scan in a window of ``log`` (a ``StatementLog``), until the deposit at
    ``address`` is CREDITED: the window of the scan that credited it (statement counts of a crediting run)."""
    from ..chains.devnet import devnet_chain
    from ..core.watching.scanner import scan_chain

    chain, adapter = devnet_chain(gateway), gateway.chains.get("devnet")
    if chain is None or adapter is None:
        raise RuntimeError("the devnet is off")
    for _ in range(blocks):
        await chain.mine(1)
        async with log.window(gateway) as window:
            await scan_chain(gateway, adapter)
        if await gateway.db.fetch_val("SELECT status FROM deposits WHERE address = :a", {"a": address}) == "CREDITED":
            return window
    raise AssertionError(f"the devnet deposit to {address} was not credited within {blocks} blocks")
