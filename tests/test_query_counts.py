"""The hot requests' statements, counted where the drivers run them (issue 11; issue 43 item 7).

Counts, not times: a statement added anywhere on a hot request's path
changes a number in ``COUNTS`` and fails here, with the statements listed,
instead of slowing every request unnoticed. Nothing is left out:
``orbchain.testing.statement_log`` sees every statement that reaches asyncpg
or sqlite3, on every connection and from every task the request started:
authentication (the key look-up and its once-a-minute use record, the
dashboard token's checks), membership, rate limits (the side connection's
sync on PostgreSQL), the outbox, transaction control, asyncpg's own type
look-ups.

Deterministic by construction, not by timing:

* each route is measured in a process started for it after the data it
  needs was made by another one (``make_setup``, ``fresh_process``): its first request meets empty
  caches, a rate limiter that never synced and connections that never ran
  its statements; the second and third show the steady state, and must agree;
* time stands still: the fresh process's ``gateway.clock`` is frozen two
  minutes after the setup (so its first request records the key's use and
  the later ones need not), nothing runs on a timer and no cache ages
  (``quiet_process``), the scheduler is off;
* a count ends when every task the request started has ended and the rate
  limiter's pending counts were pushed (the statement its hits cost at the
  next sync).

On PostgreSQL an unchanged payment is read from the database once per
process (core/payments/row_cache.py, issue 47): a read's or a page's steady
state is the rate limiter's sync alone.

What the steady state assumes: a client calling again within the caches'
ages (30 s for a key or a payment's rows, 1 s for a rate-limit bucket on PostgreSQL); one that
calls less often pays part of the first request's column again. The counts
and what they are made of are in docs/decisions.md ("Statement counts at the
drivers").
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import pytest

from orbchain.core.accounts.auth_cache import AuthCache
from orbchain.core.addresses import store as addresses
from orbchain.testing import pay_on_devnet
from orbchain.testing.devnet import crediting_scan
from orbchain.web.keys import GATEWAY

from .approvals_support import add_member
from .support import Merchant, api, signup

WHITE_LABEL = {"currency": "BTC", "amount": "0.01"}
BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
LATER = 120  # seconds between one process and the next: past the minute after which a key's use is recorded

READ = "GET /v1/payment/{id}, merchant key"
READ_SCOPED = "GET /v1/payment/{id}, scoped key"
READ_HOLDER = "GET /dashboard/payments/{id}, holder"
READ_MEMBER = "GET /dashboard/payments/{id}, member"
CREATE = "POST /v1/payment/white-label"
INVOICE = "POST /v1/payment/invoice"
PAGE = "GET /pay/{id}"
TRANSFER = "POST /v1/transfer"
TRANSFER_HOLDER = "POST /dashboard/transfer, holder"
PAYOUT = "POST /v1/payout"
CREDIT = "crediting a devnet deposit: its transaction"  # not a request: the scan's crediting transaction (issue 44)

# Statements per request, everything included: (first request of a fresh process, every later one).
COUNTS = {
    #                       SQLite      PostgreSQL
    READ:               ((3, 1),     (10, 1)),
    READ_SCOPED:        ((8, 6),     (15, 6)),
    READ_HOLDER:        ((3, 1),     (10, 1)),
    READ_MEMBER:        ((5, 1),     (12, 1)),
    CREATE:             ((12, 8),    (12, 2)),
    INVOICE:            ((12, 8),    (12, 2)),
    PAGE:               ((3, 1),     (10, 1)),
    TRANSFER:           ((22, 19),   (20, 11)),
    TRANSFER_HOLDER:    ((22, 19),   (20, 11)),
    PAYOUT:             ((20, 17),   (24, 15)),
    CREDIT:             ((37, 37),   (26, 26)),
}

# The statements behind each count (``statement_label``: first keyword and tables), compared in any order.
_KEY = "SELECT api_keys merchants | UPDATE api_keys"
_TOKEN = "SELECT merchants | SELECT revoked_tokens"
# PostgreSQL, a process's first rate-limit sync: the sync, asyncpg's look-up of its array types (JIT off around it)
# on the side connection, and the once-in-ten-minutes clean-up of old counts and nodes.
_FIRST_SYNC = ("WITH gateway_nodes rate_limit_hits | SELECT current_setting | WITH pg_attribute pg_class pg_namespace"
               " pg_range pg_type | SELECT set_config | DELETE rate_limit_hits | DELETE gateway_nodes")
_SYNC = "WITH gateway_nodes rate_limit_hits"
_PAYMENT = "SELECT deposits payments"
_KEY_AUDIT = "{begin} | SAVEPOINT | INSERT key_audit_log | RELEASE | COMMIT"  # plugins/audit, a scoped key's use
_AUDIT_SQLITE, _AUDIT_PG = _KEY_AUDIT.format(begin="BEGIN IMMEDIATE"), _KEY_AUDIT.format(begin="BEGIN")
_MEMBER = "SELECT team_members | SELECT team_policy"
# SQLite's trace reports a trigger's program and each statement in it as the statement that fired it: the payment
# insert's count delta (m0048's payments_counted_insert) shows as two more "INSERT payments". On PostgreSQL a
# trigger runs inside the statement, unseen by the driver.
_GROUPED_CREATE = ("BEGIN IMMEDIATE | SAVEPOINT | INSERT deposit_addresses | INSERT payments | INSERT payments"
                   " | INSERT payments | RELEASE | COMMIT")
_RESERVE = "SELECT merchants | INSERT counters"
# A transfer logs a skipped attempt for each of its two merchants in one INSERT: the webhook log's count trigger
# (m0056) runs twice, each time a program and its insert as SQLite traces them.
_LOG_DELTAS = " | INSERT webhook_deliveries" * 4
# A transfer reads both merchants and the sender's balance in one statement; whether the sender has an approval
# policy comes from the process's cache after the first (the decision reads it again in the transaction). The
# events are written before the money: the balance rows stay locked only from the ledger's write to the commit.
_POLICY = "SELECT approval_policies"  # decide_hold_quote's look-up, a process's first only (issue 47)
_TRANSFER_TXN = ("{insert} | SELECT approval_policies | INSERT webhook_events | INSERT webhook_deliveries"
                 "{log_deltas} | INSERT ledger_transactions | INSERT ledger_postings | {balances} | COMMIT")
# SQLite: the transfer's own insert fires the sent and received lists' count triggers (m0059): two more programs
# and inserts.
_TRANSFER_SQLITE = "SELECT ledger_balances merchants | BEGIN IMMEDIATE | " + _TRANSFER_TXN.format(
    insert="INSERT transfers" + " | INSERT transfers" * 4, log_deltas=_LOG_DELTAS,
    balances="SELECT ledger_balances | INSERT ledger_balances")
_TRANSFER_PG = "SELECT ledger_balances merchants | BEGIN | " + _TRANSFER_TXN.format(
    insert="INSERT transfers", log_deltas="", balances="INSERT ledger_balances")
_PAYOUT_BODY = ("SELECT merchants | SELECT deposit_addresses | SELECT payouts | {insert} | SAVEPOINT"
                " | INSERT ledger_transactions | INSERT ledger_postings | {balances} | RELEASE | SELECT payouts"
                " | SELECT approval_policies | SELECT payouts | COMMIT")
# SQLite: the payouts list's count trigger (m0059) as a program and its insert.
_PAYOUT_SQLITE = "BEGIN IMMEDIATE | " + _PAYOUT_BODY.format(
    insert="INSERT payouts | INSERT payouts | INSERT payouts", balances="SELECT ledger_balances | INSERT ledger_balances")
_PAYOUT_PG = "BEGIN | " + _PAYOUT_BODY.format(insert="INSERT payouts", balances="INSERT ledger_balances")

STATEMENTS = {
    READ: {"sqlite": (f"{_KEY} | {_PAYMENT}", _PAYMENT),
           "postgresql": (f"{_KEY} | {_FIRST_SYNC} | {_PAYMENT} | {_SYNC}", _SYNC)},
    READ_SCOPED: {"sqlite": (f"{_KEY} | {_PAYMENT} | {_AUDIT_SQLITE}", f"{_PAYMENT} | {_AUDIT_SQLITE}"),
                  "postgresql": (f"{_KEY} | {_FIRST_SYNC} | {_PAYMENT} | {_AUDIT_PG} | {_SYNC}",
                                 f"{_AUDIT_PG} | {_SYNC}")},
    READ_HOLDER: {"sqlite": (f"{_TOKEN} | {_PAYMENT}", _PAYMENT),
                  "postgresql": (f"{_TOKEN} | {_FIRST_SYNC} | {_PAYMENT} | {_SYNC}", _SYNC)},
    READ_MEMBER: {"sqlite": (f"{_TOKEN} | {_MEMBER} | {_PAYMENT}", _PAYMENT),
                  "postgresql": (f"{_TOKEN} | {_MEMBER} | {_FIRST_SYNC} | {_PAYMENT} | {_SYNC}", _SYNC)},
    CREATE: {"sqlite": (f"{_KEY} | {_RESERVE} | {_GROUPED_CREATE}", _GROUPED_CREATE),
             "postgresql": (f"{_KEY} | {_FIRST_SYNC} | {_RESERVE} | WITH deposit_addresses payments | {_SYNC}",
                            f"WITH deposit_addresses payments | {_SYNC}")},
    PAGE: {"sqlite": (f"{_PAYMENT} | SELECT brands | SELECT merchants", _PAYMENT),
           "postgresql": (f"{_FIRST_SYNC} | {_PAYMENT} | SELECT brands | SELECT merchants | {_SYNC}",
                          _SYNC)},
    TRANSFER: {"sqlite": (f"{_KEY} | {_POLICY} | {_TRANSFER_SQLITE}", _TRANSFER_SQLITE),
               "postgresql": (f"{_KEY} | {_FIRST_SYNC} | {_POLICY} | {_TRANSFER_PG} | {_SYNC}",
                              f"{_TRANSFER_PG} | {_SYNC}")},
    TRANSFER_HOLDER: {"sqlite": (f"{_TOKEN} | {_POLICY} | {_TRANSFER_SQLITE}", _TRANSFER_SQLITE),
                      "postgresql": (f"{_TOKEN} | {_FIRST_SYNC} | {_POLICY} | {_TRANSFER_PG} | {_SYNC}",
                                     f"{_TRANSFER_PG} | {_SYNC}")},
    PAYOUT: {"sqlite": (f"{_KEY} | {_POLICY} | {_PAYOUT_SQLITE}", _PAYOUT_SQLITE),
             "postgresql": (f"{_KEY} | {_FIRST_SYNC} | {_POLICY} | {_PAYOUT_PG} | {_SYNC}",
                            f"{_PAYOUT_PG} | {_SYNC}")},
}
STATEMENTS[INVOICE] = STATEMENTS[CREATE]
# A crediting transaction: the deposit locked, its payment's row read once (locked), the postings the plugins shape
# (swaps, splits), the deposit marked, deposit.credited, the deposits read once, the payment Paid, payment.paid.
# The first webhook looks up the payment's destination (a brand's, the key's) once for both; the account's URL is
# the merchant row the transaction read (core/events/key_destination.py's RunDestination). On SQLite the kept
# counts' triggers (m0056, m0057) show as the statement that fired them: the deposit's and the payment's status
# moves as four, each logged delivery as three.
_WEBHOOK = "INSERT webhook_events | {logged}"
_CREDIT = ("{begin} | SELECT deposits | UPDATE deposits | SELECT payments | SELECT merchants | SELECT swaps"
           " | SELECT settle_quotes | SELECT merchants | SELECT splits_entries | SAVEPOINT | INSERT ledger_transactions"
           " | INSERT ledger_postings | {balances} | RELEASE | SELECT swaps | {marked} | SELECT brands | SELECT api_keys | "
           + _WEBHOOK
           + " | SELECT deposits | {paid} | SELECT swaps | " + _WEBHOOK + " | COMMIT")
_CREDIT_SQLITE = _CREDIT.format(begin="BEGIN IMMEDIATE", balances="SELECT ledger_balances | INSERT ledger_balances",
                                marked=" | ".join(["UPDATE deposits"] * 4), paid=" | ".join(["UPDATE payments"] * 4),
                                logged=" | ".join(["INSERT webhook_deliveries"] * 3))
_CREDIT_PG = _CREDIT.format(begin="BEGIN", balances="INSERT ledger_balances", marked="UPDATE deposits",
                            paid="UPDATE payments", logged="INSERT webhook_deliveries")
STATEMENTS[CREDIT] = {"sqlite": (_CREDIT_SQLITE, _CREDIT_SQLITE), "postgresql": (_CREDIT_PG, _CREDIT_PG)}


@dataclass
class Setup:
    """What one process made before the measured ones start: who calls, and what they call on."""

    make_client: Callable
    config: Any
    clock: int  # the last process's frozen now (each next one starts ``LATER`` seconds on)
    merchant: Merchant
    scoped_key: dict[str, str]  # payment:read
    member: dict[str, str]  # an admin team member's dashboard token
    track_id: str  # an unpaid BTC invoice
    recipient: str  # another merchant's account id


@dataclass
class World:
    """A process started to measure one route (``client``, ``gateway``) on the setup's data."""

    client: Any
    gateway: Any
    setup: Setup

    @property
    def merchant(self) -> Merchant:
        return self.setup.merchant


