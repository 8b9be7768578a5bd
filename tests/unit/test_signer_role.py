"""Who signs payouts is said, never assumed: a production serve and the ``[signer]`` keys (issue 45 item 1)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from orbchain.cli import main
from orbchain.core.cli.ops import signer_role_finding, static_findings
from orbchain.core.custody.signer_role import Privilege, described, plan_grant, planned_privileges, role_drift
from orbchain.core.infra.db_urls import url_user
from orbchain.core.infra.config import ConfigError, load_config
from orbchain.core.keys.secrets import check_signing_role, load_secrets
from orbchain.core.keys.signer_channel import ChannelRefused, RequestVerifier, signed_headers
from orbchain.core.payouts.remote_signing import check_remote_capable
from orbchain.core.startup import build_gateway
from orbchain.core.types.chains import Capability

PRODUCTION_SECRETS = {"jwt_secret": "j" * 40, "receipt_signing_key": "A" * 43 + "=",
                      "seed_mnemonic": "000102030405060708090a0b0c0d0e0f"}


def production(tmp_path, secrets=PRODUCTION_SECRETS, **signer):
    return load_config(None, environ={}).with_overrides(
        server={"data_dir": str(tmp_path), "environment": "production"}, secrets=secrets, signer=signer)


def test_a_production_serve_with_the_seed_must_say_it_is_the_signer(tmp_path, caplog):
    config = production(tmp_path)
    with pytest.raises(ConfigError, match="in_process = true"):
        check_signing_role(config, load_secrets(config))
    said = production(tmp_path, in_process=True)
    with caplog.at_level(logging.WARNING):
        check_signing_role(said, load_secrets(said))
    assert "this host is also the signer" in caplog.text


def test_a_serve_given_a_signer_url_and_a_seed_refuses_to_start(tmp_path):
    with pytest.raises(ConfigError, match="must not hold the seed"):
        load_secrets(production(tmp_path, url="unix:///run/orbchain/signer.sock"))
    seedless = {k: v for k, v in PRODUCTION_SECRETS.items() if k != "seed_mnemonic"}
    config = production(tmp_path, seedless, url="http://10.0.0.5:8700")
    loaded = load_secrets(config)
    assert loaded.seed_material == ""
    check_signing_role(config, loaded)  # nothing to say: this host signs nothing


@pytest.mark.parametrize("signer, message", [
    ({"url": "tcp://10.0.0.5"}, "signer.url"),
    ({"listen": "/run/signer.sock"}, "signer.listen"),
    ({"url": "unix:///s.sock", "in_process": True}, "exclude each other"),
    ({"max_skew_seconds": 0}, "max_skew_seconds"),
    ({"database_url": "sqlite+aiosqlite:///x.db"}, "signer.database_url"),
])
def test_signer_keys_are_checked(signer, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, environ={}).with_overrides(signer=signer)


class LocalOnly:
    """A payout chain that declares no REMOTE_SIGNING (a third party's, say)."""

    name = "localonly"

    def supports(self, capability: Capability) -> bool:
        return capability is Capability.PAYOUTS


def test_a_seedless_serve_refuses_a_chain_that_cannot_sign_remotely(tmp_path):
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(tmp_path), "environment": "development"}, signer={"url": "unix:///s.sock"})
    gateway = build_gateway(config)
    check_remote_capable(gateway)  # devnet and Lightning (the signer sends its payments) both can
    with pytest.raises(ConfigError, match=r"chain\(s\) localonly cannot"):
        check_remote_capable(SimpleNamespace(chains=[*gateway.chains, LocalOnly()]))


def test_a_seedless_serve_runs_tron_and_solana_their_payouts_signed_by_the_signer(tmp_path):
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(tmp_path), "environment": "development"}, signer={"url": "unix:///s.sock"},
        plugin={"tron": {"url": "http://127.0.0.1:9"}, "solana": {"rpc_url": "http://127.0.0.1:9"}})
    gateway = build_gateway(config)
    assert {"tron", "solana", "lightning"} <= {adapter.name for adapter in gateway.chains}
    check_remote_capable(gateway)  # Lightning too now: the signer sends its payments (SIGNER_SENDS)


