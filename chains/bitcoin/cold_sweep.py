"""The hot wallet's excess above the operator's ceiling, swept to the cold address (``[custody.hot_wallet.<COIN>]``).

One sweep at a time per chain, as the job ``bitcoin.<chain>.cold_sweep``:

* none live: when the spendable hot wallet (credited deposit outputs and our
  change, ``wallet.spendable_outputs``) holds more than ``ceiling``, the
  excess is paid to ``cold``, the fee on top from the rest (the wallet may end
  a fee below the ceiling): the fixed address, or with a cold xpub the next
  address of its external branch (``cold_sweep:<chain>`` counter), derived
  watch-only. The destination comes from the config, judged at start, never
  from the database: whoever can write a table cannot redirect a sweep.
  Signing reuses the payout path (``sign_spend``): the inputs' reservation
  and the sweep row with its signed bytes are one transaction, stored before
  the broadcast, so a crash sends the same bytes again.
* live: broadcast the stored bytes until the node has them, then follow the
  transaction (no ``-txindex`` needed, as for payouts); once it is
  ``payout_confirmations`` deep the move is recorded for ``serve`` to book
  (the signer writes no ledger: core/ledger/sweep_bookings.py), idempotent
  by the sweep's reference, and the sweep is done::

      hot wallet -> cold:  world:<chain>:hot_wallet -> world:<chain>:cold (the excess)
      its fee:             platform:network_fees -> world:<chain>

  Both custody accounts are the outside world's, so the custody check's books
  do not move; the cold address is counted as held (``custody.py``).

Storing, sending and following are ``own_spends.py``'s, shared with the
consolidation of deposits (``consolidation.py``).
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING, Any, Mapping

from ...api import NETWORK_FEES, HotWalletLimits, Posting, hot_wallet_limits, ledger, notify_cold_sweep, world
from ...api.addresses import next_counter
from ..sweeping import cold_account, hot_wallet_account
from . import own_spends, wallet
from .transactions import SignedTransaction, script_for_address

if TYPE_CHECKING:  # pragma: no cover
    from .adapter import BitcoinAdapter

log = logging.getLogger(__name__)

SWEEP_PREFIX = "cold_"  # a sweep's id, the key of its reservations in the wallet tables
LEDGER_KIND = "cold_sweep"
TABLE = "bitcoin_cold_sweeps"


async def sweep_to_cold(adapter: "BitcoinAdapter") -> str | None:
    """One tick: follow the live sweep, or start one when the hot wallet is above its ceiling; the sweep's id."""
    live = await own_spends.live(adapter, TABLE)
    if live is not None:
        await own_spends.follow(adapter, live, _settle, "cold sweep")
        return str(live["id"])
    limits = hot_wallet_limits(adapter.gateway).get(adapter.coin)
    if limits is None or limits.ceiling is None or (limits.cold is None and limits.cold_xpub is None):
        return None
    spendable = await wallet.spendable_outputs(adapter.gateway, adapter.name, adapter.network)
    excess = sum(o.amount for o in spendable) - limits.ceiling
    if excess < adapter.settings.spec.change_min_sat:
        return None
    sweep_id = await _sign(adapter, excess, limits)
    await own_spends.follow(adapter, await own_spends.row(adapter, TABLE, sweep_id), _settle, "cold sweep")
    return sweep_id


async def swept_cold_addresses(adapter: "BitcoinAdapter") -> list[str]:
    """The cold xpub's addresses our sweeps paid, each only if the configured xpub derives it at its index.

    Why re-derive: a row written by SQL must not make a stranger's address count as our cold holdings (that
    would hide a shortfall).
    """
    limits = hot_wallet_limits(adapter.gateway).get(adapter.coin)
    if limits is None or limits.cold_xpub is None:
        return []
    rows = await adapter.gateway.db.fetch_all(
        "SELECT DISTINCT destination, cold_index FROM bitcoin_cold_sweeps WHERE chain = :c AND cold_index IS NOT NULL",
        {"c": adapter.name})
    return sorted(r["destination"] for r in rows if limits.cold_xpub.address(int(r["cold_index"])) == r["destination"])


async def _sign(adapter: "BitcoinAdapter", amount: int, limits: HotWalletLimits) -> str:
    gateway, db = adapter.gateway, adapter.gateway.db
    sweep_id = SWEEP_PREFIX + secrets.token_hex(10)
    index = None if limits.cold_xpub is None else await next_counter(gateway, f"cold_sweep:{adapter.name}")
    cold = limits.cold_destination(index or 0)
    assert cold is not None, "sweep_to_cold checked that a cold destination is configured"
    destination = script_for_address(adapter.settings.spec.family, adapter.network, cold)

    async def store(signed: SignedTransaction, fee: int) -> None:
        await db.execute(
            "INSERT INTO bitcoin_cold_sweeps (id, chain, coin, destination, cold_index, amount, fee, tx_hash, raw_tx,"
            " status, created_at, updated_at) VALUES (:id, :c, :k, :d, :i, :a, :f, :h, :r, :s, :t, :t)",
            {"id": sweep_id, "c": adapter.name, "k": adapter.coin, "d": cold, "i": index, "a": db.amount_param(amount),
             "f": db.amount_param(fee), "h": signed.txid, "r": signed.hex, "s": own_spends.SENT, "t": gateway.now()})

    signed, fee = await adapter.sign_spend(sweep_id, amount, destination, store=store)
    log.info("%s: sweeping %d to cold %s as %s (fee %d)", adapter.name, amount, cold, signed.txid, fee)
    return sweep_id


async def _settle(adapter: "BitcoinAdapter", row: Mapping[str, Any]) -> None:
    """The custody move and its fee recorded for ``serve`` to book once (the reference makes a replay after a
    crash harmless: core/ledger/sweep_bookings.py); then done."""
    gateway, chain, coin = adapter.gateway, adapter.name, row["coin"]
    amount, fee = gateway.db.to_int(row["amount"]), gateway.db.to_int(row["fee"])
    postings = [Posting(hot_wallet_account(chain), coin, -amount), Posting(cold_account(chain), coin, amount)]
    if fee:
        postings += [Posting(NETWORK_FEES, coin, -fee), Posting(world(chain), coin, fee)]
    await ledger.record_sweep_booking(gateway, chain=chain, kind=LEDGER_KIND, reference=f"{LEDGER_KIND}:{row['id']}",
                                      postings=postings)
    await own_spends.mark_done(adapter, TABLE, row["id"])
    await notify_cold_sweep(gateway, chain=chain, coin=coin, amount=amount, destination=row["destination"],
                            tx_hash=row["tx_hash"])
    log.info("%s: cold sweep %s of %d confirmed and recorded for booking", chain, row["id"], amount)


def cold_sweep_job(adapter: "BitcoinAdapter"):
    async def run(gateway: Any) -> None:
        await sweep_to_cold(adapter)
    return run