async def make_setup(make_client: Callable, make_config: Callable) -> Setup:
    """The merchant (with a balance), a recipient, a scoped key, a member and an unpaid invoice, then the
    process that made them closed."""
    config = make_config(scheduler={"enabled": False})
    client = await make_client(config)
    merchant = await signup(client)
    other = await signup(client, "recipient@example.com")
    _, body = await api(client, "GET", "/dashboard/account", other.jwt)
    recipient = body["data"]["account"]["account_id"]
    status, body = await api(client, "POST", "/dashboard/api-keys", merchant.jwt,
                             json={"label": "reads", "scopes": ["payment:read"]})
    assert status == 200, body
    scoped_key = {"merchant_api_key": body["data"]["api_key"]}
    member = await add_member(client, client.app[GATEWAY], merchant.merchant_id, "fin@example.com")
    status, body = await api(client, "POST", "/v1/payment/invoice", merchant.merchant_key,
                             json={**WHITE_LABEL, "lifetime": 24 * 60})
    assert status == 200, body
    track_id = body["data"]["track_id"]
    _, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key, json=WHITE_LABEL)
    await pay_on_devnet(client, body["data"])  # the balance transfers and payouts spend
    clock = client.app[GATEWAY].now()
    await client.close()
    return Setup(make_client, config, clock, merchant, scoped_key, member, track_id, recipient)


