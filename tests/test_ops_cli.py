"""Operator commands (issue 22): ``webhooks pending``/``redeliver``, ``payouts show``, ``doctor``, and
``ledger check`` keeping its result for /metrics; on SQLite and PostgreSQL.

Each command runs in a thread (it starts its own event loop, as from a shell)
while the test's loop keeps serving the webhook receiver.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os

import pytest

from orbchain.cli import main
from orbchain.core.accounts.merchants import sign_up
from orbchain.core.events.outbox import enqueue_event

from .support import WebhookReceiver

SECRET = "ops-webhook-secret-0123456789abcdef"


@pytest.fixture
def config_path(tmp_path, db_url, monkeypatch):
    for name in ("ORBCHAIN_CONFIG", "ORBCHAIN_DATABASE_URL", "ORBCHAIN_DATA_DIR", "ORBCHAIN_ENVIRONMENT"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "orbchain.toml"
    # The same data directory and database as the ``gateway`` fixture, like an operator's shell.
    path.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "development"\n\n'
                    f'[database]\nurl = "{db_url}"\n\n[webhooks]\nallow_private_urls = true\n')
    return str(path)


async def orbchain(config_path: str, *argv: str) -> int:
    return await asyncio.to_thread(main, ["--config", config_path, *argv])


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


async def merchant_with_hook(gateway, url: str) -> str:
    result = await sign_up(gateway, "ops@example.com", "ops-passw0rd-long")
    await gateway.db.execute("UPDATE merchants SET webhook_url = :u, webhook_secret = :s WHERE id = :m",
                             {"u": url, "s": SECRET, "m": result.merchant_id})
    return result.merchant_id


async def test_webhooks_pending_lists_the_outbox(gateway, config_path, capsys):
    merchant_id = await merchant_with_hook(gateway, "http://127.0.0.1:9/hook")
    ids = [await enqueue_event(gateway, merchant_id=merchant_id, event_type="payment.paid", body={"n": n},
                               logical_key=f"ops-{n}") for n in range(3)]
    capsys.readouterr()
    assert await orbchain(config_path, "webhooks", "pending", "--limit", "2") == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("3 webhook event(s) pending, 2 shown")
    assert sum(event_id in out for event_id in ids) == 2 and "payment.paid" in out and "attempts 0" in out
    assert SECRET not in out


async def test_redeliver_sends_a_failed_event_again(gateway, config_path, capsys, receiver):
    url = await receiver.start()
    merchant_id = await merchant_with_hook(gateway, url)
    event_id = await enqueue_event(gateway, merchant_id=merchant_id, event_type="payment.paid", body={"n": 1},
                                   logical_key="ops-redeliver")
    await gateway.db.execute("UPDATE webhook_events SET status = 'failed', attempts = 5, next_attempt_at = NULL,"
                             " last_error = 'HTTP 503' WHERE event_id = :e", {"e": event_id})
    assert await orbchain(config_path, "webhooks", "redeliver", event_id) == 0
    assert capsys.readouterr().out.strip().endswith(f"{event_id} delivered")
    assert len(receiver.requests) == 1
    sent = receiver.requests[0]
    expected = hmac.new(SECRET.encode(), sent["raw"], hashlib.sha512).hexdigest()
    assert hmac.compare_digest(expected, sent["headers"]["HMAC"]) and sent["body"]["n"] == 1
    row = await gateway.db.fetch_one("SELECT status, attempts FROM webhook_events WHERE event_id = :e", {"e": event_id})
    assert row["status"] == "delivered" and row["attempts"] == 1
    log = await gateway.db.fetch_all("SELECT success FROM webhook_deliveries WHERE event_id = :e", {"e": event_id})
    assert [bool(r["success"]) for r in log] == [True]
    # A refused delivery stays pending for the job; an unknown event is an error.
    receiver.fail_next = 1
    assert await orbchain(config_path, "webhooks", "redeliver", event_id) == 1
    assert "not delivered now (receiver answered HTTP 503" in capsys.readouterr().out
    row = await gateway.db.fetch_one("SELECT status FROM webhook_events WHERE event_id = :e", {"e": event_id})
    assert row["status"] == "pending"
    assert await orbchain(config_path, "webhooks", "redeliver", "evt_nope") == 1
    assert "no webhook event evt_nope" in capsys.readouterr().out


async def test_payouts_show(gateway, config_path, capsys):
    result = await sign_up(gateway, "payout@example.com", "ops-passw0rd-long")
    now = gateway.now()
    await gateway.db.execute(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage, tx_hash,"
        " raw_tx, next_attempt_at, created_at, updated_at, attempts, last_error)"
        " VALUES ('po_ops', 'trk_ops_1', :m, 'BTC', 'devnet', 'bc1qdest', :amount, 'Confirming', 'broadcast',"
        " 'txhash_ops', 'deadbeefrawtxbytes', :now, :now, :now, 2, 'node busy')",
        {"m": result.merchant_id, "amount": gateway.db.amount_param(123_456), "now": now})
    capsys.readouterr()
    assert await orbchain(config_path, "payouts", "show", "trk_ops_1") == 0
    out = capsys.readouterr().out
    fields = dict(line.strip().split(": ", 1) for line in out.splitlines())
    assert fields["track_id"] == "trk_ops_1" and fields["amount"] == "0.00123456 BTC"
    assert fields["status"] == "Confirming" and fields["stage"] == "broadcast" and fields["tx_hash"] == "txhash_ops"
    assert fields["attempts"] == "2" and fields["last_error"] == "node busy" and fields["finished_at"] == "-"
    assert "deadbeefrawtxbytes" not in out  # signed bytes are not for the terminal
    assert await orbchain(config_path, "payouts", "show", "trk_unknown") == 1
    assert "no payout trk_unknown" in capsys.readouterr().out


async def test_payouts_release_and_cancel_answer_a_policy_hold_once(gateway, config_path, capsys):
    result = await sign_up(gateway, "held@example.com", "ops-passw0rd-long")
    now = gateway.now()
    for n in (1, 2):  # rows the ledger never reserved, held by the signer's policy
        await gateway.db.execute(
            "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
            " policy_hold, next_attempt_at, created_at, updated_at) VALUES (:id, :t, :m, 'BTC', 'devnet', 'bc1qdest',"
            " :amount, 'Confirming', 'policy_held', 'no_reservation', :now, :now, :now)",
            {"id": f"po_held{n}", "t": f"trk_held_{n}", "m": result.merchant_id,
             "amount": gateway.db.amount_param(1000), "now": now})
    assert await orbchain(config_path, "payouts", "release", "trk_held_1", "--by", "alice") == 0
    assert "released (was held: no_reservation)" in capsys.readouterr().out
    row = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = 'po_held1'")
    assert (row["stage"], row["policy_released_by"]) == ("queued", "operator:alice")
    assert await orbchain(config_path, "payouts", "release", "trk_held_1") == 1  # no longer held
    assert "is not held by the signing policy" in capsys.readouterr().out
    assert await orbchain(config_path, "payouts", "cancel", "po_held2") == 0  # the id works as well
    row = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = 'po_held2'")
    assert (row["status"], row["failure_reason"]) == ("Failed", "cancelled_by_operator")
    assert await orbchain(config_path, "payouts", "cancel", "trk_held_2") == 1


async def test_payouts_release_refuses_a_payout_held_at_confirmation(gateway, config_path, capsys):
    result = await sign_up(gateway, "unsigned@example.com", "ops-passw0rd-long")
    now = gateway.now()
    await gateway.db.execute(  # held by confirm_gate: its mined transaction was not signed for it
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage, tx_hash,"
        " policy_hold, next_attempt_at, created_at, updated_at) VALUES ('po_unsigned', 'trk_unsigned', :m, 'BTC',"
        " 'devnet', 'bc1qdest', :amount, 'Confirming', 'policy_held', 'txhash_real', 'tx_not_signed_for_payout',"
        " :now, :now, :now)", {"m": result.merchant_id, "amount": gateway.db.amount_param(1000), "now": now})
    capsys.readouterr()
    assert await orbchain(config_path, "payouts", "release", "trk_unsigned") == 1
    assert ("payout trk_unsigned cannot be released: its transaction txhash_real is on the chain but was not signed"
            " for it (tx_not_signed_for_payout); releasing would pay it again. Cancel it instead.") in capsys.readouterr().out
    assert (await gateway.db.fetch_one("SELECT stage FROM payouts WHERE id = 'po_unsigned'"))["stage"] == "policy_held"
    assert await orbchain(config_path, "payouts", "cancel", "trk_unsigned") == 0
    row = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = 'po_unsigned'")
    assert (row["status"], row["failure_reason"]) == ("Failed", "cancelled_by_operator")


async def test_doctor(gateway, config_path, capsys):
    assert await orbchain(config_path, "doctor") == 0
    lines = capsys.readouterr().out.splitlines()
    checks = {line[5:].split(":", 1)[0]: line[:4].strip() for line in lines[:-1]}
    assert checks["config"] == checks["secrets"] == checks["database"] == checks["migrations"] == "OK"
    assert checks["clock"] == "OK" and checks["disk"] in ("OK", "WARN")
    assert checks["chain devnet"] == "WARN"  # reachable, not scanned yet
    assert lines[-1] == "no problems found"
    if gateway.db.is_postgres:
        assert any("from the database server" in line for line in lines)
    await gateway.db.execute("DELETE FROM schema_migrations WHERE namespace = 'core' AND version = 16")
    assert await orbchain(config_path, "doctor") == 1
    out = capsys.readouterr().out
    assert "FAIL migrations: 1 pending" in out and out.strip().endswith("1 problem(s)")


async def test_restore_recover_refuses_bad_input_runs_once_per_backup_and_shows_in_doctor(gateway, config_path,
                                                                                         capsys):
    for argv in (("restore", "recover", " "), ("restore", "recover", "b.dump", "--skip", "0")):
        assert await orbchain(config_path, *argv) != 0
    assert "--skip must be between 1" in capsys.readouterr().err
    assert not await gateway.db.fetch_all("SELECT * FROM restore_recoveries")
    await gateway.db.execute("INSERT INTO counters (name, value) VALUES ('change:bitcoin:mainnet', 4)")
    assert await orbchain(config_path, "restore", "recover", "b.dump", "--skip", "7") == 0
    assert "recovered from b.dump: 2 counter(s) skipped 7 ahead" in capsys.readouterr().out
    counters = {r["name"]: int(r["value"]) for r in await gateway.db.fetch_all("SELECT * FROM counters")}
    assert counters == {"change:bitcoin:mainnet": 11, "merchant_key_account": 7}  # no merchant, no address counter
    assert await orbchain(config_path, "restore", "recover", "b.dump", "--skip", "7") == 0
    assert "already recovered from b.dump" in capsys.readouterr().out
    assert {r["name"]: int(r["value"]) for r in await gateway.db.fetch_all("SELECT * FROM counters")} == counters
    await orbchain(config_path, "doctor")
    assert "OK   restore: recovered from b.dump at" in capsys.readouterr().out


def test_doctor_findings_thresholds(tmp_path):
    from orbchain.core.cli.ops import clock_finding, disk_finding

    assert clock_finding(0.5).level == "OK" and clock_finding(-5).level == "WARN" and clock_finding(90).level == "FAIL"
    assert disk_finding(tmp_path / "not" / "yet").detail.endswith(str(tmp_path))


async def test_ledger_check_result_is_kept_for_metrics(gateway, config_path):
    assert await orbchain(config_path, "ledger", "check") == 0
    row = await gateway.db.fetch_one("SELECT ok, problems, source FROM ledger_checks ORDER BY id DESC LIMIT 1")
    assert bool(row["ok"]) and row["problems"] == 0 and row["source"] == "cli"


async def test_config_check_and_doctor_give_one_verdict_and_need_a_chain_in_production(db_url, tmp_path, capsys,
                                                                                      monkeypatch):
    """Issue 32: ``config check`` said OK where ``doctor`` said FAIL, and ``doctor`` passed a production
    gateway with no chain adapter. Now config check runs doctor's static checks and says what it leaves out."""
    for name in [n for n in os.environ if n.startswith("ORBCHAIN_")]:
        monkeypatch.delenv(name)
    credentials = tmp_path / "credentials"
    assert await asyncio.to_thread(main, ["secrets", "init", "--dir", str(credentials)]) == 0
    path = tmp_path / "orbchain.toml"
    path.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "production"\n\n'
                    f'[database]\nurl = "{db_url}"\n\n[secrets]\n'
                    + "".join(f'{name}_file = "{credentials / name}"\n'
                              for name in ("jwt_secret", "receipt_signing_key"))
                    + f'seed_file = "{credentials / "seed"}"\n'
                    + '[signer]\nin_process = true\n')  # one host signs too, said so
    capsys.readouterr()

    def static(out: str) -> list[str]:
        return [line for line in out.splitlines() if line[5:].split(":", 1)[0] in ("config", "chains", "secrets")]

    assert await orbchain(str(path), "config", "check") == 1
    checked = capsys.readouterr().out
    assert "FAIL chains: no chain adapter: no payment can be received" in checked
    # Which database, and on PostgreSQL whether a direct_url is set (tests/test_pgbouncer.py: one that is).
    assert (f"OK   database urls: url {db_url} (SQLite: no direct_url)" if db_url.startswith("sqlite") else
            f"OK   database urls: url {db_url}; direct_url not set ([database] direct_url") in checked
    assert checked.strip().endswith("not checked here: run `orbchain doctor`)")
    assert await orbchain(str(path), "doctor") == 1
    doctor = capsys.readouterr().out
    assert static(doctor) == static(checked) and len(static(checked)) == 3

    monkeypatch.setenv("ORBCHAIN_PLUGIN__DEVNET__ENABLED", "true")  # one chain that can receive
    assert await orbchain(str(path), "config", "check") == 0
    checked = capsys.readouterr().out
    assert "OK   chains: 1 chain adapter(s)" in checked and "no problems found in the config" in checked
    assert "webhooks" not in checked
    await orbchain(str(path), "doctor")
    assert static(capsys.readouterr().out) == static(checked)

    # The SSRF guard switched off in production: a warning in both verdicts (review), not a refusal.
    monkeypatch.setenv("ORBCHAIN_ALLOW_PRIVATE_URLS", "1")
    assert await orbchain(str(path), "config", "check") == 0
    assert "WARN webhooks: webhooks.allow_private_urls is on in production" in capsys.readouterr().out


