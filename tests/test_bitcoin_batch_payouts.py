"""A batch payout in a bitcoin-family coin is one transaction (issue 46 item 1), on a real Litecoin Core node.

A 20-item LTC batch becomes ONE transaction with one output per item (and
the change); each item books its share of the fee, the shares summing
exactly to the fee the node says the transaction pays; the signer's policy
judges every item (one over the per-payout cap is held, the others go).
The fee per payout is compared with a payout sent alone before it (the
figures in docs/decisions.md, "Batch payouts: one transaction").
"""

from __future__ import annotations

from orbchain.chains.bitcoin.rpc import coin_units
from orbchain.core.ledger.check import check_ledger
from orbchain.core.payouts.batches import fee_shares
from orbchain.core.watching.scanner import scan_chain

from .litecoind import external_address, faucet, litecoind_node  # noqa: F401 - session fixtures
from .ltc_payouts_support import LTC, funded_shop, work
from .support import api

ITEMS = 20
ITEM_AMOUNT = LTC // 100  # 0.01 LTC


async def fees_booked(gateway, payout_ids) -> dict[str, int]:
    booked = {}
    for payout_id in payout_ids:
        rows = await gateway.db.fetch_all(
            "SELECT p.amount FROM ledger_postings p JOIN ledger_transactions t ON t.id = p.transaction_id"
            " WHERE t.reference = :r AND p.account = 'platform:network_fees'",
            {"r": f"payout:{payout_id}:network_fee"})
        booked[payout_id] = -sum(gateway.db.to_int(r["amount"]) for r in rows)
    return booked


def address_of(output) -> str:
    script = output["scriptPubKey"]
    return script.get("address") or script["addresses"][0]  # Litecoin Core 0.21 still answers a list


def test_fee_shares_sum_exactly_and_give_the_remainder_to_the_first_items():
    assert fee_shares(7_301, 20) == [366] * 1 + [365] * 19
    assert fee_shares(40, 3) == [14, 13, 13]
    assert sum(fee_shares(123_457, 7)) == 123_457
    assert fee_shares(0, 2) == [0, 0]


async def test_a_20_item_batch_is_one_transaction_and_every_item_books_its_share_of_the_fee(
        make_client, make_config, litecoind_node, faucet):  # noqa: F811 - the fixtures
    node = litecoind_node
    client, gateway, adapter, merchant = await funded_shop(make_client, make_config, node, faucet, "batch-shop@example.com",
                                                           deposits=2, max_per_payout=["LTC=0.5"])

    # Before: one payout alone, one transaction.
    status, body = await api(client, "POST", "/v1/payout", merchant.payout_key,
                             json={"currency": "LTC", "address": external_address(30), "amount": "0.01"})
    assert status == 200, body
    await work(gateway)
    single = await gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": body["data"]["track_id"]})
    assert single["stage"] == "broadcast"
    single_fee = coin_units(node.call("getmempoolentry", single["tx_hash"])["fees"]["base"])
    assert gateway.db.to_int(single["network_fee"]) == single_fee

    # After: 20 items and one over the signer's per-payout cap, in one request.
    items = [{"currency": "LTC", "address": external_address(40 + i), "amount": "0.01", "external_id": f"b-{i}"}
             for i in range(ITEMS)]
    items.append({"currency": "LTC", "address": external_address(99), "amount": "0.6", "external_id": "b-big"})
    status, body = await api(client, "POST", "/v1/payout/batch", merchant.payout_key, json={"items": items})
    assert status == 200 and body["data"]["summary"]["created"] == ITEMS + 1, body
    tracks = {r["external_id"]: r["track_id"] for r in body["data"]["results"]}
    mempool_before = set(node.call("getrawmempool"))
    await work(gateway)
    rows = await gateway.db.fetch_all("SELECT * FROM payouts WHERE batch_id IS NOT NULL ORDER BY created_at, id")
    held = [r for r in rows if r["track_id"] == tracks["b-big"]]
    paid = [r for r in rows if r["track_id"] != tracks["b-big"]]
    assert [(r["stage"], r["policy_hold"], r["tx_hash"]) for r in held] == [("policy_held", "over_payout_cap", None)]
    assert len(paid) == ITEMS and {r["stage"] for r in paid} == {"broadcast"}
    assert len({r["tx_hash"] for r in paid}) == 1  # ONE transaction
    tx_hash = paid[0]["tx_hash"]
    assert set(node.call("getrawmempool")) - mempool_before == {tx_hash}
    decoded = node.call("getrawtransaction", tx_hash, True)
    outputs = [(address_of(o), coin_units(o["value"])) for o in decoded["vout"]]
    assert {r["destination"] for r in paid} == {external_address(40 + i) for i in range(ITEMS)}
    assert outputs[:ITEMS] == [(r["destination"], ITEM_AMOUNT) for r in paid]  # in (created_at, id) order
    assert len(outputs) == ITEMS + 1  # and the change, last
    batch_fee = coin_units(node.call("getmempoolentry", tx_hash)["fees"]["base"])
    shares = [gateway.db.to_int(r["network_fee"]) for r in paid]
    assert sum(shares) == batch_fee and shares == fee_shares(batch_fee, ITEMS)

    faucet.mine(1)
    await scan_chain(gateway, adapter)
    await work(gateway)
    await work(gateway)
    final = await gateway.db.fetch_all("SELECT id, status FROM payouts WHERE tx_hash = :h", {"h": tx_hash})
    assert {r["status"] for r in final} == {"Confirmed"} and len(final) == ITEMS
    booked = await fees_booked(gateway, [r["id"] for r in paid])
    assert sum(booked.values()) == batch_fee  # the fee booked is the fee paid, to the unit
    assert sorted(booked.values(), reverse=True) == fee_shares(batch_fee, ITEMS)
    report = await check_ledger(gateway.db)
    assert report.ok, report.lines()
    per_payout = batch_fee / ITEMS
    print(f"\nLTC fee per payout at 10 sat/vB: alone {single_fee} sat ({decoded['vsize']} vB batch),"
          f" in a {ITEMS}-item batch {per_payout:.0f} sat: {single_fee / per_payout:.1f}x less")
    assert batch_fee < single_fee * ITEMS / 3