async def fresh_process(setup: Setup) -> World:
    """A new process on the setup's database, its clock frozen ``LATER`` seconds after the last one's."""
    client = await setup.make_client(setup.config)
    gateway = client.app[GATEWAY]
    setup.clock += LATER
    frozen = setup.clock
    gateway.clock = lambda: frozen
    return World(client, gateway, setup)


async def _page(world: World) -> tuple[int, str]:
    response = await world.client.get(f"/pay/{world.setup.track_id}")
    return response.status, await response.text()


def _read(path: str, headers: Callable[[World], dict[str, str]]) -> Callable[[World], Awaitable[tuple[int, Any]]]:
    return lambda w: api(w.client, "GET", path.format(w.setup.track_id), headers(w))


def _transfer(path: str, headers: Callable[[World], dict[str, str]]) -> Callable[[World], Awaitable[tuple[int, Any]]]:
    return lambda w: api(w.client, "POST", path, headers(w),
                         json={"to_account_id": w.setup.recipient, "coin": "BTC", "amount": "0.0001"})


REQUESTS: dict[str, Callable[[World], Awaitable[tuple[int, Any]]]] = {
    READ: _read("/v1/payment/{}", lambda w: w.merchant.merchant_key),
    READ_SCOPED: _read("/v1/payment/{}", lambda w: w.setup.scoped_key),
    READ_HOLDER: _read("/dashboard/payments/{}", lambda w: w.merchant.jwt),
    READ_MEMBER: _read("/dashboard/payments/{}", lambda w: w.setup.member),
    CREATE: lambda w: api(w.client, "POST", "/v1/payment/white-label", w.merchant.merchant_key, json=WHITE_LABEL),
    INVOICE: lambda w: api(w.client, "POST", "/v1/payment/invoice", w.merchant.merchant_key, json=WHITE_LABEL),
    PAGE: _page,
    TRANSFER: _transfer("/v1/transfer", lambda w: w.merchant.merchant_key),
    TRANSFER_HOLDER: _transfer("/dashboard/transfer", lambda w: w.merchant.jwt),
    PAYOUT: lambda w: api(w.client, "POST", "/v1/payout", w.merchant.payout_key,
                          json={"currency": "BTC", "address": BTC_DEST, "amount": "0.0001"}),
}


