"""A separate ``orbchain signer`` process and a seedless serve (issue 45 item 1, docs/operations.md "Custody: a
signer on its own host").

A real signer subprocess holds the seed and listens on a Unix socket; the test's gateway plays ``serve`` with
``[signer] url`` and no seed (deposit addresses from exported xpubs). Devnet payouts go through it (signing and
closing a dropped one), and a litecoin payout on the session litecoind; the signer holds a forged row by its own
policy check and refuses requests without the credential, with a wrong one, a stale one and a replayed one.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import pytest

from orbchain.core.addresses.store import export_account_xpubs
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.custody.signer_role import grant_signer_role
from orbchain.core.infra.db import Database
from orbchain.core.keys import SeedKeyStore
from orbchain.core.keys.seed_file import PASSPHRASE_VARIABLE, encrypt_seed
from orbchain.core.keys.signer_channel import new_channel_key, signed_headers
from orbchain.web.keys import GATEWAY
from tests.families import get_family

from .support import signup

from .litecoind import external_address, faucet, litecoind_node  # noqa: F401 - session fixtures
from .test_bitcoin_litecoind import Shop, create_payout
from .test_bitcoin_litecoind import payout_row as ltc_payout_row
from .test_bitcoin_litecoind import work as ltc_work
from .test_payouts import BTC_DEST, balance, create, fund, payout_env, payout_row, work

SEED = "000102030405060708090a0b0c0d0e0f"
METRICS_TOKEN = "m" * 32
JWT = "j" * 40  # both sides verify the payout binding digest (core/payouts/binding.py) under its derived key


class Signer:
    """A running ``orbchain signer`` subprocess and what a client needs to reach it."""

    def __init__(self, process: asyncio.subprocess.Process, socket: Path, key: bytes) -> None:
        self.process, self.socket, self.key = process, socket, key
        self.start_again: Callable[[], Awaitable[Signer]] | None = None  # the same signer, after a stop

    async def post(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
        connector = aiohttp.UnixConnector(path=str(self.socket))
        async with aiohttp.ClientSession(connector=connector) as session:
            async with session.post("http://signer/v1/sign", data=body, headers=headers) as response:
                return response.status, await response.json()

    async def get(self, path: str, headers: dict[str, str]) -> tuple[int, str]:
        connector = aiohttp.UnixConnector(path=str(self.socket))
        async with aiohttp.ClientSession(connector=connector) as session:
            async with session.get(f"http://signer{path}", headers=headers) as response:
                return response.status, await response.text()


def toml_value(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value) if isinstance(value, int) else f'"{value}"'


def read_key(path: Path) -> str:
    return path.read_text().strip()


def is_there(path: Path) -> bool:
    return path.exists()


def forget(path: Path) -> None:
    path.unlink(missing_ok=True)


def signer_config(tmp_path, db_url, socket: Path, key_file: Path, plugins: dict[str, dict] | None = None,
                  blocked: tuple[str, ...] = ("lightning",), seed: str = f'seed_mnemonic = "{SEED}"',
                  extra: str = "") -> Path:
    """The signer's config file; ``seed`` is its ``[secrets]`` line naming the seed, ``extra`` more TOML."""
    config = tmp_path / "signer.toml"
    lines = [f'[server]\ndata_dir = "{tmp_path / "signer"}"\nenvironment = "development"',
             f'[database]\nurl = "{db_url}"', f"[plugins]\nblocked = {json.dumps(list(blocked))}",
             f'[secrets]\n{seed}\njwt_secret = "{JWT}"',
             f'[signer]\nlisten = "unix://{socket}"\nkey_file = "{key_file}"']
    for name, block in (plugins or {}).items():
        lines.append(f"[plugin.{name}]\n" + "\n".join(f"{k} = {toml_value(v)}" for k, v in block.items()
                                                     if not isinstance(v, dict)))
        lines.extend(f"[plugin.{name}.{k}]\n" + "\n".join(f"{kk} = {toml_value(vv)}" for kk, vv in v.items())
                     for k, v in block.items() if isinstance(v, dict))
    lines.append(extra)
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def as_role(db_url: str, role: str) -> str:
    """The test database's URL with ``role`` as its user (trust authentication on the test server)."""
    parts = urlsplit(db_url)
    return urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rpartition('@')[2]}"))