def test_the_channel_refuses_missing_wrong_stale_and_replayed_credentials():
    key, body, now = b"k" * 32, b'{"payout_id": "po_1"}', 1_000_000
    verifier = RequestVerifier(key, window_seconds=30)
    refusals = [({}, body, "no credential"), (signed_headers(b"x" * 32, body, now), body, "wrong credential"),
                (signed_headers(key, body, now - 31), body, "stale request")]
    for headers, sent, reason in refusals:
        with pytest.raises(ChannelRefused, match=reason):
            verifier.verify(headers, sent, now)
    fresh = signed_headers(key, body, now)
    verifier.verify(fresh, body, now)
    with pytest.raises(ChannelRefused, match="replayed"):
        verifier.verify(fresh, body, now + 5)
    with pytest.raises(ChannelRefused, match="wrong credential"):
        verifier.verify(fresh, b'{"payout_id": "po_2"}', now)


@pytest.mark.parametrize("signer, status, words", [
    ({}, "FAIL", "names no signer"),
    ({"in_process": True}, "WARN", "this host is also the signer"),
    ({"key_file": "/etc/orbchain/credentials/signer_key"}, "OK", "a signer's config"),
])
def test_config_check_says_who_signs_as_the_start_does(tmp_path, signer, status, words):
    findings = {f.check: f for f in static_findings(build_gateway(production(tmp_path, **signer)))}
    assert findings["signer"].level == status and words in findings["signer"].detail


def lnd_block(tmp_path, macaroon_key: str) -> dict:
    """``[plugin.lightning]`` for an LND at a dead address, with one macaroon file under ``macaroon_key``."""
    (tmp_path / "some.macaroon").write_bytes(b"\x02" * 40)
    return {"lightning": {"backend": "lnd", "lnd_url": "http://127.0.0.1:9", macaroon_key: str(tmp_path / "some.macaroon")}}


def test_a_production_web_process_beside_a_signer_refuses_the_paying_macaroon(tmp_path):
    """The signer sends Lightning payouts; the web process may hold only the receiving macaroon, and `config
    check` (which builds the gateway the way `serve` does) refuses the paying one."""
    seedless = {k: v for k, v in PRODUCTION_SECRETS.items() if k != "seed_mnemonic"}
    beside = production(tmp_path, seedless, url="unix:///run/orbchain-signer/signer.sock").with_overrides(
        plugin=lnd_block(tmp_path, "macaroon_path"))
    with pytest.raises(ConfigError, match="invoice_macaroon_path"):
        build_gateway(beside)
    receiving = beside.with_overrides(plugin=lnd_block(tmp_path, "invoice_macaroon_path"))
    findings = {f.check: f for f in static_findings(build_gateway(receiving))}
    assert findings["signer"].level == "OK", findings["signer"]
    # This host declared the signer (in_process, so no url): it pays here, with the seed's own warning.
    said = production(tmp_path, in_process=True).with_overrides(plugin=lnd_block(tmp_path, "macaroon_path"))
    assert {f.check: f for f in static_findings(build_gateway(said))}["signer"].level == "WARN"
    # Development: nothing changes.
    build_gateway(beside.with_overrides(server={"environment": "development"}))
@pytest.mark.parametrize("database_url, status, words", [
    ("", "WARN", "orbchain custody signer-role"),
    ("postgresql://orbchain_signer@db.internal/orbchain", "OK", "its own database role"),
])
def test_config_check_wants_a_postgresql_signer_on_its_own_role(tmp_path, database_url, status, words):
    config = production(tmp_path, key_file="/etc/orbchain/credentials/signer_key", database_url=database_url
                        ).with_overrides(database={"url": "postgresql://orbchain@db.internal/orbchain"})
    finding = {f.check: f for f in static_findings(build_gateway(config))}["signer"]
    assert (finding.level, words in finding.detail) == (status, True), finding.detail