async def measure(statement_log: Any, world: World, route: str, times: int = 3) -> list[Any]:
    """``times`` requests of ``route``, one window each; every answer must be a 200."""
    windows = []
    for _ in range(times):
        async with statement_log.window(world.gateway) as window:
            status, body = await REQUESTS[route](world)
        assert status == 200, (route, body)
        windows.append(window)
    await world.client.close()
    return windows


def mismatch(route: str, database: str, which: str, window: Any) -> str | None:
    """How the window differs from ``COUNTS`` and ``STATEMENTS`` (a readable diff), None when it does not."""
    phase = 0 if which == "first request" else 1
    count = COUNTS[route][0 if database == "sqlite" else 1][phase]
    expected = Counter(STATEMENTS[route][database][phase].split(" | "))
    seen = Counter(window.labels)
    if len(window) == count and seen == expected:
        return None
    diff = [f"    - {label}" for label in sorted((expected - seen).elements())]
    diff += [f"    + {label}" for label in sorted((seen - expected).elements())]
    return (f"{route} on {database}, {which}: {len(window)} statements ran, COUNTS says {count}\n"
            f"  against STATEMENTS (- missing, + more; any order):\n{chr(10).join(diff) or '    (the same)'}\n"
            f"  this run, in order:\n{window.listing()}\n"
            f"  this run for STATEMENTS: \"{' | '.join(window.labels)}\"")


