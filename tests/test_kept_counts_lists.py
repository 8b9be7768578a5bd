"""The payouts, transfers, swaps and subscriptions lists read an exact ``total`` from counts the database keeps
(core m0059, swaps m0004, subscriptions m0005; issue 48 item 1), as the payments list does.

Rows are written by SQL (the triggers cannot be bypassed by a code path) and each list's answer is compared
with ``COUNT(*)`` of what it lists, before and after a fold, through a status change and deletes; the
transfers list is a transfer's sender's and (not held) its recipient's; the subscriptions list leaves out
unpaid page enrolments. Then the counts are made to drift and ``mismatches``/``rebuild`` name and repair
each new list. On both databases.
"""

from __future__ import annotations

from orbchain.core.infra import kept_counts
from orbchain.core.payouts.service import list_payouts
from orbchain.core.transfers.service import list_transfers
from orbchain.plugins.subscriptions import store as subscriptions
from orbchain.plugins.swaps import store as swaps
from orbchain.testing.fixtures import open_shop, signup

from .support import freeze_clock


async def _payout(db, merchant_id: str, n: int, at: int) -> None:
    await db.execute(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
        " next_attempt_at, created_at, updated_at) VALUES (:i, :t, :m, 'LTC', 'litecoin', 'addr', :a, 'Confirming',"
        " 'queued', :at, :at, :at)", {"i": f"po{n}", "t": f"T{n}", "m": merchant_id, "a": db.amount_param(1000),
                                      "at": at})


async def _transfer(db, sender: str, recipient: str, n: int, at: int, held: bool) -> None:
    await db.execute(
        "INSERT INTO transfers (id, from_merchant_id, to_merchant_id, from_account_id, to_account_id, coin, amount,"
        " source, status, created_at) VALUES (:i, :f, :t, 'a', 'b', 'LTC', :a, 'api', :s, :at)",
        {"i": f"trf{n}", "f": sender, "t": recipient, "a": db.amount_param(5), "s": "held" if held else None,
         "at": at})


async def _swap(db, merchant_id: str, n: int, at: int) -> None:
    await db.execute(
        "INSERT INTO swaps (id, merchant_id, kind, venue, from_coin, to_coin, from_amount, to_amount_quoted,"
        " floating, status, fallback, credit_done, attempts, next_attempt_at, deadline_at, created_at, updated_at)"
        " VALUES (:i, :m, 'balance', 'fake', 'LTC', 'ETH', :a, :a, FALSE, 'CONFIRMED', FALSE, FALSE, 0, :at, :at,"
        " :at, :at)", {"i": f"sw{n}", "m": merchant_id, "a": db.amount_param(7), "at": at})


async def _subscription(db, merchant_id: str, n: int, at: int, status: str, enrolled_on_page: bool,
                        paid: bool) -> None:
    await db.execute(
        "INSERT INTO subscriptions (id, merchant_id, plan_id, status, customer_ref, next_billing_at,"
        " current_period_end, grace_count, magic_token, token_hash, enrol_ip_hash, created_at, updated_at)"
        " VALUES (:i, :m, 'plan1', :s, :ref, :at, :end, 0, 'tok', :h, :ip, :at, :at)",
        {"i": f"sub{n}", "m": merchant_id, "s": status, "ref": f"cust{n % 2}", "at": at,
         "end": at + 100 if paid else None, "h": f"hash{n}", "ip": "iphash" if enrolled_on_page else None})


async def _count(db, sql: str, values: dict) -> int:
    return int(await db.fetch_val(f"SELECT COUNT(*) FROM {sql}", values))


