"""``ChainShop``: one merchant on a gateway wired to a ``ChainDriver``'s node, and the moves the suite makes.

Everything goes through the gateway the way production does: payments and
payouts through the HTTP API, chain observation through the core scanner,
payouts through the core payout worker. Direct reads are limited to the
outbox, the ledger and the rows the API does not show (a deposit's
threshold, a payout's stored transaction).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

from .api import Merchant, api, create_payment, view_payment
from .driver import ChainDriver
from .fixtures import open_shop


@dataclass
class ChainShop:
    driver: ChainDriver
    client: Any
    merchant: Merchant
    gateway: Any
    adapter: Any

    # -- the chain, through the scanner ----------------------------------------------------------

    async def scan(self) -> Any:
        from ..core.watching.scanner import scan_chain

        await self.driver.settle()
        return await scan_chain(self.gateway, self.adapter)

    async def mine(self, blocks: int = 1) -> Any:
        await self.driver.mine(blocks)
        return await self.scan()

    async def reorg(self, depth: int) -> Any:
        await self.driver.reorg(depth)
        return await self.scan()

    # -- money -----------------------------------------------------------------------------------

    def units(self, amount: str) -> int:
        return self.gateway.coins.require(self.driver.coin).to_units(Decimal(amount))

    async def balance(self) -> int:
        """The merchant's available balance of the coin under test, in base units."""
        from ..core.ledger import book as ledger
        from ..core.ledger.accounts import merchant_available

        return await ledger.balance(self.gateway.db, merchant_available(self.merchant.merchant_id), self.driver.coin)

    async def net_of(self, amount: int) -> int:
        """What the merchant is credited for a deposit of ``amount``: less its platform fee."""
        from ..core.accounts.merchants import effective_fee_percent
        from ..core.money.amounts import fee_units

        merchant = await self.gateway.db.fetch_one("SELECT * FROM merchants WHERE id = :m",
                                                   {"m": self.merchant.merchant_id})
        return amount - fee_units(amount, effective_fee_percent(self.gateway, merchant))

    async def ledger_ok(self) -> bool:
        from ..core.ledger.check import check_ledger

        return (await check_ledger(self.gateway.db)).ok

    async def events(self, event_type: str) -> list[dict[str, Any]]:
        """Webhook bodies of this kind in the outbox (delivered or not)."""
        rows = await self.gateway.db.fetch_all(
            "SELECT body FROM webhook_events WHERE event_type = :t ORDER BY created_at", {"t": event_type})
        return [json.loads(r["body"]) for r in rows]

    # -- payments --------------------------------------------------------------------------------

    async def payment(self, amount: str | None = None) -> dict[str, Any]:
        return await create_payment(self.client, self.merchant, self.driver.coin, amount or self.driver.deposit_amount)

    async def view(self, track_id: str) -> dict[str, Any]:
        return await view_payment(self.client, self.merchant, track_id)

    async def threshold(self, tx_hash: str) -> int:
        """The confirmations the core requires for this deposit (the merchant's setting or the coin's)."""
        value = await self.gateway.db.fetch_val("SELECT threshold FROM deposits WHERE tx_hash = :h", {"h": tx_hash})
        assert value is not None, f"no deposit recorded for {tx_hash}"
        return int(value)

    async def coin_threshold(self) -> int:
        """The confirmations a new deposit of the coin under test will need."""
        from ..core.watching.deposits import deposit_threshold

        merchant = await self.gateway.db.fetch_one("SELECT * FROM merchants WHERE id = :m",
                                                   {"m": self.merchant.merchant_id})
        return deposit_threshold(self.gateway, merchant, self.driver.coin)

    async def paid_deposit(self) -> tuple[dict[str, Any], int]:
        """A payment of ``deposit_amount`` paid and mined to Paid; ``(payment, credited net units)``."""
        payment = await self.payment()
        units = self.units(self.driver.deposit_amount)
        tx_hash = await self.driver.send(payment["address"], units)
        await self.mine(1)
        remaining = await self.threshold(tx_hash) - 1
        if remaining > 0:
            await self.mine(remaining)
        view = await self.view(payment["track_id"])
        assert view["status"] == "Paid", view
        return payment, await self.net_of(units)

    # -- payouts ---------------------------------------------------------------------------------

    async def payout(self, destination: str, amount: str | None = None) -> dict[str, Any]:
        status, body = await api(self.client, "POST", "/v1/payout", self.merchant.payout_key,
                                 json={"currency": self.driver.coin, "address": destination,
                                       "amount": amount or self.driver.payout_amount})
        assert status == 200, body
        return body["data"]

    async def payout_row(self, track_id: str) -> Any:
        return await self.gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": track_id})

    def advance_clock(self, seconds: int) -> None:
        later = self.gateway.now() + seconds
        self.gateway.clock = lambda: later

    async def work_payouts(self, seconds: int = 5) -> int:
        """Let ``seconds`` pass (retry and poll times come due), then one tick of the core payout worker."""
        from ..core.payouts.worker import process_payouts

        await self.driver.settle()
        self.advance_clock(seconds)
        return await process_payouts(self.gateway)

    async def confirm_payout(self, track_id: str) -> Any:
        """Mine and tick until the payout is final (at most its confirmations plus two rounds)."""
        from ..core.payouts.service import sender_of

        sender = sender_of(self.adapter)
        assert sender is not None, f"{self.adapter.name} does not declare payouts"
        rounds = sender.payout_confirmations + 2
        row = await self.payout_row(track_id)
        for _ in range(rounds):
            if row["status"] != "Confirming":
                break
            await self.driver.mine(1)
            await self.work_payouts(30)
            row = await self.payout_row(track_id)
        return row


async def open_chain_shop(driver: ChainDriver, make_config: Callable[..., Any], make_client: Callable) -> ChainShop:
    """A gateway configured by ``driver``, a merchant, and a first scan so a fresh database starts at the tip."""
    shop = await open_shop(make_config, make_client, blocked=driver.blocked_plugins,
                           email=f"{driver.chain}-conformance@example.com", **driver.config_sections())
    adapter = shop.gateway.chains.get(driver.chain)
    assert adapter is not None, f"no chain adapter named {driver.chain!r} registered (check config_sections)"
    assert adapter.serves(driver.coin), f"{driver.chain} does not serve {driver.coin}"
    await driver.attach(shop.gateway)
    chain_shop = ChainShop(driver, shop.client, shop.merchant, shop.gateway, adapter)
    await chain_shop.scan()
    return chain_shop