async def test_each_hot_request_runs_the_statements_stated(statement_log, make_client, make_config, db_backend):
    """Every route of ``COUNTS`` in a process of its own; every difference is reported, not just the first."""
    setup = await make_setup(make_client, make_config)
    problems = []
    for route in REQUESTS:
        first, steady, again = await measure(statement_log, await fresh_process(setup), route)
        for which, window in (("first request", first), ("steady state", steady), ("steady state, again", again)):
            problems.append(mismatch(route, db_backend, which, window))
    found = [problem for problem in problems if problem is not None]
    assert not found, "\n\n".join(found)


def test_the_table_states_what_it_lists():
    """``COUNTS`` and ``STATEMENTS`` say the same numbers (an edit of one alone is caught without a database)."""
    for route, (sqlite, postgresql) in COUNTS.items():
        for database, counts in (("sqlite", sqlite), ("postgresql", postgresql)):
            listed = tuple(len(text.split(" | ")) for text in STATEMENTS[route][database])
            assert listed == counts, (route, database, listed, counts)


async def test_a_crediting_run_reads_its_payment_once(statement_log, make_client, make_config, db_backend):
    """The crediting transaction of a deposit (the scan that takes it over its threshold) runs the statements
    stated: its payment's row read once, under its lock, and its deposits once (issue 44 item 3); the first
    credit of a process and the later ones."""
    client = await make_client(make_config(scheduler={"enabled": False}))
    gateway = client.app[GATEWAY]
    merchant = await signup(client)
    problems = []
    for which in ("first request", "steady state", "steady state, again"):
        _, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key, json=WHITE_LABEL)
        await pay_on_devnet(client, body["data"], confirm=False)
        scan = await crediting_scan(gateway, body["data"]["address"], statement_log)
        problems.append(mismatch(CREDIT, db_backend, which, scan.transaction_around("UPDATE deposits SET status")))
    found = [problem for problem in problems if problem is not None]
    assert not found, "\n\n".join(found)


async def test_a_key_look_up_on_every_request_fails_the_count(statement_log, make_client, make_config, db_backend,
                                                                monkeypatch):
    """The regression the last wave hid: API-key resolution costing a statement per request is caught, named."""
    world = await fresh_process(await make_setup(make_client, make_config))
    monkeypatch.setattr(AuthCache, "key", lambda self, digest: None)  # the key cache never answers
    first, steady, _ = await measure(statement_log, world, READ)
    assert mismatch(READ, db_backend, "first request", first) is None
    message = mismatch(READ, db_backend, "steady state", steady)
    assert message is not None
    assert f"COUNTS says {COUNTS[READ][0 if db_backend == 'sqlite' else 1][1]}" in message
    assert "    + SELECT api_keys merchants" in message and "FROM api_keys k JOIN merchants" in message