async def _assert_exact(gateway, mine: str, theirs: str) -> None:
    db = gateway.db
    for merchant in (mine, theirs):
        listed = await list_payouts(gateway, merchant, limit=1, offset=0)
        assert listed["total"] == await _count(db, "payouts WHERE merchant_id = :m", {"m": merchant})
        listed = await list_transfers(gateway, merchant, limit=1, offset=0)
        assert listed["total"] == await _count(
            db, "transfers WHERE from_merchant_id = :m OR (to_merchant_id = :m AND status IS NULL)", {"m": merchant})
        assert (await swaps.list_for(gateway, merchant, 1, 0))[1] == \
            await _count(db, "swaps WHERE merchant_id = :m", {"m": merchant})
        for status, ref in ((None, None), ("ACTIVE", None), ("EXPIRED", None), ("PENDING", None), (None, "cust1")):
            where, values = ["s.merchant_id = :m", subscriptions.IS_SUBSCRIPTION], {"m": merchant}
            for column, value in (("status", status), ("customer_ref", ref)):
                if value is not None:
                    where.append(f"s.{column} = :{column}")
                    values[column] = value
            expected = await _count(db, "subscriptions s WHERE " + " AND ".join(where), values)
            _, total = await subscriptions.list_subscriptions(gateway, merchant, status=status, customer_ref=ref,
                                                              limit=1, offset=0)
            assert total == expected, (merchant, status, ref)
    assert await kept_counts.mismatches(db) == []


async def test_new_lists_totals_stay_exact_and_drift_is_repaired(make_config, make_client):
    """Breaks caught: a list still read by ``COUNT(*)`` is not caught here (test_query_plans is), but a
    total that misses a sender's or a recipient's transfer, counts a held one for its recipient, counts an
    unpaid page enrolment as a subscription, or misses a status change, a delete, or a fold, is; and a
    list ``rebuild`` would recount by the wrong merchant column (transfers: sender, recipient)."""
    shop = await open_shop(make_config, make_client)
    gateway, db, mine = shop.gateway, shop.gateway.db, shop.merchant.merchant_id
    theirs = (await signup(shop.client, "other@example.com")).merchant_id
    now = freeze_clock(gateway)
    await db.execute(
        "INSERT INTO subscription_plans (id, merchant_id, label, amount_usd, interval_sec, accepted_coins, enabled,"
        " created_at, updated_at) VALUES ('plan1', :m, 'Plan', '5', 86400, '[]', TRUE, :t, :t)", {"m": mine, "t": now})
    for n in range(6):
        await _payout(db, mine if n % 3 else theirs, n, now - n)
        await _transfer(db, mine if n % 2 else theirs, theirs if n % 2 else mine, n, now - n, held=n == 1)
        await _swap(db, mine, n, now - n)
    kinds = (("ACTIVE", False, True), ("PENDING", True, False), ("ACTIVE", True, True), ("EXPIRED", True, False),
             ("CANCELLED", False, False), ("PENDING", True, False))
    for n, (status, on_page, paid) in enumerate(kinds):
        await _subscription(db, mine, n, now - n, status, on_page, paid)
    await _assert_exact(gateway, mine, theirs)  # from the deltas alone
    await kept_counts.fold_all(db, batch=5, max_batches=100)
    await db.execute("UPDATE transfers SET status = NULL WHERE id = 'trf1'")  # released: its recipient sees it
    await db.execute("UPDATE subscriptions SET status = 'ACTIVE', current_period_end = :e WHERE id = 'sub1'",
                     {"e": now + 100})  # the enrolment paid: now a subscription
    await db.execute("DELETE FROM payouts WHERE id = 'po1'")
    await db.execute("DELETE FROM swaps WHERE id IN ('sw0', 'sw1')")
    await db.execute("DELETE FROM subscriptions WHERE id = 'sub3'")
    await _assert_exact(gateway, mine, theirs)
    assert (await list_transfers(gateway, theirs, limit=1, offset=0))["total"] == 6
    assert (await subscriptions.list_subscriptions(gateway, mine, status=None, customer_ref=None, limit=1,
                                                   offset=0))[1] == 4  # sub0, sub1, sub2, sub4; not sub5
    await kept_counts.fold_all(db, batch=5, max_batches=100)
    await _assert_exact(gateway, mine, theirs)

    await db.execute("UPDATE kept_counts SET n = n + 1 WHERE list IN ('transfers_received', 'swaps')")
    drifted = {(m["list"], m["merchant_id"]) for m in await kept_counts.mismatches(db)}
    assert drifted == {("transfers_received", mine), ("transfers_received", theirs), ("swaps", mine)}
    await kept_counts.rebuild(db)
    await _assert_exact(gateway, mine, theirs)
