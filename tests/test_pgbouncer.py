"""The gateway behind PgBouncer in transaction pooling mode (issue 33), a focused suite rather than a second run.

Each test has a PostgreSQL database of its own, reached through a private
pgbouncer (tests/pgbouncer.py: ``pool_mode = transaction``, 4 server
sessions per database) as ``database.url``, and straight as
``database.direct_url`` for what needs a session (LISTEN, advisory locks:
core/infra/pg_sessions.py). What a transaction pooler breaks is exercised
through it: payments paid on devnet, payouts, transfers, webhooks, job
leadership and its failover, key revocation and cache invalidation across
processes, and named prepared statements under concurrency; and the start is
refused, naming the setting, where the gateway cannot run.
"""

from __future__ import annotations

import asyncio
import os
import secrets

import asyncpg
import pytest

from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.core.events.webhooks import deliver_due
from orbchain.core.infra.config import ConfigError
from orbchain.core.ledger import book as ledger
from orbchain.web.keys import GATEWAY

from .cross_process import HANG_SECONDS, settings_change_reaches, two_processes
from .pgbouncer import pgbouncer, pgbouncer_session  # noqa: F401 - fixtures
from .support import Devnet, WebhookReceiver, api, bearer, signup
from .test_payouts import BTC_DEST, create, fund, work

pytestmark = pytest.mark.postgresql_only("PgBouncer stands in front of PostgreSQL")

READ = "/v1/payment/accepted-currencies"


def _upstream() -> str:
    return os.environ["ORBCHAIN_TEST_PG_DSN"].replace("postgresql+asyncpg://", "postgresql://", 1)


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(_upstream())
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture
async def database(db_backend):
    """A PostgreSQL database of this test's own (the pooler sees whole databases, not a schema per test)."""
    assert db_backend == "postgresql"
    name = f"orbchain_pgb_{secrets.token_hex(5)}"
    await _admin(f'CREATE DATABASE "{name}"')
    yield name
    await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def db_url(pgbouncer, database):  # noqa: F811 - the pooler's URL stands for the test's database
    return pgbouncer.url(database)


@pytest.fixture
def pooled(make_config, pgbouncer, database):  # noqa: F811
    """A config: queries through the transaction pooler, sessions straight to PostgreSQL."""
    def make(**sections):
        return make_config(database={"url": pgbouncer.url(database), "direct_url": pgbouncer.direct(database)},
                           rate_limits={"write_per_minute": 100_000}, **sections)
    return make


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


async def test_transaction_pooling_without_a_direct_url_is_refused_naming_the_setting(
        make_config, make_client, pgbouncer, pgbouncer_session, database):  # noqa: F811
    with pytest.raises(ConfigError) as refused:
        await make_client(make_config())  # database.url alone, through the transaction pooler
    message = str(refused.value)
    assert "database.url" in message and "pool_mode = transaction" in message
    assert "direct_url" in message and "ORBCHAIN_DATABASE_DIRECT_URL" in message

    with pytest.raises(ConfigError) as pooled_too:
        await make_client(make_config(database={"url": pgbouncer.url(database),
                                                "direct_url": pgbouncer.url(database)}))
    assert "database.direct_url" in str(pooled_too.value)

    # Session pooling keeps a session per client: the gateway runs on it alone, with its statement cache.
    client = await make_client(make_config(database={"url": pgbouncer_session.url(database)}))
    gateway = client.app[GATEWAY]
    assert gateway.db.pooled is False and gateway.db.session_url == gateway.db.url
    assert (await signup(client)).keys["merchant_api_key"]