async def test_reading_a_paid_payment_lists_its_deposits(statement_log, make_client, make_config, db_backend):
    """With deposits the read takes one more statement, and shows them; on PostgreSQL the next read of the
    unchanged payment takes none (core/payments/row_cache.py)."""
    world = await fresh_process(await make_setup(make_client, make_config))
    paid = (await api(world.client, "GET", "/v1/payment", world.merchant.merchant_key,
                      params={"status": "Paid"}))[1]["data"]["payments"][0]["track_id"]
    path = f"/v1/payment/{paid}"
    windows = []
    for _ in range(2):
        async with statement_log.window() as window:
            status, read = await api(world.client, "GET", path, world.merchant.merchant_key)
        assert status == 200 and len(read["data"]["transactions"]) == 1
        windows.append(window.labels)
    rows = ["SELECT deposits payments", "SELECT deposits"]
    assert windows == [rows, [] if db_backend == "postgresql" else rows]


async def test_the_log_sees_statements_no_wrapper_reports(statement_log, make_client, make_config, db_backend):
    """What a counter above the drivers missed is counted: a raw driver connection (a prepared statement, the
    simple protocol), work of a task the counted code started and left running, the side connection's NOTIFY
    (PostgreSQL), the group commit's thread and the inline reader (SQLite)."""
    client = await make_client(make_config(scheduler={"enabled": False}))
    gateway = client.app[GATEWAY]
    db = gateway.db

    async def later() -> None:
        await asyncio.sleep(0.01)
        await db.fetch_val("SELECT COUNT(*) FROM payouts")

    async with statement_log.window() as window:
        async with db.driver_connection() as conn:
            if db.is_postgres:
                await conn.fetchval("SELECT COUNT(*) FROM merchants")
                await (await conn.prepare("SELECT COUNT(*) FROM api_keys")).fetchval()  # a prepared statement
                await conn.execute("SELECT 1 FROM merchants LIMIT 1")  # the simple protocol
            else:
                await conn.execute_fetchall("SELECT COUNT(*) FROM merchants")
        asyncio.get_running_loop().create_task(later())  # not awaited here: the window waits for it
        if db.is_postgres:
            gateway.signals.publish("counted", "x")  # forwarded by a task of its own, on the side connection
        else:
            await db.execute_atomic([("INSERT INTO counters (name, value) VALUES ('a', 1)", {}),
                                     ("INSERT INTO counters (name, value) VALUES ('b', 1)", {})])
    own = (["SELECT api_keys", "SELECT merchants", "SELECT pg_notify"] if db.is_postgres
           else ["BEGIN IMMEDIATE", "SAVEPOINT", "INSERT counters", "INSERT counters", "RELEASE", "COMMIT"])
    assert Counter(window.labels) == Counter(["SELECT merchants", "SELECT payouts", *own]), window.listing()


async def test_a_settings_change_reaches_the_next_create(make_client, make_config):
    """The cached merchant row is dropped when a setting changes: the next create sees the change."""
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client)
    assert (await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key, json=WHITE_LABEL))[0] == 200
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt, json={"accepted_coins": ["ETH"]})
    assert status == 200, body
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key, json=WHITE_LABEL)
    assert status == 400 and body["error"]["code"] == "currency_not_accepted", body


async def test_index_blocks_never_overlap_between_processes(gateway):
    """Two processes (two block caches) on one database hand out disjoint indexes."""
    one, two = addresses.IndexBlocks(size=3), addresses.IndexBlocks(size=3)
    taken = await asyncio.gather(*(blocks.take(gateway, "addr:test") for _ in range(10) for blocks in (one, two)))
    assert len(set(taken)) == 20
    assert min(taken) == 0


async def test_index_blocks_are_not_reserved_inside_a_transaction(gateway):
    """A reservation rolled back with its transaction could be handed out twice; it is refused."""
    blocks = addresses.IndexBlocks()
    async with gateway.db.transaction():
        with pytest.raises(RuntimeError):
            await blocks.take(gateway, "addr:test")


async def test_concurrent_creates_of_one_merchant_get_distinct_addresses(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"enabled": False}))
    merchant = await signup(client)
    answers = await asyncio.gather(*(api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                                         json=WHITE_LABEL) for _ in range(25)))
    assert all(status == 200 for status, _ in answers), answers
    assert len({body["data"]["address"] for _, body in answers}) == 25
