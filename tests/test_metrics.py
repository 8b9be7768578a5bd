"""``GET /metrics`` (issue 22): protected, Prometheus text format, true numbers, no merchant data.

The exposition is read back with prometheus-client's own parser (the format's
reference implementation), not with our code, on SQLite and PostgreSQL.
"""

from __future__ import annotations


import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from orbchain.core.health.metrics_db import ledger_check_job
from orbchain.core.contract.registries import Job
from orbchain.core.watching.scanner import scan_job
from orbchain.scheduler.runner import run_job_once
from orbchain.testing.api import api, signup
from orbchain.web.keys import GATEWAY

from .support import Devnet, free_port

TOKEN = "metrics-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value, parsed by prometheus-client's reference parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(parsed, name: str, **labels: str) -> float | None:
    return parsed.get((name, tuple(sorted(labels.items()))))


async def scrape(client, headers=AUTH) -> dict:
    response = await client.get("/metrics", headers=headers)
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return samples(await response.text())


@pytest.fixture
async def shop(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, metrics={"token": TOKEN}))
    merchant = await signup(client, "metrics@example.com")
    return client, merchant, Devnet(client)


async def test_metrics_are_off_unless_protected(client):
    # No token and no separate listener: not exposed at all.
    assert (await client.get("/metrics")).status == 404
    assert (await client.get("/metrics", headers=AUTH)).status == 404


async def test_metrics_need_the_bearer_token(shop):
    client, _, _ = shop
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"},
                    {"Authorization": TOKEN}):
        response = await client.get("/metrics", headers=headers)
        assert response.status == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")
        assert (await response.json())["error"]["type"] == "authentication"
    await scrape(client)


async def test_token_file(make_client, make_config, tmp_path):
    path = tmp_path / "metrics.token"
    path.write_text(TOKEN + "\n")
    client = await make_client(make_config(scheduler={"enabled": False}, metrics={"token_file": str(path)}))
    assert (await client.get("/metrics")).status == 401
    await scrape(client)


async def test_http_requests_by_route_template_and_status(shop):
    client, merchant, _ = shop
    before = await scrape(client)
    route = "/v1/payment/{track_id}"
    base = value(before, "orbchain_http_requests_total", method="GET", route=route, status="404") or 0
    for track_id in ("missing-1", "missing-2", "missing-3"):
        assert (await client.get(f"/v1/payment/{track_id}", headers=merchant.merchant_key)).status == 404
    await client.get("/no/such/path/for-anyone")
    await client.request("TRACE", "/health")
    after = await scrape(client)
    assert value(after, "orbchain_http_requests_total", method="GET", route=route, status="404") == base + 3
    assert value(after, "orbchain_http_request_duration_seconds_count", method="GET", route=route) >= 3
    assert value(after, "orbchain_http_request_duration_seconds_bucket", method="GET", route=route, le="+Inf") >= 3
    assert value(after, "orbchain_http_requests_total", method="GET", route="<unmatched>", status="404") >= 1
    assert value(after, "orbchain_http_requests_total", method="OTHER", route="<unmatched>", status="405") == 1
    # The signup before counted once, under its template.
    assert value(after, "orbchain_http_requests_total", method="POST", route="/dashboard/auth/signup",
                 status="200") == 1
    labels = {v for (_, pairs) in after for _, v in pairs}
    assert not any("missing-" in label or "for-anyone" in label for label in labels)


async def test_database_facts_jobs_chains_and_ledger(shop):
    client, merchant, devnet = shop
    gateway = client.app[GATEWAY]
    status, body = await api(client, "PUT", "/dashboard/settings/webhook", merchant.jwt,
                             json={"webhook_url": "http://127.0.0.1:9/hook"})
    assert status == 200
    # A paid payment: a payment webhook waits in the outbox, the balance is credited.
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01"})
    assert status == 200, body
    await devnet.pay("BTC", body["data"]["address"], "0.01")
    await devnet.mine(2)
    status, body = await api(client, "POST", "/v1/payout", merchant.payout_key,
                             json={"currency": "BTC", "address": BTC_DEST, "amount": "0.001"})
    assert status == 200, body
    parsed = await scrape(client)
    pending = await gateway.db.fetch_val("SELECT COUNT(*) FROM webhook_events WHERE status = 'pending'")
    assert pending >= 1 and value(parsed, "orbchain_webhook_queue_depth") == pending
    assert value(parsed, "orbchain_payouts", status="Confirming") == 1
    assert value(parsed, "orbchain_payout_backlog", stage="queued") == 1
    assert value(parsed, "orbchain_ledger_check_ok") is None  # never checked yet: no made-up answer

    # Jobs through the scheduler's runner: runs, failures, duration.
    async def broken(gw):
        raise RuntimeError("boom")

    assert await run_job_once(gateway, Job("test.broken", broken, 60))
    assert await run_job_once(gateway, Job("ledger.check", ledger_check_job, 60))
    scan = scan_job(devnet.adapter)
    await devnet.chain.mine(3)
    assert await run_job_once(gateway, Job("chain.devnet.scan", scan, 5))
    parsed = await scrape(client)
    assert value(parsed, "orbchain_job_runs_total", job="test.broken") == 1
    assert value(parsed, "orbchain_job_failures_total", job="test.broken") == 1
    assert value(parsed, "orbchain_job_runs_total", job="ledger.check") == 1
    assert value(parsed, "orbchain_job_failures_total", job="ledger.check") in (None, 0)
    assert value(parsed, "orbchain_ledger_check_ok") == 1 and value(parsed, "orbchain_ledger_check_problems") == 0
    assert 0 <= value(parsed, "orbchain_ledger_check_age_seconds") < 5
    tip = await gateway.db.fetch_val("SELECT MAX(height) FROM chain_blocks WHERE chain = 'devnet'")
    assert tip >= 3 and value(parsed, "orbchain_chain_node_height", chain="devnet") == tip
    assert value(parsed, "orbchain_chain_scanned_height", chain="devnet") == tip
    assert value(parsed, "orbchain_chain_lag_blocks", chain="devnet") == 0

    # A broken ledger shows up at the next check.
    await gateway.db.execute("UPDATE ledger_balances SET balance = '1' WHERE account LIKE 'merchant:%'")
    await ledger_check_job(gateway)
    parsed = await scrape(client)
    assert value(parsed, "orbchain_ledger_check_ok") == 0 and value(parsed, "orbchain_ledger_check_problems") >= 1


