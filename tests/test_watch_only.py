"""Watch-only operation: a web process with account xpubs and no seed (docs/keys.md)."""

from __future__ import annotations

import json

from orbchain.core.addresses.store import keystore
from orbchain.cli import main
from orbchain.web.keys import GATEWAY
from tests.families import get_family

from .support import api, signup

SEED = "000102030405060708090a0b0c0d0e0f"


def _write_config(path, db_url, data_dir, **secrets):
    lines = ["[server]", f'data_dir = "{data_dir}"', "[database]", f'url = "{db_url}"', "[secrets]"]
    lines += [f'{key} = "{value}"' for key, value in secrets.items()]
    path.write_text("\n".join(lines) + "\n")


async def test_exported_xpubs_derive_the_same_deposit_addresses(tmp_path, db_url, make_config, make_client, capsys):
    signer_cfg = tmp_path / "signer.toml"
    _write_config(signer_cfg, db_url, tmp_path / "signer", seed_mnemonic=SEED)
    assert main(["--config", str(signer_cfg), "keys", "export-xpubs", "--accounts", "1-3"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert set(exported["mainnet"]) == {"btc", "ltc", "doge", "evm", "tron"}
    assert exported["mainnet"]["btc"]["1"].startswith("zpub")  # BIP-84 version bytes
    assert exported["mainnet"]["evm"]["1"].startswith("xpub")
    xpubs = tmp_path / "xpubs.json"
    xpubs.write_text(json.dumps(exported))

    signer = await make_client(make_config(secrets={"seed_mnemonic": SEED}, scheduler={"enabled": False}))
    watcher = await make_client(make_config(secrets={"account_xpubs_file": str(xpubs)}, scheduler={"enabled": False},
                                            server={"data_dir": str(tmp_path / "watch")}))
    signer_gw, watcher_gw = signer.app[GATEWAY], watcher.app[GATEWAY]
    assert watcher_gw.secrets.seed_material == ""
    for family in ("btc", "ltc", "doge", "evm", "tron"):
        fam = get_family(family)
        for index in (0, 7, 1000):
            assert fam.derive(keystore(watcher_gw), 1, index).address == fam.derive(keystore(signer_gw), 1, index).address

    # The watch-only process takes payments for merchants whose xpubs it has.
    merchant = await signup(watcher)
    status, body = await api(watcher, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01"})
    assert status == 200, body
    account = await watcher_gw.db.fetch_val("SELECT key_account FROM merchants WHERE id = :m", {"m": merchant.merchant_id})
    assert body["data"]["address"] == get_family("btc").derive(keystore(signer_gw), int(account), 0).address
    # Solana (ed25519, hardened only) cannot be watch-only: a clear 503, not a 500.
    status, body = await api(watcher, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "SOL", "amount": "1"})
    assert status == 503 and "export-xpubs" in body["message"]


async def test_a_merchant_beyond_the_exported_accounts_is_refused_clearly(tmp_path, make_config, make_client):
    xpubs = tmp_path / "xpubs.json"
    xpubs.write_text(json.dumps({"mainnet": {"btc": {}}}))
    client = await make_client(make_config(secrets={"account_xpubs_file": str(xpubs)}, scheduler={"enabled": False}))
    merchant = await signup(client)
    status, body = await api(client, "POST", "/v1/payment/static-address", merchant.merchant_key, json={"currency": "BTC"})
    assert status == 503 and body["error"]["type"] == "not_configured"


def test_export_needs_the_seed(tmp_path, db_url, capsys):
    cfg = tmp_path / "web.toml"
    _write_config(cfg, db_url, tmp_path / "web", account_xpubs_file=str(tmp_path / "x.json"))
    assert main(["--config", str(cfg), "keys", "export-xpubs", "--accounts", "1-2"]) == 2
    assert "needs the seed" in capsys.readouterr().err
