"""``orbchain custody check`` on devnet (core/custody, chains/devnet/custody.py), on both databases.

A clean run after real payments, payouts (one still in flight) and a
refund reports a zero difference; coins taken from the hot wallet outside
the gateway are a shortfall of exactly that amount, shown on /metrics,
and with ``custody.pause_payouts`` a new payout waits (not fails) until a
clean check, which the operator's cold address given as watch-only makes.
"""

from __future__ import annotations

import asyncio

from orbchain.cli import main
from orbchain.core.custody.report import OK, SHORTFALL
from orbchain.core.custody.run import run_custody_check
from orbchain.core.health.metrics_db import facts_registry, read_facts
from orbchain.core.startup import build_gateway
from prometheus_client import generate_latest
from orbchain.core.payouts import service as payouts

from .test_payouts import create, fund, payout_env, payout_row, work
from .test_refunds import refund

COLD = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
THIEF = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


async def test_clean_after_payments_payouts_and_a_refund(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    gateway = devnet.gateway
    paid = await fund(client, merchant, devnet, "0.01")
    await fund(client, merchant, devnet, "0.02")
    status, body = await create(client, merchant, "0.005")
    assert status == 200, body
    status, refunded = await refund(client, merchant, paid, amount="0.004")
    assert status == 200, refunded
    await work(gateway)
    await devnet.mine(1)
    await work(gateway)
    assert (await payout_row(gateway, body["data"]["track_id"]))["status"] == payouts.CONFIRMED
    status, pending = await create(client, merchant, "0.001")  # broadcast, mined, not yet seen Confirmed
    await work(gateway)
    await devnet.chain.mine(1)

    report = await run_custody_check(gateway, "test")
    btc = report.by_coin()["BTC"]
    assert btc.status == OK and btc.difference == 0 and btc.books_difference == 0, report.lines(lambda c, u: str(u))
    # 0.03 in, 0.005 + 0.004 out confirmed, 0.001 in flight: the merchant 0.0297 - 0.01 = 0.0197, fees 0.0003.
    assert btc.held == 2_100_000 and btc.owed.total == 2_100_000
    assert btc.owed.payouts_in_flight == 100_000 and btc.owed.platform_fees == 30_000
    assert report.ok and not report.shortfalls
    assert (await read_facts(gateway)).custody_shortfall["BTC"] == 0


async def custody_cli(tmp_path, db_url, monkeypatch, command: str = "custody") -> int:
    """``orbchain custody check`` (or ``doctor``) in an operator's shell, on the test's database and settings."""
    for name in ("ORBCHAIN_CONFIG", "ORBCHAIN_DATABASE_URL", "ORBCHAIN_DATA_DIR", "ORBCHAIN_ENVIRONMENT"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "orbchain.toml"
    path.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "development"\n\n'
                    f'[database]\nurl = "{db_url}"\n\n[custody]\npause_payouts = true\ncold = ["devnet:{COLD}"]\n')
    argv = ["custody", "check"] if command == "custody" else [command]
    return await asyncio.to_thread(main, ["--config", str(path), *argv])


async def test_coins_taken_outside_the_gateway_are_a_shortfall_and_pause_payouts(make_client, make_config, tmp_path,
                                                                                 db_url, monkeypatch, capsys):
    client, merchant, devnet = await payout_env(make_client, make_config,
                                                custody={"pause_payouts": True, "cold": [f"devnet:{COLD}"]})
    gateway = devnet.gateway
    await fund(client, merchant, devnet, "0.01")
    # A transaction the gateway never made spends 0.003 BTC of the hot wallet (the simulated chain's form).
    await devnet.chain.submit("ab" * 32, "BTC", THIEF, 300_000, payout_id="not-a-payout")
    await devnet.mine(1)

    capsys.readouterr()
    assert await custody_cli(tmp_path, db_url, monkeypatch) == 1
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == "custody SHORTFALL: BTC 0.003"
    assert "BTC [devnet]: SHORTFALL -0.003: held 0.007, owed 0.01; books 0.01 (node - books -0.003)" in printed
    assert await custody_cli(tmp_path, db_url, monkeypatch, "doctor") == 1
    assert any(line.startswith("FAIL custody: at ") and line.endswith(": BTC short by 0.003 (payouts paused)")
               for line in capsys.readouterr().out.splitlines())
    report = await run_custody_check(gateway, "test")
    btc = report.by_coin()["BTC"]
    assert btc.status == SHORTFALL and btc.shortfall == 300_000 and btc.books_difference == -300_000
    assert report.lines(lambda c, u: str(u))[-1] == "custody SHORTFALL: BTC 300000"
    facts = await read_facts(gateway)
    assert facts.custody_shortfall["BTC"] == 300_000 and facts.custody_paused["BTC"] is True
    assert facts.custody_shortfall["ETH"] == 0 and facts.custody_paused["ETH"] is False  # others covered
    assert facts.custody_last_check_at == report.checked_at
    scraped = generate_latest(facts_registry(facts)).decode()
    assert 'orbchain_custody_shortfall{coin="BTC"} 300000.0' in scraped
    assert 'orbchain_custody_payouts_paused{coin="BTC"} 1.0' in scraped

    status, body = await create(client, merchant, "0.002")
    assert status == 200, body
    for _ in range(3):
        await work(gateway, 60)
    row = await payout_row(gateway, body["data"]["track_id"])
    assert (row["status"], row["stage"], row["attempts"]) == (payouts.CONFIRMING, payouts.QUEUED, 0)
    assert row["last_error"] == "paused: custody shortfall of 0.003 BTC"

    # The operator finds the coins and puts them in cold storage: the next check is clean and payouts go on.
    await devnet.pay("BTC", COLD, "0.003")
    await devnet.mine(1)
    assert await custody_cli(tmp_path, db_url, monkeypatch) == 0
    capsys.readouterr()
    await custody_cli(tmp_path, db_url, monkeypatch, "doctor")
    assert any(line.startswith("OK   custody: at ") and line.endswith(": every checked coin covered")
               for line in capsys.readouterr().out.splitlines())
    report = await run_custody_check(gateway, "test")
    assert report.by_coin()["BTC"].status == OK and report.ok
    assert (await read_facts(gateway)).custody_paused["BTC"] is False
    await work(gateway, 60)
    assert (await payout_row(gateway, body["data"]["track_id"]))["stage"] == payouts.BROADCAST


def test_the_job_runs_on_its_schedule_and_zero_turns_it_off(make_config):
    assert "custody.check" in build_gateway(make_config()).jobs.names()
    assert "custody.check" not in build_gateway(make_config(custody={"check_seconds": 0})).jobs.names()
