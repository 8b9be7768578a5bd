"""A sweep's ledger postings, recorded by the process that signs it and booked once by serve (issue 45).

The signer's role writes no ledger (core/custody/signer_role.py): a final sweep is recorded in
``sweep_bookings`` and serve's job ``ledger.book_sweeps`` books it, once, also when serve stopped between the
signing and the booking, crashed inside the booking, or runs twice at once. A record that would move anything but
the sweep chain's outside-world accounts and the network fees is refused and never booked. The chains' own sweeps
(signed by a signer process as its own role) are tests/test_signer_evm.py, test_signer_solana.py,
test_signer_tron.py and test_bitcoin_hot_cold.py.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.custody.check import ledger_figures
from orbchain.core.health.metrics_db import read_facts
from orbchain.core.ledger import sweep_bookings
from orbchain.core.ledger.accounts import NETWORK_FEES, world
from orbchain.core.ledger.book import Posting, balance
from orbchain.core.ledger.check import check_ledger
from orbchain.core.ledger.sweep_bookings import JOB_NAME, book_sweeps, record_sweep_booking
from orbchain.core.startup import build_gateway
from orbchain.testing import SimulatedCrash
from orbchain.scheduler.runner import JobScheduler

CHAIN, COIN = "ethereum", "ETH"
DEPOSITS, HOT = f"{world(CHAIN)}:deposit_addresses", f"{world(CHAIN)}:hot_wallet"
MOVED, FEE = 5 * 10**17, 21_000 * 10**9


def swept() -> list[Posting]:
    return [Posting(DEPOSITS, COIN, -MOVED), Posting(HOT, COIN, MOVED)]


def gas() -> list[Posting]:
    return [Posting(NETWORK_FEES, COIN, -FEE), Posting(world(CHAIN), COIN, FEE)]


async def serve_again(config: Any):
    """Another serve process on the same database (a restart): a gateway of its own."""
    gw = build_gateway(config, get_plugin_manager(blocked=config.plugins.blocked))
    await gw.db.connect()
    return gw


async def transactions(db, reference: str) -> int:
    return int(await db.fetch_val("SELECT COUNT(*) FROM ledger_transactions WHERE reference = :r", {"r": reference}))


async def test_a_recorded_sweep_is_booked_once_by_serve_also_after_a_restart_and_a_crash(gateway, config,
                                                                                       monkeypatch):
    assert JOB_NAME in gateway.jobs and not gateway.jobs[JOB_NAME].signs  # serve's job, never the signer's
    assert JOB_NAME in [job.name for job in JobScheduler(gateway).jobs()]
    books_before = (await ledger_figures(gateway))[1].get((CHAIN, COIN), 0)

    # The signing job sees its sweep final and records it, twice after a crash: one row.
    for _ in range(2):
        await record_sweep_booking(gateway, chain=CHAIN, kind="evm_sweep", reference="evm:ethereum:sweep:0x1",
                                   postings=swept())
        await record_sweep_booking(gateway, chain=CHAIN, kind="network_fee", reference="evm:ethereum:gas:0x1",
                                   postings=gas())
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM sweep_bookings") == 2
    assert await balance(gateway.db, HOT, COIN) == 0  # not booked: the signer writes no ledger
    assert (await read_facts(gateway)).sweep_bookings == {"due": 2, "refused": 0}  # orbchain_sweep_bookings
    # The custody check counts it already: the window before serve books never reads as a shortfall.
    assert (await ledger_figures(gateway))[1][(CHAIN, COIN)] == books_before - FEE
    await gateway.db.disconnect()  # the process that recorded stops

    serve = await serve_again(gateway.config)
    try:
        real_post = sweep_bookings.post

        async def crash_after_posting(*args, **kwargs):
            await real_post(*args, **kwargs)
            raise SimulatedCrash("inside the booking, after the posting")

        monkeypatch.setattr(sweep_bookings, "post", crash_after_posting)
        with pytest.raises(SimulatedCrash):
            await book_sweeps(serve)
        monkeypatch.undo()
        assert await transactions(serve.db, "evm:ethereum:sweep:0x1") == 0  # rolled back with its booked_at
        assert await book_sweeps(serve) == 2
        assert await book_sweeps(serve) == 0
    finally:
        await serve.db.disconnect()

    again = await serve_again(gateway.config)  # restarted once more: nothing left to book
    try:
        assert await book_sweeps(again) == 0
        for reference in ("evm:ethereum:sweep:0x1", "evm:ethereum:gas:0x1"):
            assert await transactions(again.db, reference) == 1
        assert await balance(again.db, HOT, COIN) == MOVED and await balance(again.db, DEPOSITS, COIN) == -MOVED
        assert await balance(again.db, NETWORK_FEES, COIN) == -FEE
        assert (await ledger_figures(again))[1][(CHAIN, COIN)] == books_before - FEE  # counted once
        assert (await check_ledger(again.db)).ok
        assert await again.db.fetch_val("SELECT COUNT(*) FROM sweep_bookings WHERE booked_at IS NULL") == 0
    finally:
        await again.db.disconnect()
    await gateway.db.connect()  # the fixture's own teardown


@pytest.mark.postgresql_only("two serve processes booking at once need a database of several writers")
async def test_two_serves_booking_at_once_book_each_sweep_once(gateway):
    references = [f"evm:ethereum:sweep:0x{n}" for n in range(20)]
    for reference in references:
        await record_sweep_booking(gateway, chain=CHAIN, kind="evm_sweep", reference=reference, postings=swept())
    other = await serve_again(gateway.config)
    try:
        booked = await asyncio.gather(book_sweeps(gateway), book_sweeps(other))
        assert sum(booked) == len(references), booked
    finally:
        await other.db.disconnect()
    assert await balance(gateway.db, HOT, COIN) == MOVED * len(references)
    assert (await check_ledger(gateway.db)).ok


async def test_serve_refuses_a_record_that_would_move_anything_but_the_sweeps_world(gateway, caplog):
    merchant = "merchant:m_1:available"
    forged = [Posting(world(CHAIN), COIN, -MOVED), Posting(merchant, COIN, MOVED)]
    with pytest.raises(ValueError, match="merchant:m_1:available"):  # a plugin's mistake, found where it is made
        await record_sweep_booking(gateway, chain=CHAIN, kind="evm_sweep", reference="forged", postings=forged)
    elsewhere = [Posting(f"{world('tron')}:hot_wallet", COIN, -MOVED), Posting(HOT, COIN, MOVED)]
    rows = {"forged": '[["world:ethereum", "ETH", -5], ["merchant:m_1:available", "ETH", 5]]',
            "other-chain": '[["world:tron:hot_wallet", "ETH", -5], ["world:ethereum:hot_wallet", "ETH", 5]]',
            "garbled": "not json"}
    assert sweep_bookings.refusal(CHAIN, elsewhere) is not None
    for reference, postings in rows.items():  # written by SQL, as a signer role (or anyone) could
        await gateway.db.execute(
            "INSERT INTO sweep_bookings (reference, chain, kind, postings, recorded_at) VALUES (:r, :c, 'x', :p, 0)",
            {"r": reference, "c": CHAIN, "p": postings})
    assert await sweep_bookings.recorded_sweep_postings(gateway.db) == []  # the custody check counts none of them
    with caplog.at_level(logging.ERROR, logger=sweep_bookings.__name__):
        assert await book_sweeps(gateway) == 0
    assert sum("refused, not booked" in r.getMessage() for r in caplog.records) == 3
    refused = {r["reference"]: r["refused"] for r in await gateway.db.fetch_all(
        "SELECT reference, refused FROM sweep_bookings WHERE booked_at IS NULL")}
    assert set(refused) == set(rows) and all(refused.values()), refused
    assert await balance(gateway.db, merchant, COIN) == 0
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM ledger_transactions") == 0
    assert await book_sweeps(gateway) == 0  # refused rows are not tried again
    assert (await read_facts(gateway)).sweep_bookings == {"due": 0, "refused": 3}  # loud in /metrics too