def run_role(db_url: str) -> str:
    """The signer tests' own role: the run's (its database's name), dropped with its database."""
    return f"{urlsplit(db_url).path.lstrip('/')}_signer"


async def least_role_env(db_url: str) -> dict[str, str]:
    """On PostgreSQL the signer connects as its own role (``orbchain custody signer-role``, the one list, no ledger
    write also when it sweeps): every signer test proves the grant is enough for what it signs."""
    if not db_url.startswith("postgresql"):
        return {}
    owner = Database(db_url)
    await owner.connect()
    try:
        await grant_signer_role(owner, run_role(db_url))
    finally:
        await owner.disconnect()
    return {"ORBCHAIN_SIGNER__DATABASE_URL": as_role(db_url, run_role(db_url))}


async def connected_roles(db_url: str) -> set[str]:
    owner = Database(db_url)
    await owner.connect()
    try:
        return {r["usename"] for r in await owner.fetch_all("SELECT DISTINCT usename FROM pg_stat_activity"
                                                            " WHERE usename IS NOT NULL")}
    finally:
        await owner.disconnect()


async def start_signer(tmp_path, db_url, socket: Path, key_file: Path, plugins: dict[str, dict] | None = None,
                       blocked: tuple[str, ...] = ("lightning",), seed: str = f'seed_mnemonic = "{SEED}"',
                       env: dict[str, str] | None = None, extra: str = "") -> Signer:
    """``orbchain signer`` on the test's database (as its own role on PostgreSQL), listening on ``socket`` once
    this returns."""
    forget(socket)  # a stopped signer's socket file: wait for the new one
    config = signer_config(tmp_path, db_url, socket, key_file, plugins, blocked, seed, extra)
    role_env = await least_role_env(db_url)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "orbchain", "--config", str(config), "signer",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, **role_env, **(env or {})})
    while not is_there(socket):  # listening; the subprocess's own exit ends the wait
        if process.returncode is not None:
            pytest.fail(f"the signer exited: {(await process.stdout.read()).decode()}")  # type: ignore[union-attr]
        await asyncio.sleep(0.05)
    if role_env:
        assert run_role(db_url) in await connected_roles(db_url)  # its pool is open, as the role
    return Signer(process, socket, bytes.fromhex(read_key(key_file)))


async def stop_signer(signer: Signer) -> None:
    if signer.process.returncode is None:
        signer.process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(signer.process.wait(), 30)
        said = (await signer.process.stdout.read()).decode()  # type: ignore[union-attr]
        assert "permission denied" not in said, said[-3000:]  # its role lacks a grant for what it did


def channel(tmp_path) -> tuple[Path, Path, Path]:
    """A short folder for the socket (a Unix socket path must stay under ~100 bytes), the socket, the key file."""
    short = Path(tempfile.mkdtemp(prefix="osg", dir="/tmp"))
    key_file = tmp_path / "signer_key"
    key_file.write_text(new_channel_key() + "\n")
    return short, short / "signer.sock", key_file


async def seedless_serve(tmp_path, make_config, make_client, socket: Path, key_file: Path):
    """The serve side (client, merchant, devnet): no seed, deposit addresses from xpubs, ``[signer] url``."""
    xpubs = tmp_path / "xpubs.json"
    store = SeedKeyStore.from_secret(SEED, "")
    xpubs.write_text(json.dumps(export_account_xpubs(store, "mainnet", range(0, 4), [get_family("btc")])))
    return await payout_env(
        make_client, make_config, plugins={"blocked": ["lightning"]},  # Lightning through the signer: test_signer_lightning.py
        secrets={"account_xpubs_file": str(xpubs), "jwt_secret": JWT},
        signer={"url": f"unix://{socket}", "key_file": str(key_file)})


@pytest.fixture
async def signer(tmp_path, db_url, make_config, make_client):
    """The serve side (client, merchant, devnet) with its signer subprocess running on the same database."""
    short, socket, key_file = channel(tmp_path)
    client, merchant, devnet = await seedless_serve(tmp_path, make_config, make_client, socket, key_file)
    metrics = f'[metrics]\ntoken = "{METRICS_TOKEN}"'  # the signer's own /metrics (its holds, its jobs)
    process = await start_signer(tmp_path, db_url, socket, key_file, extra=metrics)
    process.start_again = lambda: start_signer(tmp_path, db_url, socket, key_file, extra=metrics)
    try:
        yield client, merchant, devnet, process
    finally:
        await stop_signer(process)
        shutil.rmtree(short, ignore_errors=True)