def test_the_signer_role_command_refuses_sqlite_and_changes_nothing(tmp_path, capsys, monkeypatch):
    for name in ("ORBCHAIN_CONFIG", "ORBCHAIN_DATABASE_URL", "ORBCHAIN_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "orbchain.toml"
    config.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\n')
    assert main(["--config", str(config), "custody", "signer-role", "orbchain_signer"]) == 2
    assert "SQLite" in capsys.readouterr().err and not (tmp_path / "var").exists()
    assert main(["--config", str(config), "custody", "signer-role", "orbchain_signer", "--sweeps"]) == 2
    said = capsys.readouterr().err
    assert "--sweeps is ignored (deprecated)" in said and "SQLite" in said


TABLES = ("payouts", "signing_locks", "security_events", "ledger_postings", "ledger_transactions", "ledger_balances",
          "sweep_bookings", "evm_sweeps", "api_key_secrets", "merchants")
SEQUENCES = ("security_events_id_seq", "ledger_postings_id_seq", "merchants_id_seq")


def expected() -> frozenset[Privilege]:
    return planned_privileges(plan_grant(TABLES, SEQUENCES), "s")


def test_the_expected_privileges_are_the_grants_list_one_privilege_per_column():
    plain = expected()
    assert {Privilege("USAGE", "schema s"), Privilege("SELECT", "merchants"), Privilege("UPDATE", "payouts", "stage"),
            Privilege("INSERT", "signing_locks"), Privilege("UPDATE", "signing_locks", "coin"),
            Privilege("USAGE", "security_events_id_seq")} <= plain
    assert not {p for p in plain if p.target == "api_key_secrets" or p.column == "amount"}
    assert Privilege("UPDATE", "payouts") not in plain and Privilege("USAGE", "merchants_id_seq") not in plain
    # A sweep records its postings (serve books them): the one list writes no ledger table (issue 45).
    assert {Privilege("INSERT", "sweep_bookings"), Privilege("UPDATE", "evm_sweeps")} <= plain
    assert not {p for p in plain if p.target.startswith("ledger_") and p.name != "SELECT"}


def test_drift_names_what_is_missing_and_extra_a_whole_table_covering_its_columns():
    held = set(expected()) - {Privilege("SELECT", "merchants"), Privilege("INSERT", "signing_locks")}
    held |= {Privilege("UPDATE", "payouts"), Privilege("SELECT", "api_key_secrets"),
             Privilege("INSERT", "signing_locks", "coin")}  # a column of a privilege expected on the whole table
    drift = role_drift(held, expected())
    assert drift.missing == (Privilege("INSERT", "signing_locks"), Privilege("SELECT", "merchants"))
    assert drift.extra == (Privilege("SELECT", "api_key_secrets"), Privilege("UPDATE", "payouts")) and not drift.current
    assert role_drift(expected(), expected()).current
    assert described(drift.missing + drift.extra) == (
        "SELECT on api_key_secrets, SELECT on merchants, UPDATE on payouts, INSERT on signing_locks")
    assert described([Privilege("UPDATE", "payouts", c) for c in ("stage", "tx_hash")]) == (
        "UPDATE (stage, tx_hash) on payouts")
    assert described([Privilege("SELECT", f"t{n}") for n in range(10)], most=3) == (
        "SELECT on t0, SELECT on t1, SELECT on t2 and 7 more")


def test_a_role_granted_with_the_old_sweeps_widening_is_drift_its_ledger_writes_extra():
    old_sweeps = expected() | {Privilege("INSERT", "ledger_postings"), Privilege("INSERT", "ledger_transactions"),
                               Privilege("UPDATE", "ledger_balances")}
    assert role_drift(old_sweeps, expected()).extra == (
        Privilege("INSERT", "ledger_postings"), Privilege("INSERT", "ledger_transactions"),
        Privilege("UPDATE", "ledger_balances"))


@pytest.mark.parametrize("url, user", [
    ("postgresql://orbchain_signer:pw@db.internal/orbchain", "orbchain_signer"),
    ("postgresql+asyncpg://db.internal/orbchain?user=signer2&schema=x", "signer2"),
    ("postgresql://db.internal/orbchain", ""),
])
def test_the_role_a_database_url_connects_as(url, user):
    assert url_user(url) == user


async def test_doctor_checks_no_signer_role_unless_one_is_configured_on_postgresql(tmp_path):
    role_url = "postgresql://orbchain_signer@db.internal/orbchain"
    config = production(tmp_path)
    for signer, postgres in (("", True), (role_url, False)):
        gateway = SimpleNamespace(config=config.with_overrides(signer={"database_url": signer}),
                                  db=SimpleNamespace(is_postgres=postgres))
        assert await signer_role_finding(gateway) is None
    nameless = SimpleNamespace(config=config.with_overrides(signer={"database_url": "postgresql://db.internal/o"}),
                               db=SimpleNamespace(is_postgres=True))
    assert (await signer_role_finding(nameless)).level == "WARN"
