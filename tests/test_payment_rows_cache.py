"""An unchanged payment is answered with no query; a change made anywhere is seen within one notification (issue 47).

Two app instances on one PostgreSQL database stand for two processes
(tests/cross_process.py). B reads a payment (and keeps its rows), then A
changes it through the API or by plain SQL; ``Pair.barrier`` returns once B
heard every notification committed so far, and B's next read, API and
hosted page, must show the change. PostgreSQL only: SQLite reads the rows
every time (core/payments/row_cache.py).

Breaks caught: a read that still queries (first test, fails on the code
before issue 47), the triggers of m0047 dropped (the plain-SQL tests keep
B's stale rows: tried), a cache trusted without its listening connection.
"""

from __future__ import annotations

from typing import Any

from orbchain.core.payments.row_cache import SERVICE

from .cross_process import CROSS_PROCESS, two_processes
from .test_pay_page import merchant_key, new_invoice
from .test_pay_page_cache import deposit

pytestmark = CROSS_PROCESS


async def _read(client: Any, key: str, track_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/payment/{track_id}", headers={"merchant_api_key": key})
    assert response.status == 200, await response.text()
    return (await response.json())["data"]


async def _page(client: Any, track_id: str) -> str:
    response = await client.get(f"/pay/{track_id}")
    assert response.status == 200
    return await response.text()


def quiet(make_config: Any) -> Any:
    """No scheduler: two processes' scans of one devnet would race each other's deposit inserts."""
    return make_config(scheduler={"enabled": False})


def _payment_statements(window: Any) -> list[str]:
    return [label for label in window.labels if "payments" in label or "deposits" in label]


async def test_an_unchanged_payment_is_read_from_the_database_once(make_client, make_config, statement_log):
    client = await make_client(quiet(make_config))
    key = await merchant_key(client, "rows-once@example.com")
    track_id = (await new_invoice(client, key))["track_id"]
    windows = []
    for read in (_read(client, key, track_id), _page(client, track_id), _read(client, key, track_id),
                 _page(client, track_id)):
        async with statement_log.window() as window:
            await read
        windows.append(window)
    assert _payment_statements(windows[0]) == ["SELECT deposits payments"]
    assert [_payment_statements(w) for w in windows[1:]] == [[], [], []], [w.listing() for w in windows]


async def test_an_api_change_in_one_process_reaches_the_other(make_client, make_config):
    pair = await two_processes(make_client, quiet(make_config))
    key = await merchant_key(pair.a, "rows-api@example.com")
    track_id = (await new_invoice(pair.a, key))["track_id"]
    assert (await _read(pair.b, key, track_id))["status"] == "Waiting"
    assert len(pair.gateways[1].services[SERVICE]) == 1  # B keeps the rows
    assert (await pair.a.post(f"/v1/payment/{track_id}/cancel", headers={"merchant_api_key": key})).status == 200
    await pair.barrier()
    assert (await _read(pair.b, key, track_id))["status"] == "Cancelled"


async def test_plain_sql_on_payments_and_deposits_reaches_the_other_process(make_client, make_config):
    pair = await two_processes(make_client, quiet(make_config))
    key = await merchant_key(pair.a, "rows-sql@example.com")
    invoice = await new_invoice(pair.a, key, accepted_coins=["BTC"])
    track_id = invoice["track_id"]
    await deposit(pair.a, invoice, blocks=1)
    await pair.barrier()
    assert (await _read(pair.b, key, track_id))["transactions"][0]["confirmations"] == 1
    page = await _page(pair.b, track_id)

    async def description(db: Any) -> None:
        await db.execute("UPDATE payments SET description = :d WHERE track_id = :t", {"d": "Changed tea", "t": track_id})

    await pair.barrier(description)
    assert (await _read(pair.b, key, track_id))["description"] == "Changed tea"
    assert "Changed tea" in await _page(pair.b, track_id) and "Changed tea" not in page

    async def confirmations(db: Any) -> None:
        await db.execute("UPDATE deposits SET confirmations = 0 WHERE track_id = :t", {"t": track_id})

    await pair.barrier(confirmations)
    assert (await _read(pair.b, key, track_id))["transactions"][0]["confirmations"] == 0

    async def removed(db: Any) -> None:
        await db.execute("DELETE FROM deposits WHERE track_id = :t", {"t": track_id})

    await pair.barrier(removed)
    assert (await _read(pair.b, key, track_id))["transactions"] == []


async def test_rows_are_not_trusted_without_the_listening_connection(make_client, make_config):
    pair = await two_processes(make_client, quiet(make_config))
    key = await merchant_key(pair.a, "rows-untrusted@example.com")
    track_id = (await new_invoice(pair.a, key))["track_id"]
    await _read(pair.b, key, track_id)
    pair.gateways[1].services["auth_cache"]._trusted = lambda: False  # its side connection down or late
    db = pair.gateways[0].db
    await db.execute("ALTER TABLE payments DISABLE TRIGGER payments_rows_changed")  # a notification lost
    try:
        await db.execute("UPDATE payments SET description = 'unannounced' WHERE track_id = :t", {"t": track_id})
        assert (await _read(pair.b, key, track_id))["description"] == "unannounced"
    finally:
        await db.execute("ALTER TABLE payments ENABLE TRIGGER payments_rows_changed")


async def test_a_hook_after_the_commit_reads_the_new_state_not_the_cached_one(make_client, make_config):
    """The expiry job's ``payment_expired`` hook runs after the commit and before the change is announced: this
    process's cached rows must already be gone then (``changes._Forget``, at the commit), not when the
    notification comes back."""
    from orbchain.core.contract.plugins import hookimpl
    from orbchain.core.payments import service as svc
    from orbchain.core.payments.status import expire_payments
    from orbchain.web.keys import GATEWAY

    client = await make_client(quiet(make_config))
    gateway = client.app[GATEWAY]
    key = await merchant_key(client, "rows-hook@example.com")
    track_id = (await new_invoice(client, key))["track_id"]
    assert (await _read(client, key, track_id))["status"] == "Waiting"  # cached now
    seen = []

    class Reader:
        @hookimpl
        async def payment_expired(self, gateway, payment):
            seen.append((await svc.show_payment(gateway, None, track_id))["status"])

    gateway.pm.register(Reader(), name="reader")
    try:
        real = gateway.clock
        gateway.clock = lambda: real() + 3600 * 2
        assert await expire_payments(gateway) == 1
    finally:
        gateway.pm.unregister(name="reader")
    assert seen == ["Expired"]