async def test_payments_payouts_transfers_and_webhooks_through_transaction_pooling(make_client, pooled, receiver):
    client = await make_client(pooled(scheduler={"enabled": False}))
    gateway = client.app[GATEWAY]
    assert gateway.db.pooled is True, "the probe must see the transaction pooler"
    devnet = Devnet(client)
    alice, bob = await signup(client, "alice@example.com"), await signup(client, "bob@example.com")
    status, body = await api(client, "PUT", "/dashboard/settings/webhook", alice.jwt,
                             json={"webhook_url": await receiver.start()})
    assert status == 200, body
    secret = body["data"]["webhook_secret"]

    track_id = await fund(client, alice, devnet, "0.01")
    _, body = await api(client, "GET", f"/v1/payment/{track_id}", alice.merchant_key)
    assert body["data"]["status"] == "Paid"

    status, body = await create(client, alice, "0.004", BTC_DEST)
    assert status == 200, body
    payout = body["data"]["track_id"]
    assert await work(gateway) == 1
    await devnet.mine(1)
    await work(gateway)
    _, body = await api(client, "GET", f"/v1/payout/{payout}", alice.payout_key)
    assert body["data"]["status"] == "Confirmed", body

    bob_account = (await api(client, "GET", "/dashboard/account", bob.jwt))[1]["data"]["account"]["account_id"]
    status, body = await api(client, "POST", "/v1/transfer", alice.merchant_key,
                             json={"to_account_id": bob_account, "coin": "BTC", "amount": "0.001"})
    assert status == 200, body
    _, body = await api(client, "GET", "/v1/general/account/balance", bob.general_key)
    assert body["data"]["balances"] == [{"coin": "BTC", "amount": "0.001"}]

    await deliver_due(gateway)
    types = sorted(b["event_type"] for b in receiver.verified(secret))
    assert {"payment.paid", "deposit.credited"} <= set(types), types
    assert any(t.startswith("payout.") for t in types), types
    assert (await ledger.check_ledger(gateway.db)).ok


async def test_no_prepared_statement_errors_under_concurrency(make_client, pooled, pgbouncer, database):  # noqa: F811
    """Many requests at once over 4 server sessions: every one answers. The same load on asyncpg's named
    statements fails, so the pooler does hand statements between sessions here."""
    client = await make_client(pooled(scheduler={"enabled": False}))
    merchant = await signup(client)

    async def one(i: int) -> int:
        if i % 3 == 0:
            status, _ = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                                  json={"currency": "BTC", "amount": f"0.00{i % 9 + 1}"})
            return status
        path, headers = (READ, merchant.merchant_key) if i % 3 == 1 else (
            "/v1/general/account/balance", merchant.general_key)
        return (await client.get(path, headers=headers)).status

    statuses = await asyncio.gather(*(one(i) for i in range(150)))
    assert set(statuses) == {200}, sorted(set(statuses))

    named = await asyncpg.create_pool(pgbouncer.url(database).replace("+asyncpg", ""), min_size=8, max_size=8)
    try:
        async def read(i: int) -> BaseException | None:
            try:
                async with named.acquire() as conn:
                    await conn.fetchval(f"SELECT $1::int + {i % 5}", i)
            except asyncpg.PostgresError as exc:
                return exc
            return None

        errors = [e for e in await asyncio.gather(*(read(i) for i in range(400))) if e is not None]
    finally:
        await named.close()
    assert any(isinstance(e, asyncpg.InvalidSQLStatementNameError) for e in errors), errors[:3]


class Leading:
    """A job that reports each run it leads and holds the leadership until released (or cancelled)."""

    PLUGIN_NAME = "leading"

    def __init__(self, name: str, runs: asyncio.Queue, cancelled: list[str], release: asyncio.Event) -> None:
        self.name, self.runs, self.cancelled, self.release = name, runs, cancelled, release

    @hookimpl
    def register_jobs(self, registry):
        async def lead(gateway):
            self.runs.put_nowait(self.name)
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled.append(self.name)
                raise

        registry.add("leading.job", lead, seconds=0.1)


async def test_one_job_leader_and_failover_when_its_session_dies(make_client, pooled):
    """Two processes: exactly one leads (the other is refused for ten ticks); the leader's lock session is
    killed with pg_terminate_backend: its run is cancelled and a leader is elected again (whichever process
    ticks first), one only."""
    runs, cancelled, release = asyncio.Queue(), [], asyncio.Event()
    config = pooled(server={"drain_seconds": 1})
    apps = {name: await make_client(config, get_plugin_manager([Leading(name, runs, cancelled, release)]))
            for name in ("a", "b")}
    try:
        leader = await asyncio.wait_for(runs.get(), HANG_SECONDS)
        await asyncio.sleep(1.0)  # ten ticks of each scheduler
        assert runs.empty(), f"{leader} and {runs.get_nowait()} both lead"
        pid = apps[leader].app[GATEWAY].db._session_locks._conn.get_server_pid()
        await _admin(f"SELECT pg_terminate_backend({pid})")
        await asyncio.wait_for(runs.get(), HANG_SECONDS)  # re-elected
        assert cancelled == [leader]
        await asyncio.sleep(1.0)
        assert runs.empty(), "two leaders after the failover"
    finally:
        release.set()
    for client in apps.values():
        await client.close()
    conn = await asyncpg.connect(config.database.direct_url.replace("+asyncpg", ""))
    try:  # nothing left behind on a pooled server session (a closed session's backend ends a moment later)
        for _ in range(50):
            rows = await conn.fetch("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND database ="
                                    " (SELECT oid FROM pg_database WHERE datname = current_database())")
            if not rows:
                break
            await asyncio.sleep(0.1)
        assert not rows, rows
    finally:
        await conn.close()