async def test_a_seedless_serve_pays_through_the_signer_which_holds_a_forged_row(signer):
    client, merchant, devnet, process = signer
    gw = client.app[GATEWAY]
    assert gw.secrets.seed_material == ""  # this "serve" holds no seed
    await fund(client, merchant, devnet)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    assert await work(gw) == 1
    signed = await payout_row(gw, track_id)
    assert signed["stage"] == "broadcast" and signed["tx_hash"] and signed["authorized_at"], dict(signed)
    await devnet.mine(1)
    await work(gw)
    assert (await payout_row(gw, track_id))["status"] == "Confirmed"
    assert await balance(client, merchant) == {"BTC": "0.0059"}

    # A row written by SQL with no reservation behind it: the signer reads the ledger itself and holds it.
    await gw.db.execute(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
        " next_attempt_at, created_at, updated_at) VALUES ('po_forged', 'forged', :m, 'BTC', 'devnet', :d, :a,"
        " 'Confirming', 'queued', :now, :now, :now)",
        {"m": merchant.merchant_id, "d": BTC_DEST, "a": gw.db.amount_param(100_000), "now": gw.now()})
    assert await work(gw) == 1
    forged = await payout_row(gw, "forged")
    assert (forged["stage"], forged["policy_hold"], forged["tx_hash"]) == ("policy_held", "no_reservation", None)
    # The hold was judged in the signer: its own /metrics counts it (behind the metrics token), no web host's.
    assert (await process.get("/metrics", {}))[0] == 401
    assert (await process.get("/metrics", {"Authorization": "Bearer " + "x" * 32}))[0] == 401
    status, text = await process.get("/metrics", {"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert status == 200 and 'orbchain_payouts_held_by_policy_total{coin="BTC",reason="no_reservation"} 1.0' \
        in text, text[-2000:]

    # A broadcast payout dropped from the node: closing it is a new signature, so the signer is asked too.
    dropped = (await create(client, merchant, "0.002"))[1]["data"]["track_id"]
    await work(gw)
    await devnet.chain.reorg(1, drop=[(await payout_row(gw, dropped))["tx_hash"]])
    await work(gw)
    assert (await payout_row(gw, dropped))["missing_since"] is not None

    # The signer gone, a payout waits (transient, retried) instead of being signed here, and the dropped one
    # is not closed (nor re-credited) without it.
    process.process.send_signal(signal.SIGTERM)
    await asyncio.wait_for(process.process.wait(), 30)
    waiting = (await create(client, merchant, "0.001"))[1]["data"]["track_id"]
    await work(gw, devnet.adapter.drop_after_seconds)
    row = await payout_row(gw, waiting)
    assert row["stage"] == "queued" and row["tx_hash"] is None and "signer" in row["last_error"], dict(row)
    row = await payout_row(gw, dropped)
    assert row["status"] == "Confirming" and "signer" in row["last_error"], dict(row)
    assert await balance(client, merchant) == {"BTC": "0.0029"}

    assert process.start_again is not None
    again = await process.start_again()
    try:
        await work(gw, 600)  # past the backoff of both
        assert (await payout_row(gw, waiting))["stage"] == "broadcast"
        row = await payout_row(gw, dropped)
        assert (row["status"], row["failure_reason"]) == ("Failed", "dropped")
        assert await balance(client, merchant) == {"BTC": "0.0049"}
    finally:
        await stop_signer(again)


async def test_the_signer_refuses_requests_without_a_fresh_credential(signer):
    client, merchant, devnet, process = signer
    gw = client.app[GATEWAY]
    await fund(client, merchant, devnet)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    payout_id = (await payout_row(gw, track_id))["id"]
    body = json.dumps({"payout_id": payout_id}).encode()

    assert (await process.post(body, {}))[0] == 401
    assert (await process.post(body, signed_headers(os.urandom(32), body, int(time.time()))))[0] == 401
    assert (await process.post(body, signed_headers(process.key, body, int(time.time()) - 600)))[0] == 401
    fresh = signed_headers(process.key, body, int(time.time()))
    status, answer = await process.post(body, fresh)
    assert status == 200 and answer["outcome"] == "not_queued"  # authentic; nobody has claimed it
    status, answer = await process.post(body, fresh)
    assert (status, answer["message"]) == (401, "replayed request")
    other = json.dumps({"payout_id": "po_other"}).encode()
    assert (await process.post(other, fresh))[0] == 401  # the credential covers the body
    row = await payout_row(gw, track_id)
    assert row["stage"] == "queued" and row["tx_hash"] is None  # nothing was signed on those requests


async def test_the_signer_starts_from_an_encrypted_seed_and_refuses_a_wrong_passphrase(
        tmp_path, db_url, make_config, make_client):
    """The seed encrypted at rest: the passphrase from the environment opens it and the signer signs; a wrong
    one stops the start with one clear line (no traceback) and nothing listening."""
    short, socket, key_file = channel(tmp_path)
    seed_file = tmp_path / "seed"
    seed_file.write_text(encrypt_seed(SEED, "correct horse battery staple") + "\n")
    seed_line = f'seed_file = "{seed_file}"'
    client, merchant, devnet = await seedless_serve(tmp_path, make_config, make_client, socket, key_file)
    config = signer_config(tmp_path, db_url, socket, key_file, seed=seed_line)
    refused = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "orbchain", "--config", str(config), "signer",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, PASSPHRASE_VARIABLE: "not the passphrase"})
    said = (await asyncio.wait_for(refused.communicate(), 60))[0].decode()
    assert refused.returncode == 2 and "wrong passphrase" in said and "Traceback" not in said, said
    assert not is_there(socket)
    process = await start_signer(tmp_path, db_url, socket, key_file, seed=seed_line,
                                 env={PASSPHRASE_VARIABLE: "correct horse battery staple"})
    try:
        gw = client.app[GATEWAY]
        await fund(client, merchant, devnet)
        track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
        assert await work(gw) == 1
        assert (await payout_row(gw, track_id))["stage"] == "broadcast"
    finally:
        await stop_signer(process)
        shutil.rmtree(short, ignore_errors=True)


