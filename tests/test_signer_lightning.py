"""Lightning payouts sent by the signer, the one process holding the paying macaroon (issue 45 item 1).

The web side is a seedless serve with ``[signer] url`` whose Lightning backend holds only the receiving
macaroon (the LND stand-in refuses it on every paying call); the signer side is a second gateway on the same
database, holding the seed and the paying macaroon, answering the real signer app on a Unix socket inside this
test's event loop (no subprocess: the process wiring of ``orbchain signer`` is tests/test_signer_process.py's).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from orbchain.chains.lightning.receive import lightning_chain
from orbchain.chains.lightning.settings import read_settings
from orbchain.core.addresses.store import export_account_xpubs
from orbchain.core.custody.signer import signer_app
from orbchain.core.infra.config import load_config
from orbchain.core.keys import SeedKeyStore
from orbchain.core.keys.secrets import load_secrets
from orbchain.core.keys.signer_channel import RequestVerifier, new_channel_key, read_channel_key, signed_headers
from orbchain.core.payouts import worker as payout_worker
from orbchain.core.startup import build_gateway
from tests.families import get_family

from .lightning_support import balance, lightning_shop
from .lnd_standin import LndStandIn
from .support import api
from .test_lightning import funded, lnd, pay_out  # noqa: F401 - lnd: the LND stand-in's fixture
from .test_signer_process import least_role_env

SEED = "000102030405060708090a0b0c0d0e0f"
JWT = "j" * 40  # both sides verify the payout binding digest under its derived key
CAP = "0.0002"  # the signer's max_per_payout for BTC_LN


def lnd_block(node: LndStandIn, macaroon: str) -> dict:
    """``[plugin.lightning]`` on the stand-in with one macaroon: ``macaroon_path`` (pays) or the receiving one."""
    return {"backend": "lnd", "network": "regtest", "lnd_url": node.url, "tls_cert_path": node.cert_path,
            "subscribe": False, "pay_timeout_seconds": 2,
            macaroon: node.macaroon_path if macaroon == "macaroon_path" else node.invoice_macaroon_path}


def sends(node: LndStandIn, refused: bool = False) -> list[dict]:
    """SendPaymentV2 requests the stand-in took (or, ``refused``, turned down for want of permission)."""
    return [b for _, p, b in node.requests if p == "/v2/router/send" and ("refused" in b) == refused]


class SignerSide:
    """The signer app listening on its socket; ``stop`` and ``start`` it like a signer process going away."""

    def __init__(self, runner: web.AppRunner, socket: Path) -> None:
        self.runner, self.socket = runner, socket

    async def start(self) -> None:
        await self.runner.setup()
        await web.UnixSite(self.runner, str(self.socket)).start()

    async def stop(self) -> None:
        await self.runner.cleanup()
        self.socket.unlink(missing_ok=True)


@pytest.fixture
async def sent_by_signer(tmp_path, db_url, make_config, make_client, lnd, caplog):  # noqa: F811 - the imported fixture
    """(shop, signer gateway, signer side, channel key): the seedless serve and its in-loop signer."""
    short = Path(tempfile.mkdtemp(prefix="osl", dir="/tmp"))  # a Unix socket path stays under ~100 bytes
    socket, key_file = short / "signer.sock", tmp_path / "signer_key"
    key_file.write_text(new_channel_key() + "\n")
    xpubs = tmp_path / "xpubs.json"
    store = SeedKeyStore.from_secret(SEED, "")
    xpubs.write_text(json.dumps(export_account_xpubs(store, "mainnet", range(0, 4), [get_family("btc")])))
    shop = await lightning_shop(
        make_config, make_client, plugin={"lightning": lnd_block(lnd, "invoice_macaroon_path")},
        secrets={"account_xpubs_file": str(xpubs), "jwt_secret": JWT},
        signer={"url": f"unix://{socket}", "key_file": str(key_file)})
    # On PostgreSQL the signer connects as its least-privilege role, as `orbchain signer` does in production.
    signer_url = (await least_role_env(db_url)).get("ORBCHAIN_SIGNER__DATABASE_URL", db_url)
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(tmp_path / "signer"), "environment": "development"}, database={"url": signer_url},
        scheduler={"enabled": False}, secrets={"seed_mnemonic": SEED, "jwt_secret": JWT},
        signer={"key_file": str(key_file)}, signing={"max_per_payout": [f"BTC_LN={CAP}"]},
        plugin={"lightning": lnd_block(lnd, "macaroon_path")})
    signer = build_gateway(config)
    signer.secrets = load_secrets(config)
    await signer.db.connect()  # the serve side migrated the database
    side = SignerSide(web.AppRunner(signer_app(signer, RequestVerifier(read_channel_key(str(key_file)), 30)),
                                    access_log=None), socket)
    await side.start()
    try:
        yield shop, signer, side, read_channel_key(str(key_file))
    finally:
        await side.stop()
        await signer.close_chains()
        await signer.db.disconnect()
        shutil.rmtree(short, ignore_errors=True)
    assert "permission denied" not in caplog.text  # the signer's role lacked a grant for what it did


async def payout_row(shop, track_id: str):
    return await shop.gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": track_id})


async def test_a_lightning_payout_is_sent_by_the_signer_and_answers_confirmed(sent_by_signer, lnd):  # noqa: F811 - the imported fixture
    shop, signer, _, _ = sent_by_signer
    gw = shop.gateway
    assert gw.secrets.seed_material == "" and read_settings(gw.config).macaroon_path is None  # no paying macaroon
    assert lightning_chain(gw).backend.payment_seal_key() != lightning_chain(signer).backend.payment_seal_key()
    before = Decimal(await funded(shop, lnd))  # received through the web's receiving macaroon

    bolt11, payment_hash = lnd.issue_foreign_invoice(10_000_000)
    status, body = await pay_out(shop, bolt11)
    assert status == 200 and body["data"]["status"] == "Confirmed", body  # SPEC 3.3: answered once paid
    preimage = body["data"]["lightning"]["preimage"]
    assert hashlib.sha256(bytes.fromhex(preimage)).hexdigest() == payment_hash
    assert len(sends(lnd)) == 1 and not sends(lnd, refused=True)  # paid once, by the macaroon's holder
    assert Decimal(await balance(shop)) == before - Decimal("0.0001")

    # Over the signer's own cap: held by its policy in the signer, never paid; the request answers as today.
    over, over_hash = lnd.issue_foreign_invoice(30_000_000)
    status, body = await pay_out(shop, over, amount="0.0003")
    assert status == 200 and body["data"]["status"] == "Confirming", body
    held = await payout_row(shop, body["data"]["track_id"])
    assert (held["stage"], held["policy_hold"], held["tx_hash"]) == ("policy_held", "over_payout_cap", None)
    assert over_hash not in lnd.payments and len(sends(lnd)) == 1

    # A row written straight into the database at stage signed, naming an invoice: the web cannot pay it (no
    # macaroon), and the signer, handed it, refuses to pay what it did not seal itself.
    forged, forged_hash = lnd.issue_foreign_invoice(10_000_000)
    raw = json.dumps({"bolt11": forged, "amount_msat": None, "claim": "po_forged"})
    await gw.db.execute(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage, tx_hash,"
        " raw_tx, next_attempt_at, created_at, updated_at) VALUES ('po_forged', 'forged', :m, 'BTC_LN',"
        " 'lightning', :d, :a, 'Confirming', 'signed', :h, :raw, 0, :now, :now)",
        {"m": shop.merchant.merchant_id, "d": forged, "a": gw.db.amount_param(10_000), "h": forged_hash,
         "raw": raw, "now": gw.now()})
    await payout_worker.process_payouts(gw)
    row = await payout_row(shop, "forged")
    assert (row["status"], row["failure_reason"]) == ("Failed", "unsealed_payment"), dict(row)
    assert forged_hash not in lnd.payments and len(sends(lnd)) == 1

    # A payment the node fails: the signer says so, the web process fails the payout and re-credits it (the
    # signer's role may write neither a payout's status nor the ledger), and the invoice's claim is released.
    lnd.fail_with = "FAILURE_REASON_NO_ROUTE"
    available = Decimal(await balance(shop))
    unroutable, unroutable_hash = lnd.issue_foreign_invoice(10_000_000)
    status, body = await pay_out(shop, unroutable)
    assert status == 200 and body["data"]["status"] == "Failed", body
    failed = await payout_row(shop, body["data"]["track_id"])
    assert failed["failure_reason"] == "no_route", dict(failed)
    assert Decimal(await balance(shop)) == available
    assert not await gw.db.fetch_val("SELECT count(*) FROM lightning_payout_claims WHERE payment_hash = :h",
                                     {"h": unroutable_hash})


async def test_the_signer_sends_nothing_for_a_client_without_the_credential(sent_by_signer, lnd):  # noqa: F811 - the imported fixture
    shop, _, side, key = sent_by_signer
    gw = shop.gateway
    # A payout row claimed by a rogue client (as a worker claims one) that asks the signer to send it.
    bolt11, payment_hash = lnd.issue_foreign_invoice(10_000_000)
    await gw.db.execute(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
        " claim_token, claimed_until, next_attempt_at, created_at, updated_at) VALUES ('po_rogue', 'rogue', :m,"
        " 'BTC_LN', 'lightning', :d, :a, 'Confirming', 'queued', 'rogue', :u, :u, :now, :now)",
        {"m": shop.merchant.merchant_id, "d": bolt11, "a": gw.db.amount_param(10_000), "u": gw.now() + 60,
         "now": gw.now()})
    request = json.dumps({"payout_id": "po_rogue", "step": "sign"}).encode()

    async def post(headers: dict[str, str], body: bytes = request) -> tuple[int, dict]:
        async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(side.socket))) as session:
            async with session.post("http://signer/v1/sign", data=body, headers=headers) as response:
                return response.status, await response.json()

    assert (await post({}))[0] == 401
    assert (await post(signed_headers(os.urandom(32), request, int(time.time()))))[0] == 401
    assert (await post(signed_headers(key, request, int(time.time()) - 600)))[0] == 401
    row = await payout_row(shop, "rogue")
    assert (row["stage"], row["policy_hold"]) == ("queued", None)  # nothing was judged, signed or paid
    # The credential is what the signer listens to; even then it judges the row itself (no reservation: held).
    status, answer = await post(signed_headers(key, request, int(time.time())))
    assert (status, answer["outcome"], answer["reason"]) == (200, "held", "no_reservation"), answer
    assert (await payout_row(shop, "rogue"))["policy_hold"] == "no_reservation"
    # Nor does it pay a row it did not sign: ``pay`` takes only a signed row's stored, sealed invoice.
    pay = json.dumps({"payout_id": "po_rogue", "step": "pay"}).encode()
    assert (await post(signed_headers(key, pay, int(time.time())), pay))[1]["outcome"] == "not_queued"
    assert not sends(lnd) and payment_hash not in lnd.payments


async def test_while_the_signer_is_away_a_lightning_payout_waits_then_is_paid_once(sent_by_signer, lnd):  # noqa: F811 - the imported fixture
    shop, _, side, _ = sent_by_signer
    before = Decimal(await funded(shop, lnd))
    await side.stop()
    bolt11, payment_hash = lnd.issue_foreign_invoice(10_000_000)
    status, body = await pay_out(shop, bolt11)
    assert status == 200 and body["data"]["status"] == "Confirming", body  # reserved, not sent, not failed
    row = await payout_row(shop, body["data"]["track_id"])
    assert row["stage"] == "queued" and "signer" in row["last_error"], dict(row)
    assert not sends(lnd) and not sends(lnd, refused=True)  # the web host never tries to pay itself

    await side.start()
    await shop.gateway.db.execute("UPDATE payouts SET next_attempt_at = 0 WHERE id = :id", {"id": row["id"]})
    assert await payout_worker.process_payouts(shop.gateway) == 1
    got = (await api(shop.client, "GET", f"/v1/payout/{body['data']['track_id']}", shop.merchant.payout_key))[1]
    assert got["data"]["status"] == "Confirmed" and got["data"]["lightning"]["preimage"], got
    assert len(sends(lnd)) == 1 and payment_hash in lnd.payments
    assert Decimal(await balance(shop)) == before - Decimal("0.0001")