async def test_revocation_and_settings_reach_the_other_process_at_once(make_client, pooled):
    pair = await two_processes(make_client, pooled())
    a, b = pair.a, pair.b
    assert all(gw.db.pooled for gw in pair.gateways)
    owner = await signup(a)
    response = await a.post("/dashboard/api-keys", json={"label": "k", "scopes": ["payment:read"]},
                            headers=bearer(owner.token))
    key = (await response.json())["data"]
    assert (await b.get(READ, headers={"merchant_api_key": key["api_key"]})).status == 200
    assert (await a.post(f"/dashboard/api-keys/{key['id']}/revoke", headers=bearer(owner.token))).status == 200
    assert (await b.get(READ, headers={"merchant_api_key": key["api_key"]})).status == 401

    await settings_change_reaches(a, b, owner)
    await pair.barrier()  # a NOTIFY sent through the pooler, heard on B's direct session


async def test_a_wake_signal_crosses_processes_through_the_direct_sessions(make_client, pooled):
    a, b = await make_client(pooled()), await make_client(pooled())
    heard = asyncio.Event()
    b.app[GATEWAY].signals.subscribe("wake", lambda name: heard.set() if name == "pgbouncer.probe" else None)
    a.app[GATEWAY].signals.publish("wake", "pgbouncer.probe")
    await asyncio.wait_for(heard.wait(), HANG_SECONDS)


async def test_doctor_and_config_check_show_the_direct_url_and_doctor_checks_it(
        pgbouncer, database, tmp_path, monkeypatch, capsys):  # noqa: F811
    """Issue 33's gap: behind PgBouncer the operator sees both URLs (passwords hidden) in ``config check`` and
    ``doctor``, and ``doctor`` fails a direct_url that does not connect or is a transaction pooler too."""
    from orbchain.cli import main
    from .support import free_port

    for name in [n for n in os.environ if n.startswith("ORBCHAIN_")]:
        monkeypatch.delenv(name)
    secret = "direct-s3cret"  # trust auth: sent by nobody, but never printed either
    pooled = pgbouncer.url(database).replace("postgres@", f"postgres:{secret}@")
    direct = pgbouncer.direct(database).replace("postgres@", f"postgres:{secret}@")

    def shown(url: str) -> str:
        return url.replace(f":{secret}@", ":***@")

    async def run(direct_url: str, *argv: str) -> tuple[int, str]:
        path = tmp_path / "orbchain.toml"
        path.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "development"\n\n'
                        f'[database]\nurl = "{pooled}"\ndirect_url = "{direct_url}"\n')
        code = await asyncio.to_thread(main, ["--config", str(path), *argv])
        out = capsys.readouterr().out
        assert secret not in out
        return code, out

    assert (await run(direct, "migrate"))[0] == 0
    code, out = await run(direct, "config", "check")
    assert code == 0, out
    assert (f"OK   database urls: url {shown(pooled)}; direct_url {shown(direct)} ([database] direct_url,"
            " env ORBCHAIN_DATABASE_DIRECT_URL)") in out
    code, out = await run(direct, "doctor")
    assert code == 0, out
    assert f"direct_url {shown(direct)}" in out
    assert "OK   direct_url: connects and keeps its session" in out

    code, out = await run(pooled, "config", "check")  # the config alone cannot tell a pooler: it shows where
    assert code == 0 and f"direct_url {shown(pooled)}" in out, out
    code, out = await run(pooled, "doctor")
    assert code == 1, out
    assert "FAIL direct_url: goes through a transaction pooler: PgBouncer's pool_mode = transaction" in out
    assert "FAIL database: cannot connect (config key 'database.direct_url' goes through a transaction pooler" in out

    nowhere = f"postgresql+asyncpg://postgres:{secret}@127.0.0.1:{free_port()}/{database}"
    code, out = await run(nowhere, "doctor")
    assert code == 1, out
    assert "FAIL direct_url: cannot connect (unreachable: connection refused)" in out