async def test_a_seedless_serve_pays_litecoin_through_the_signer(tmp_path, db_url, make_config, make_client,
                                                                  litecoind_node, faucet):  # noqa: F811
    """The bitcoin family: outputs selected and signed in the signer (change on the platform's account), the
    seedless gateway broadcasts and confirms; the node accepts the signatures."""
    short, socket, key_file = channel(tmp_path)
    block = litecoind_node.plugin_block()
    store = SeedKeyStore.from_secret(SEED, "")
    xpubs = tmp_path / "xpubs.json"
    ltc = get_family("ltc", "regtest")
    xpubs.write_text(json.dumps(export_account_xpubs(store, "regtest", range(0, 4), [ltc])))
    config = make_config(scheduler={"enabled": False}, plugin={"bitcoin": {"LTC": block}},
                         secrets={"account_xpubs_file": str(xpubs), "jwt_secret": JWT},
                         signer={"url": f"unix://{socket}", "key_file": str(key_file)})
    try:
        client = await make_client(config, get_plugin_manager(blocked=["devnet", "lightning"]))
        shop = Shop(client, await signup(client, "ltc-signer@example.com"), "", faucet)
        await shop.scan()  # a fresh database starts at the tip
        assert shop.gateway.secrets.seed_material == ""
        process = await start_signer(tmp_path, db_url, socket, key_file, {"bitcoin.LTC": block},
                                     blocked=("lightning", "devnet"))
        await shop.funded("1")
        payout = await create_payout(shop, "0.3", external_address(0))
        await ltc_work(shop)
        row = await ltc_payout_row(shop, payout["track_id"])
        assert row["stage"] == "broadcast", row["last_error"]
        assert row["tx_hash"] in litecoind_node.call("getrawmempool")  # the node accepted the signer's signatures
        shop.faucet.mine(1)
        await ltc_work(shop, 10)
        assert (await ltc_payout_row(shop, payout["track_id"]))["status"] == "Confirmed"
        assert await shop.balance() == {"LTC": "0.69"}
    finally:
        if "process" in locals():
            await stop_signer(process)
        shutil.rmtree(short, ignore_errors=True)