async def test_config_check_writes_nothing_and_names_every_missing_secret(db_url, tmp_path, capsys, monkeypatch):
    """Issue 49: ``config check`` with no config wrote the development secrets into ./var (a check must not
    write); production named only the first missing secret, and a missing seed file under a key that does not
    exist (``seed_mnemonic_file``); ``doctor`` before ``migrate`` said "cannot query"."""
    for name in [n for n in os.environ if n.startswith("ORBCHAIN_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    assert await asyncio.to_thread(main, ["config", "check"]) == 0
    out = capsys.readouterr().out
    assert "to be generated into" in out and "at the first start" in out
    assert list(tmp_path.iterdir()) == []  # nothing written: no ./var, no secret file

    monkeypatch.setenv("ORBCHAIN_ENVIRONMENT", "production")
    assert await asyncio.to_thread(main, ["config", "check"]) == 1
    out = capsys.readouterr().out
    assert ("FAIL secrets: required in production: 'secrets.jwt_secret' (or 'secrets.jwt_secret_file'),"
            " 'secrets.seed_mnemonic' (or 'secrets.seed_file'), 'secrets.receipt_signing_key'"
            " (or 'secrets.receipt_signing_key_file')") in out
    monkeypatch.setenv("ORBCHAIN_SECRETS__SEED_FILE", str(tmp_path / "no-such-seed"))
    assert await asyncio.to_thread(main, ["config", "check"]) == 1
    assert "config key 'secrets.seed_file': cannot read" in capsys.readouterr().out

    monkeypatch.delenv("ORBCHAIN_ENVIRONMENT")
    monkeypatch.delenv("ORBCHAIN_SECRETS__SEED_FILE")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    path = fresh / "orbchain.toml"
    path.write_text(f'[server]\ndata_dir = "{fresh / "var"}"\n\n[database]\nurl = "{_fresh_database(db_url)}"\n')
    assert await orbchain(str(path), "doctor") == 1
    doctor = capsys.readouterr().out
    assert "FAIL migrations:" in doctor and "pending: run `orbchain migrate`" in doctor, doctor
    assert "cannot query" not in doctor


def _fresh_database(db_url: str) -> str:
    """A database no migration has touched: a new SQLite file, or on PostgreSQL the test's own database
    under a schema that does not exist yet (search_path), so nothing is created."""
    if db_url.startswith("sqlite"):
        return "sqlite+aiosqlite:///" + str(os.path.join(os.path.dirname(db_url.split("///", 1)[1]), "never.db"))
    separator = "&" if "?" in db_url else "?"
    return f"{db_url}{separator}options=-csearch_path%3Dnever_migrated"


async def test_doctor_fails_on_drifted_payment_counts_and_payments_recount_repairs_them(gateway, config_path, capsys):
    """As after rows loaded with the triggers off (pg_restore --disable-triggers, a bulk fill): the lists'
    totals would be wrong, so doctor says so and names the repair."""
    merchant_id = (await sign_up(gateway, "counts@example.com", "ops-passw0rd-long")).merchant_id
    await gateway.db.execute(
        "INSERT INTO kept_counts (list, merchant_id, k1, k2, k3, n) VALUES ('payments', :m, 'Paid', 'invoice', 'BTC', 3)",
        {"m": merchant_id})
    assert await orbchain(config_path, "doctor") == 1
    out = capsys.readouterr().out
    assert "FAIL list counts: 1 counted key(s)" in out and "payments of" in out and "Paid invoice BTC by +3" in out
    assert "orbchain payments recount" in out
    assert await orbchain(config_path, "payments", "recount") == 0
    assert "1 key(s) differed" in capsys.readouterr().out
    assert await orbchain(config_path, "doctor") == 0
    assert "OK   list counts: equal to COUNT(*) of every counted list" in capsys.readouterr().out
