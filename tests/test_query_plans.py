"""Plans that cannot regress (issue 48 item 2): every hot query, on 100,000+ rows, reads through an index.

Measured at a million payments, a list page went from 1.7 to 156 ms and a
lookup by ``order_id`` from 1.4 to 280 ms (no index): a missing index is
invisible on a test's ten rows and only shows after years. So this test
fills PostgreSQL with history in a few statements (``generate_series``),
runs ``ANALYZE``, then runs each hot path of the gateway — the real code,
not a copy of its SQL — records every SELECT it sends, and runs each again
under ``EXPLAIN (ANALYZE, FORMAT JSON)``. Each must read its big tables
through an index (no sequential scan) and touch a bounded number of rows:
the page it answers (plus its offset), never the neighbour's history. A
``COUNT`` for a list's exact ``total`` (SPEC 4.2) may read the merchant's
own set, from the index only (docs/decisions.md, "Years of history"), except
where the total is read from the counts the database keeps (payments,
deposits, webhook log, activity log; core/infra/kept_counts.py, m0048, m0056):
those may touch no more than a few rows either. Only filters the counts do
not hold (a deposit's address, user or date; a payment's ``order_id``) count.

``HOT_PATHS`` is the one list of hot reads: a new query on a hot path is
added here, or review asks why not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterator

import pytest

from orbchain.core.events.attempts import claim_due
from orbchain.core.events.webhooks import delivery_log
from orbchain.core.ledger.book import merchant_balances
from orbchain.core.payments import counts, pruning
from orbchain.core.payments.service import list_payments, payment_deposits, show_payment
from orbchain.core.payouts.service import list_payouts
from orbchain.core.transfers.service import list_transfers
from orbchain.core.watching.deposits import list_deposits
from orbchain.plugins.activity.store import events as activity_events
from orbchain.plugins.subscriptions.store import list_subscriptions
from orbchain.plugins.swaps.store import list_for as list_swaps

pytestmark = pytest.mark.postgresql_only("EXPLAIN plans are PostgreSQL's")

MINE = 12_000  # the merchant whose pages are read: past page 500 at 20 a page
NEIGHBOUR = 90_000  # one big neighbour's history in the same tables
START = 1_600_000_000
PAGE_500_OFFSET = 500 * 20
# Tables that grow with history: reading one of them without an index is the regression.
HISTORY_TABLES = {"payments", "deposits", "webhook_events", "webhook_deliveries", "security_events",
                  "ledger_balances", "ledger_postings", "ledger_transactions", "kept_count_deltas",
                  "payouts", "transfers", "swaps", "subscriptions"}
# Tables that grow with the merchants, not their history (kept_counts: a row per list, merchant and counted key):
# a sequential scan of a small one is the planner's right choice, but the rows read stay bounded.
BOUNDED_TABLES = {"kept_counts"}
# Small fixed costs a bound allows beside the rows a page needs (a join's probe, a recheck).
SLACK = 50
SIDE = 4  # the payouts, transfers, swaps and subscriptions: one per SIDE payments, for both merchants
CUSTOMERS = 100  # the subscriptions' customers (customer_ref) per merchant
ENROLLING = 1_000  # one payment in ENROLLING has an unpaid page enrolment beside it


@dataclass(frozen=True)
class HotPath:
    """One hot read: the gateway call that makes it, how many rows its non-count statements may touch, and
    how many its ``SELECT COUNT`` may (the merchant's set, unless its total is kept elsewhere)."""

    name: str
    call: Callable[[Any, str], Awaitable[Any]]
    rows: int
    count_rows: int = MINE + SLACK


async def _prune_expired(gateway: Any, merchant_id: str) -> int:
    """The prune job's read of unpaid API payments as if the operator had opted in (the test's config keeps
    them for ever). Every filled payment was made without a key, so the index it reads holds none of them."""
    kept = gateway.config
    gateway.config = kept.with_overrides(payments={"unpaid_retention_days": 30})
    try:
        return await pruning.prune_expired(gateway)
    finally:
        gateway.config = kept


HOT_PATHS = (
    HotPath("payment by id", lambda gw, m: show_payment(gw, m, "P00000777"), rows=SLACK),
    HotPath("deposits of a payment", lambda gw, m: payment_deposits(gw, "P00000777"), rows=SLACK),
    # The payments lists' totals come from the kept counts (m0048): no statement may read the merchant's set.
    HotPath("payments list, first page", lambda gw, m: list_payments(gw, m, limit=20), rows=20 + SLACK,
            count_rows=SLACK),
    HotPath("payments list, page 500", lambda gw, m: list_payments(gw, m, limit=20, offset=PAGE_500_OFFSET),
            rows=PAGE_500_OFFSET + 20 + SLACK, count_rows=SLACK),
    HotPath("payments list, oldest first", lambda gw, m: list_payments(gw, m, limit=20, sort_order="asc"),
            rows=20 + SLACK, count_rows=SLACK),
    HotPath("payments list by status", lambda gw, m: list_payments(gw, m, status="Paid", limit=20),
            rows=20 + SLACK, count_rows=SLACK),
    HotPath("payments list by status and currency",
            lambda gw, m: list_payments(gw, m, status="Paid", currency="LTC", limit=20), rows=20 + SLACK,
            count_rows=SLACK),
    HotPath("payments list by status, page 100",
            # Deep in a filtered set the planner may read the whole of it (the merchant's, never the neighbour's).
            lambda gw, m: list_payments(gw, m, status="Expired", limit=20, offset=2_000), rows=MINE // 5 + SLACK,
            count_rows=SLACK),
    HotPath("payment by order_id", lambda gw, m: list_payments(gw, m, order_id="order-777", limit=20),
            rows=SLACK, count_rows=SLACK),
    # The deposits, webhook-log and activity totals are kept counts too (m0056), but for a date, address or user.
    HotPath("deposits list, first page", lambda gw, m: list_deposits(gw, m, limit=50), rows=50 + SLACK,
            count_rows=SLACK),
    HotPath("deposits list by coin and status",
            lambda gw, m: list_deposits(gw, m, coin="LTC", status="CREDITED", limit=50), rows=50 + SLACK,
            count_rows=SLACK),
    HotPath("deposits list since a date", lambda gw, m: list_deposits(gw, m, since=START + 11_000 * 60, limit=50),
            rows=50 + SLACK),
    # Deep in the merchant's deposits (every other payment's) the planner may read all of them.
    HotPath("deposits list, page 100", lambda gw, m: list_deposits(gw, m, limit=50, offset=5_000),
            rows=MINE // 2 + SLACK, count_rows=SLACK),
    HotPath("webhook log, first page", lambda gw, m: delivery_log(gw, m, limit=50, offset=0), rows=50 + SLACK,
            count_rows=SLACK),
    HotPath("webhook log, page 100", lambda gw, m: delivery_log(gw, m, limit=50, offset=5_000),
            rows=5_050 + SLACK, count_rows=SLACK),
    HotPath("balances", lambda gw, m: merchant_balances(gw.db, m), rows=SLACK),
    HotPath("webhook claim", lambda gw, m: claim_due(gw, limit=20), rows=20 + SLACK),
    HotPath("activity log, first page", lambda gw, m: activity_events(gw, m, limit=50, offset=0), rows=50 + SLACK,
            count_rows=SLACK),
    HotPath("activity log, page 100", lambda gw, m: activity_events(gw, m, limit=50, offset=5_000),
            rows=5_050 + SLACK, count_rows=SLACK),
    HotPath("activity log, a member's own", lambda gw, m: activity_events(gw, m, limit=50, offset=0,
                                                                           actor="member a@example.com"),
            rows=MINE // 10 + SLACK, count_rows=SLACK),
    # Their totals are kept counts too (core m0059, swaps m0004, subscriptions m0005).
    HotPath("payouts list, first page", lambda gw, m: list_payouts(gw, m, limit=20, offset=0), rows=20 + SLACK,
            count_rows=SLACK),
    HotPath("payouts list, page 100", lambda gw, m: list_payouts(gw, m, limit=20, offset=2_000),
            rows=MINE // SIDE + SLACK, count_rows=SLACK),
    # A merchant's transfers are those it sent and those it received: a page reads up to a page of each.
    HotPath("transfers list, first page", lambda gw, m: list_transfers(gw, m, limit=20, offset=0),
            rows=2 * 20 + SLACK, count_rows=SLACK),
    HotPath("swaps list, first page", lambda gw, m: list_swaps(gw, m, 20, 0), rows=20 + SLACK, count_rows=SLACK),
    HotPath("subscriptions list, first page",
            lambda gw, m: list_subscriptions(gw, m, status=None, customer_ref=None, limit=20, offset=0),
            rows=20 + SLACK, count_rows=SLACK),
    HotPath("subscriptions list by status",
            lambda gw, m: list_subscriptions(gw, m, status="ACTIVE", customer_ref=None, limit=20, offset=0),
            rows=20 + SLACK, count_rows=SLACK),
    HotPath("subscriptions of a customer",
            lambda gw, m: list_subscriptions(gw, m, status=None, customer_ref="cust-7", limit=20, offset=0),
            rows=20 + SLACK, count_rows=MINE // SIDE // CUSTOMERS + SLACK),
    # Not a page, but an hourly job on the biggest table: its batch, never every expired payment.
    HotPath("unpaid API payments past their retention", _prune_expired, rows=pruning.BATCH + SLACK),
)


async def _fill(db: Any, mine: str, neighbour: str) -> None:
    """History for two merchants in a few statements: ``MINE`` rows each of ours, ``NEIGHBOUR`` of theirs.
    Loaded with the triggers off, as a restore or the history bench does, then the kept counts rebuilt: the
    count triggers on 350,000 rows doubled this test's time, and tests/test_kept_counts.py covers them."""
    async with db.transaction():
        await db.execute("SET LOCAL session_replication_role = replica")
        await _fill_rows(db, mine, neighbour)
    await counts.rebuild(db)
    # The neighbour's deltas left unfolded (a stalled fold job): a total must not read them (net zero).
    await db.execute(
        "INSERT INTO kept_count_deltas (list, merchant_id, k1, k2, k3, delta) SELECT 'payments', :n, 'Paid',"
        " 'INVOICE', 'LTC', 1 - 2 * (i % 2) FROM generate_series(1, :rows) AS i", {"n": neighbour, "rows": NEIGHBOUR})
    # What autovacuum does to a table of history: statistics, and the visibility map an index-only scan needs
    # (a list's deep offset is walked over its index alone: docs/decisions.md, "deep offsets").
    await db.execute(f"VACUUM {', '.join(sorted(HISTORY_TABLES))}")
    await db.execute("ANALYZE")


async def _fill_rows(db: Any, mine: str, neighbour: str) -> None:
    total = MINE + NEIGHBOUR
    owner = f"CASE WHEN i <= {MINE} THEN '{mine}' ELSE '{neighbour}' END"
    for i, merchant in enumerate((mine, neighbour)):
        await db.execute(
            "INSERT INTO merchants (id, account_id, email, password_hash, key_account, accepted_coins,"
            " created_at, updated_at) VALUES (:id, :a, :e, 'x', :k, '[]', :t, :t)",
            {"id": merchant, "a": "OC-" + merchant, "e": merchant + "@example.com", "k": 900_000 + i, "t": START})
    await db.execute(
        "INSERT INTO payments (track_id, merchant_id, type, status, currency, pay_currency, pay_amount, address,"
        " order_id, created_at, updated_at, expires_at)"
        f" SELECT 'P' || lpad(i::text, 8, '0'), {owner}, 'INVOICE',"
        " (ARRAY['Waiting','Paying','Paid','Expired','Cancelled'])[1 + i % 5], 'LTC', 'LTC', 100000,"
        " 'addr' || i, CASE WHEN i % 3 = 0 THEN 'order-' || i END, :t + i * 60, :t + i * 60, :t + i * 60 + 3600"
        f" FROM generate_series(1, {total}) AS i", {"t": START})
    await db.execute(
        "INSERT INTO deposits (id, chain, coin, network, tx_hash, output_index, address, amount, merchant_id,"
        " track_id, threshold, status, created_at, updated_at)"
        f" SELECT 'D' || i, 'litecoin', 'LTC', 'regtest', 'tx' || i, 0, 'addr' || i, 100000, {owner},"
        " 'P' || lpad(i::text, 8, '0'), 1, 'CREDITED', :t + i * 60, :t + i * 60"
        f" FROM generate_series(1, {total}, 2) AS i", {"t": START})
    # Delivered events (history) and a few due ones (what the claim wants).
    await db.execute(
        "INSERT INTO webhook_events (event_id, merchant_id, event_type, logical_key, body, event_timestamp,"
        " status, attempts, next_attempt_at, created_at, updated_at, delivered_at)"
        f" SELECT 'E' || i, {owner}, 'payment.paid', 'k' || i, '{{}}', :t + i,"
        " CASE WHEN i % 2000 = 0 THEN 'pending' ELSE 'delivered' END, 1, :t + i, :t + i, :t + i, :t + i"
        f" FROM generate_series(1, {total}) AS i", {"t": START})
    await db.execute(
        "INSERT INTO webhook_deliveries (event_id, merchant_id, url, status_code, success, attempt, created_at)"
        f" SELECT 'E' || i, {owner}, 'https://example.com/hook', 200, TRUE, 1, :t + i"
        f" FROM generate_series(1, {total}) AS i", {"t": START})
    await db.execute(
        "INSERT INTO security_events (merchant_id, kind, details, alert, actor, created_at)"
        f" SELECT {owner}, 'sign_in', '{{}}', FALSE, CASE WHEN i % 10 = 0 THEN 'member a@example.com' END, :t + i"
        f" FROM generate_series(1, {total}) AS i", {"t": START})
    await _fill_side_lists(db, mine, neighbour, owner)
    await db.execute(
        "INSERT INTO ledger_balances (account, coin, balance, updated_at)"
        " SELECT 'acct:' || i, 'LTC', 1, :t FROM generate_series(1, :n) AS i", {"t": START, "n": total})


async def _fill_side_lists(db: Any, mine: str, neighbour: str, owner: str) -> None:
    """Payouts, transfers (ours sent to the neighbour and received from it), swaps and subscriptions (a
    subscription in ``CUSTOMERS`` per customer; one in ``ENROLLING`` payments an unpaid page enrolment the list
    leaves out, as few as pruning keeps them): one per ``SIDE`` payments."""
    series = f"generate_series({SIDE}, {MINE + NEIGHBOUR}, {SIDE}) AS i"
    other = f"CASE WHEN i <= {MINE} THEN '{neighbour}' ELSE '{mine}' END"
    await db.execute(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
        f" next_attempt_at, created_at, updated_at) SELECT 'po' || i, 'T' || i, {owner}, 'LTC', 'litecoin', 'addr',"
        f" 1000, 'Confirmed', 'done', :t + i, :t + i * 60, :t + i * 60 FROM {series}", {"t": START})
    await db.execute(
        "INSERT INTO transfers (id, from_merchant_id, to_merchant_id, from_account_id, to_account_id, coin, amount,"
        f" source, created_at) SELECT 'trf' || i, {owner}, {other}, 'a', 'b', 'LTC', 5, 'api', :t + i * 60"
        f" FROM {series}", {"t": START})
    await db.execute(
        "INSERT INTO swaps (id, merchant_id, kind, venue, from_coin, to_coin, from_amount, to_amount_quoted,"
        " floating, status, fallback, credit_done, attempts, next_attempt_at, deadline_at, created_at, updated_at)"
        f" SELECT 'sw' || i, {owner}, 'balance', 'fake', 'LTC', 'ETH', 7, 7, FALSE, 'CONFIRMED', FALSE, FALSE, 0,"
        f" :t + i, :t + i, :t + i * 60, :t + i * 60 FROM {series}", {"t": START})
    await db.execute(
        "INSERT INTO subscription_plans (id, merchant_id, label, amount_usd, interval_sec, accepted_coins, enabled,"
        " created_at, updated_at) VALUES ('plan-plans', :m, 'Plan', '5', 86400, '[]', TRUE, :t, :t)",
        {"m": mine, "t": START})
    await db.execute(
        "INSERT INTO subscriptions (id, merchant_id, plan_id, status, customer_ref, next_billing_at,"
        " current_period_end, grace_count, magic_token, token_hash, enrol_ip_hash, created_at, updated_at)"
        f" SELECT 'sub' || i, {owner}, 'plan-plans', CASE WHEN i % {ENROLLING} = 0 THEN 'PENDING' ELSE 'ACTIVE' END,"
        f" 'cust-' || (i / {SIDE} % {CUSTOMERS}), :t + i, CASE WHEN i % {ENROLLING} = 0 THEN NULL ELSE :t + i END,"
        f" 0, 'tok', 'h' || i, CASE WHEN i % {ENROLLING} = 0 THEN 'ip' END, :t + i * 60, :t + i * 60"
        f" FROM {series}", {"t": START})


class _Recorder:
    """The SELECTs a hot path sends through ``gateway.db`` (a keyed read outside a request is a ``fetch_one``)."""

    def __init__(self, db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        for name in ("fetch_one", "fetch_all", "fetch_val"):
            monkeypatch.setattr(db, name, self._wrap(getattr(db, name)))

    def _wrap(self, original: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def recorded(query: str, values: Any = None) -> Any:
            if query.lstrip().upper().startswith("SELECT"):
                self.seen.append((query, dict(values or {})))
            return await original(query, values)
        return recorded

    def take(self) -> list[tuple[str, dict[str, Any]]]:
        seen, self.seen = self.seen, []
        return seen


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


def _rows_touched(node: dict[str, Any]) -> int:
    loops = int(node.get("Actual Loops", 1))
    read = node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0) \
        + node.get("Rows Removed by Index Recheck", 0)
    return int(read * loops)


def _problems(plan: dict[str, Any], bound: int) -> list[str]:
    """Why a plan fails: a history table read without an index, or a scan past ``bound`` rows."""
    found = []
    for node in _nodes(plan):
        table = node.get("Relation Name")
        if table not in HISTORY_TABLES | BOUNDED_TABLES:
            continue
        if node["Node Type"] == "Seq Scan" and table in HISTORY_TABLES:
            found.append(f"sequential scan of {table}")
        elif _rows_touched(node) > bound:
            found.append(f"{node['Node Type']} of {table} touched {_rows_touched(node)} rows (bound {bound})")
    return found


async def test_every_hot_query_reads_an_index_and_a_bounded_number_of_rows(gateway, monkeypatch):
    """Break caught: drop ``payments_merchant_order`` (m0035) and the ``order_id`` lookup scans the
    merchant's payments; drop ``payments_merchant_list`` and page 500 sorts the whole set; count a kept
    list's ``total`` (payments, deposits, webhook log, activity log) with ``COUNT(*)`` again and it reads the
    merchant's 12,000 (6,000 deposits) entries."""
    db = gateway.db
    mine, neighbour = "m_plans_mine", "m_plans_neighbour"
    await _fill(db, mine, neighbour)
    monkeypatch.setattr(gateway, "now", lambda: START + 10**8)
    recorder = _Recorder(db, monkeypatch)
    report = []
    for path in HOT_PATHS:
        await path.call(gateway, mine)
        statements = recorder.take()
        assert statements, f"{path.name}: no SELECT recorded"
        for sql, values in statements:
            explained = await db.fetch_val("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, values)
            plan = (json.loads(explained) if isinstance(explained, str) else explained)[0]["Plan"]
            bound = path.count_rows if sql.lstrip().upper().startswith("SELECT COUNT") else path.rows
            report += [f"{path.name}: {problem}\n    {' '.join(sql.split())[:160]}"
                       for problem in _problems(plan, bound)]
        recorder.take()  # the EXPLAINs themselves
    assert not report, "\n".join(report)