WINDOW = 60


async def requested(client, merchant, index: int, amount: str = "0.01") -> str:
    status, body = await api(client, "POST", "/v1/payout", merchant.payout_key,
                             json={"currency": "LTC", "address": external_address(index), "amount": amount})
    assert status == 200, body
    return body["data"]["track_id"]


async def rows_of(gateway, tracks):
    return [await gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": t}) for t in tracks]


async def test_payouts_of_separate_requests_within_the_window_share_one_transaction(
        make_client, make_config, litecoind_node, faucet):  # noqa: F811 - the fixtures
    node = litecoind_node
    client, gateway, adapter, merchant = await funded_shop(make_client, make_config, node, faucet,
                                                           "window-shop@example.com", ltc={"batch_window_seconds": WINDOW})
    first = await requested(client, merchant, 60)
    opened = int((await rows_of(gateway, [first]))[0]["created_at"])
    await work(gateway, 10)  # its window is open: it waits queued, nothing signed
    (waiting,) = await rows_of(gateway, [first])
    assert (waiting["stage"], waiting["tx_hash"], waiting["batch_id"]) == ("queued", None, None)
    assert waiting["last_error"] == f"waiting: for other payouts to share one transaction: LTC until {opened + WINDOW}"
    assert int(waiting["next_attempt_at"]) == opened + WINDOW and not waiting["attempts"]
    second = await requested(client, merchant, 61)  # separate requests, 10 and 40 s later
    await work(gateway, 30)
    third = await requested(client, merchant, 62, "0.02")
    mempool_before = set(node.call("getrawmempool"))
    await work(gateway, WINDOW - 40)  # the first one's window closes: all three go together
    rows = await rows_of(gateway, [first, second, third])
    assert {r["stage"] for r in rows} == {"broadcast"} and len({r["id"] for r in rows}) == 3
    assert len({r["tx_hash"] for r in rows}) == 1 and len({r["batch_id"] for r in rows}) == 1
    tx_hash = rows[0]["tx_hash"]
    assert set(node.call("getrawmempool")) - mempool_before == {tx_hash}
    decoded = node.call("getrawtransaction", tx_hash, True)
    outputs = [(address_of(o), coin_units(o["value"])) for o in decoded["vout"]]
    assert outputs[:3] == [(external_address(60), ITEM_AMOUNT), (external_address(61), ITEM_AMOUNT),
                           (external_address(62), 2 * ITEM_AMOUNT)] and len(outputs) == 4
    fee = coin_units(node.call("getmempoolentry", tx_hash)["fees"]["base"])
    assert [gateway.db.to_int(r["network_fee"]) for r in rows] == fee_shares(fee, 3)

    faucet.mine(1)
    await scan_chain(gateway, adapter)
    await work(gateway)
    rows = await rows_of(gateway, [first, second, third])
    assert {r["status"] for r in rows} == {"Confirmed"}
    assert sum((await fees_booked(gateway, [r["id"] for r in rows])).values()) == fee
    report = await check_ledger(gateway.db)
    assert report.ok, report.lines()
    print(f"\nLTC: 3 payouts of separate requests in one transaction of {decoded['vsize']} vB: {fee} sat,"
          f" {fee / 3:.0f} sat each")


async def test_a_crash_after_gathering_leaves_a_batch_the_next_worker_signs_once(
        make_client, make_config, litecoind_node, faucet):  # noqa: F811 - the fixtures
    from orbchain.core.payouts import batches, service
    from orbchain.core.payouts.worker import LEASE_SECONDS

    node = litecoind_node
    client, gateway, adapter, merchant = await funded_shop(make_client, make_config, node, faucet,
                                                           "window-crash@example.com", ltc={"batch_window_seconds": 5})
    tracks = [await requested(client, merchant, 70 + i) for i in range(2)]
    later = gateway.now() + 6
    gateway.clock = lambda: later
    claimed = await service.claim_due(gateway, 10, LEASE_SECONDS)
    gathered = await batches.gather(gateway, claimed[0], 5, LEASE_SECONDS)
    assert gathered is not None and gathered["batch_id"]
    # The worker dies here: the batch is written, nothing signed; its claim runs out.
    rows = await rows_of(gateway, tracks)
    assert {r["batch_id"] for r in rows} == {gathered["batch_id"]} and {r["tx_hash"] for r in rows} == {None}
    mempool_before = set(node.call("getrawmempool"))
    await work(gateway, LEASE_SECONDS + 1)
    rows = await rows_of(gateway, tracks)
    assert {r["stage"] for r in rows} == {"broadcast"} and len({r["tx_hash"] for r in rows}) == 1
    assert set(node.call("getrawmempool")) - mempool_before == {rows[0]["tx_hash"]}  # signed once, for both


async def test_two_workers_gathering_at_once_never_put_a_payout_in_two_batches(
        make_client, make_config, litecoind_node, faucet):  # noqa: F811 - the fixtures
    import asyncio

    from orbchain.core.payouts import batches, service
    from orbchain.core.payouts.worker import LEASE_SECONDS

    client, gateway, _, merchant = await funded_shop(make_client, make_config, litecoind_node, faucet,
                                                     "window-race@example.com", ltc={"batch_window_seconds": 5})
    tracks = [await requested(client, merchant, 80 + i) for i in range(4)]
    later = gateway.now() + 6
    gateway.clock = lambda: later
    first = await service.claim_due(gateway, 1, LEASE_SECONDS)  # two workers, each holding one payout
    second = await service.claim_due(gateway, 1, LEASE_SECONDS)
    gathered = await asyncio.gather(batches.gather(gateway, first[0], 5, LEASE_SECONDS),
                                    batches.gather(gateway, second[0], 5, LEASE_SECONDS))
    rows = await rows_of(gateway, tracks)
    batch_ids = {r["batch_id"] for r in rows}
    assert None not in batch_ids and len(batch_ids) <= 2  # each payout in exactly one batch
    by_token = {r["claim_token"] for r in rows}
    assert by_token <= {first[0]["claim_token"], second[0]["claim_token"]}
    for mine in gathered:  # a worker's batch holds only payouts it claimed
        assert mine is not None
        assert {r["claim_token"] for r in rows if r["batch_id"] == mine["batch_id"]} == {mine["claim_token"]}
