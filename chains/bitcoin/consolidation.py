"""Many small deposit outputs moved into the hot wallet in one transaction, when fees make it cheap.

Why: a deposit output stays at its deposit address until a payout spends it,
so a shop with many small payments holds hundreds of outputs, and a payout
spending them pays for every input at whatever the rate is that day (up to
``wallet.MAX_INPUTS`` of them). Consolidating while fees are low pays for
those inputs once, at a rate the operator accepts.

One consolidation at a time per chain, as the job
``bitcoin.<chain>.consolidate`` (registered when ``consolidate_min_outputs``
is set; ``signs``: it runs where the keys are, in ``orbchain signer`` when one
is configured):

* none live: at the current rate (the payouts' own, ``fee_rate``; never above
  ``fee_ceiling_sat_per_vbyte``), each spendable deposit output is judged by
  the fee its input costs. Worth no more than that fee: *dust*, left where it
  is (never swept at a loss) and reported, here in the log and by the custody
  check's ``dust`` line and ``orbchain_wallet_dust_*``. Costing more than
  ``consolidate_max_fee_percent`` of its value: left for now (a payout may
  still spend it). The rest, smallest first, up to ``wallet.MAX_INPUTS``, is
  consolidated when there are at least ``consolidate_min_outputs`` of them and
  the whole transaction's fee is within that share of what it moves: one
  output, to a fresh internal key of the platform (a change key). The inputs'
  reservation, the output and the row with its signed bytes are one database
  transaction (``sign_spend``'s path), stored before the broadcast.
* live: sent and followed like a sweep to cold (``own_spends.py``); once
  ``payout_confirmations`` deep its postings are recorded for ``serve`` to
  book (``ledger.book_sweeps``; the signer writes no ledger:
  core/ledger/sweep_bookings.py), idempotent by its reference::

      deposits -> hot wallet:  world:<chain>:deposit_addresses -> world:<chain>:hot_wallet  (the output)
      its fee:                 platform:network_fees -> world:<chain>

  The booked fee is what the inputs held beyond the output: the fee paid.

The signing gate is not asked, as for a closing transaction or a bump: the
destination is a key the adapter derives itself and the amount is the inputs'
value less a fee bounded by the operator's share and ceiling, so no caller
supplies anything that could move money out.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ...api import NETWORK_FEES, FeeAboveCeiling, Posting, ledger, world
from ..sweeping import SweepFeeTooHigh, check_fee_share, deposit_addresses_account, hot_wallet_account
from . import fees, own_spends, wallet
from .transactions import SEQUENCE_RBF, Output, estimate_vsize, input_vsize, sign_transaction

if TYPE_CHECKING:  # pragma: no cover
    from .adapter import BitcoinAdapter

log = logging.getLogger(__name__)

PREFIX = "consol_"  # a consolidation's id, the key of its reservations in the wallet tables
LEDGER_KIND = "consolidation"
TABLE = "bitcoin_consolidations"


@dataclass(frozen=True)
class Tick:
    """What one run did: the consolidation it followed or made (None: none), the dust it left, why it waited."""

    consolidation: str | None = None
    dust_outputs: int = 0
    dust_units: int = 0
    waiting: str | None = None


@dataclass(frozen=True)
class Sorted:
    """The deposit outputs at one rate: worth consolidating, not worth it yet, dust."""

    chosen: tuple[wallet.WalletOutput, ...]
    later: tuple[wallet.WalletOutput, ...]
    dust: tuple[wallet.WalletOutput, ...]


def sort_outputs(deposits: Sequence[wallet.WalletOutput], spend_cost: int, max_fee_percent: int) -> Sorted:
    """Judge each output by the fee its input costs (``spend_cost``): dust, too dear for now, or worth moving."""
    dust, later, worth = [], [], []
    for output in sorted(deposits, key=lambda o: (o.amount, o.tx_hash, o.output_index)):
        if output.amount <= spend_cost:
            dust.append(output)
        elif spend_cost * 100 > output.amount * max_fee_percent:
            later.append(output)
        else:
            worth.append(output)
    return Sorted(tuple(worth[:wallet.MAX_INPUTS]), tuple(later), tuple(dust))


async def consolidate(adapter: "BitcoinAdapter") -> Tick:
    """One tick: follow the live consolidation, or make one when enough deposit outputs are worth it."""
    live = await own_spends.live(adapter, TABLE)
    if live is not None:
        await own_spends.follow(adapter, live, _settle, "consolidation")
        return Tick(str(live["id"]))
    settings = adapter.settings
    rate = await adapter.fee_rate()
    try:
        fees.check_ceiling(rate, settings.fee_ceiling_sat_per_vbyte)
    except FeeAboveCeiling as exc:
        return Tick(waiting=str(exc))
    spendable = await wallet.spendable_outputs(adapter.gateway, adapter.name, adapter.network)
    found = sort_outputs([o for o in spendable if not o.change],
                         wallet.fee_for(input_vsize(settings.spec.script), rate), settings.consolidate_max_fee_percent)
    tick = Tick(dust_outputs=len(found.dust), dust_units=sum(o.amount for o in found.dust))
    if found.dust:
        log.info("%s: %d deposit output(s) worth %d in all left unconsolidated: each worth no more than the fee"
                 " to spend it at %s sat/vB", adapter.name, len(found.dust), tick.dust_units, fees.per_vbyte(rate))
    if len(found.chosen) < settings.consolidate_min_outputs:
        return _waiting(tick, f"{len(found.chosen)} deposit output(s) worth consolidating at"
                              f" {fees.per_vbyte(rate)} sat/vB, fewer than {settings.consolidate_min_outputs}")
    try:
        made = await _sign(adapter, found.chosen, rate)
    except SweepFeeTooHigh as exc:
        return _waiting(tick, str(exc))
    if made is None:
        return _waiting(tick, "an output changed on the node or was reserved meanwhile; next run")
    await own_spends.follow(adapter, await own_spends.row(adapter, TABLE, made), _settle, "consolidation")
    return Tick(made, tick.dust_outputs, tick.dust_units)


def _waiting(tick: Tick, why: str) -> Tick:
    return Tick(None, tick.dust_outputs, tick.dust_units, why)


async def _sign(adapter: "BitcoinAdapter", chosen: Sequence[wallet.WalletOutput], rate: int) -> str | None:
    """Sign and store the consolidation of ``chosen``; None when an input is gone or taken (the next run selects
    again). ``SweepFeeTooHigh`` when its fee is above the operator's share of what it moves."""
    gateway, db, spec = adapter.gateway, adapter.gateway.db, adapter.settings.spec
    total = sum(o.amount for o in chosen)
    fee = wallet.fee_for(estimate_vsize([spec.script] * len(chosen), [adapter.change_script(0)]), rate)
    check_fee_share(fee, total, adapter.settings.consolidate_max_fee_percent, adapter.coin)
    spends = await adapter.spends_of(chosen)
    if spends is None:
        return None
    key_index, script = await adapter.fresh_change_key()
    signed = sign_transaction(spends, [Output(total - fee, script)], sequence=SEQUENCE_RBF)
    height = int(await adapter.rpc.call("getblockcount"))
    consolidation_id = PREFIX + secrets.token_hex(10)

    async def store() -> None:
        await db.execute(
            "INSERT INTO bitcoin_consolidations (id, chain, coin, inputs, amount, fee, tx_hash, raw_tx, status,"
            " created_at, updated_at) VALUES (:id, :c, :k, :n, :a, :f, :h, :r, :s, :t, :t)",
            {"id": consolidation_id, "c": adapter.name, "k": adapter.coin, "n": len(chosen),
             "a": db.amount_param(total - fee), "f": db.amount_param(fee), "h": signed.txid, "r": signed.hex,
             "s": own_spends.SENT, "t": gateway.now()})

    try:
        await wallet.record_signed(gateway, adapter.name, wallet.SignedSpend(
            payout_id=consolidation_id, tx_hash=signed.txid, inputs=tuple(chosen), change_index=0,
            change_amount=total - fee, change_key_index=key_index, signed_height=height), also=store)
    except wallet.ReservationConflict:
        return None
    log.info("%s: consolidating %d deposit output(s) worth %d into the hot wallet as %s (fee %d at %s sat/vB)",
             adapter.name, len(chosen), total, signed.txid, fee, fees.per_vbyte(rate))
    return consolidation_id


async def _settle(adapter: "BitcoinAdapter", row: Mapping[str, Any]) -> None:
    """The custody move and its fee recorded for ``serve`` to book once (the reference makes a replay after a
    crash harmless: core/ledger/sweep_bookings.py); then done."""
    gateway, chain, coin = adapter.gateway, adapter.name, row["coin"]
    amount, fee = gateway.db.to_int(row["amount"]), gateway.db.to_int(row["fee"])
    postings = [Posting(deposit_addresses_account(chain), coin, -amount),
                Posting(hot_wallet_account(chain), coin, amount)]
    if fee:
        postings += [Posting(NETWORK_FEES, coin, -fee), Posting(world(chain), coin, fee)]
    await ledger.record_sweep_booking(gateway, chain=chain, kind=LEDGER_KIND, reference=f"{LEDGER_KIND}:{row['id']}",
                                      postings=postings)
    await own_spends.mark_done(adapter, TABLE, row["id"])
    log.info("%s: consolidation %s of %d output(s) confirmed and recorded for booking (%d, fee %d)", chain, row["id"],
             int(row["inputs"]), amount, fee)


def consolidate_job(adapter: "BitcoinAdapter"):
    async def run(gateway: Any) -> None:
        await consolidate(adapter)
    return run