async def test_webhook_delivery_outcomes(shop):
    client, merchant, devnet = shop
    gateway = client.app[GATEWAY]
    from orbchain.core.events.webhooks import deliver_due

    # A receiver that refuses: the attempt is counted as retrying.
    await api(client, "PUT", "/dashboard/settings/webhook", merchant.jwt, json={"webhook_url": "http://127.0.0.1:9/"})
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01"})
    await devnet.pay("BTC", body["data"]["address"], "0.01")
    assert await deliver_due(gateway) >= 1
    parsed = await scrape(client)
    assert value(parsed, "orbchain_webhook_deliveries_total", outcome="retrying") >= 1


async def test_no_merchant_data_in_labels(shop):
    client, merchant, devnet = shop
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01", "order_id": "order-secret-77"})
    track_id = body["data"]["track_id"]
    await api(client, "GET", f"/v1/payment/{track_id}", merchant.merchant_key)
    text = await (await client.get("/metrics", headers=AUTH)).text()
    for private in (merchant.merchant_id, "metrics@example.com", track_id, "order-secret-77",
                    body["data"]["address"], *merchant.keys.values(), merchant.token):
        assert private not in text


async def test_separate_listener(make_client, make_config):
    port = free_port()
    client = await make_client(make_config(scheduler={"enabled": False}, metrics={"listen": f"127.0.0.1:{port}"}))
    assert (await client.get("/health")).status == 200
    assert (await client.get("/metrics")).status == 404  # not on the main port
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
            assert response.status == 200
            parsed = samples(await response.text())
        assert value(parsed, "orbchain_http_requests_total", method="GET", route="/health", status="200") == 1
        async with session.get(f"http://127.0.0.1:{port}/ready") as response:
            assert response.status in (200, 503) and "ready" in await response.json()
        async with session.get(f"http://127.0.0.1:{port}/v1/common/currencies") as response:
            assert response.status == 404  # the listener serves operators only


async def test_separate_listener_may_also_require_the_token(make_client, make_config):
    port = free_port()
    await make_client(make_config(scheduler={"enabled": False},
                                  metrics={"listen": f"127.0.0.1:{port}", "token": TOKEN}))
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
            assert response.status == 401
        async with session.get(f"http://127.0.0.1:{port}/metrics", headers=AUTH) as response:
            assert response.status == 200


def test_stale_metric_files_are_cleared_and_nothing_else(tmp_path):
    from orbchain.core.infra.metrics import clear_metric_files

    for name in ("counter_123.db", "gauge_mostrecent_123.db", "histogram_9.db", "orbchain.db", "seed"):
        (tmp_path / name).write_text("x")
    clear_metric_files(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["orbchain.db", "seed"]
    clear_metric_files(tmp_path / "new" / "dir")
    assert (tmp_path / "new" / "dir").is_dir()


@pytest.mark.parametrize("sections, message", [
    ({"logging": {"format": "xml"}}, "logging.format"),
    ({"logging": {"level": "LOUD"}}, "logging.level"),
    ({"metrics": {"listen": "9100"}}, "metrics.listen"),
    ({"metrics": {"listen": "host:99999"}}, "metrics.listen"),
    ({"metrics": {"ledger_check_seconds": -1}}, "metrics.ledger_check_seconds"),
    ({"readiness": {"node_timeout_seconds": 0}}, "readiness.node_timeout_seconds"),
])
def test_operations_config_is_validated(sections, message):
    from orbchain.core.infra.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_config(None, environ={}).with_overrides(**sections)


def test_operations_config_from_the_environment():
    from orbchain.core.infra.config import load_config

    config = load_config(None, environ={"ORBCHAIN_METRICS__TOKEN_FILE": "/run/secrets/metrics_token",
                                        "ORBCHAIN_LOGGING__FORMAT": "json", "ORBCHAIN_LOGGING__ACCESS_LOG": "true",
                                        "ORBCHAIN_READINESS__MAX_LAG_BLOCKS": "3"})
    assert config.metrics.token_file == "/run/secrets/metrics_token" and config.logging.format == "json"
    assert config.logging.access_log is True and config.readiness.max_lag_blocks == 3
