"""``orbchain tron hot-wallet``: the address to fund, and what the stand-in node says it holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orbchain.chains.tron.address import address_bytes
from orbchain.chains.tron.cli import hot_wallet_report
from orbchain.chains.tron.keys import hot_wallet_address
from orbchain.core.cli import commands as cli

from .tron_node import PARAMETERS
from .tron_support import open_tron_shop, tron_node  # noqa: F401 - fixtures

T_ADDRESS = re.compile(r": (T[1-9A-HJ-NP-Za-km-z]{33})$", re.M)


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tron: str = "") -> Path:
    for name in ("ORBCHAIN_CONFIG", "ORBCHAIN_DATABASE_URL", "ORBCHAIN_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "orbchain.toml"
    path.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "development"\n\n'
                    f'[database]\nurl = "sqlite+aiosqlite:///{tmp_path / "var" / "orbchain.db"}"\n\n{tron}')
    return path


def _run(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(["--config", str(path), "tron", "hot-wallet"]) == 0
    return capsys.readouterr().out


def test_without_a_node_the_command_prints_the_address_only(tmp_path, monkeypatch, capsys):
    path = _config(tmp_path, monkeypatch)
    out = _run(path, capsys)
    (address,) = T_ADDRESS.findall(out)
    assert address_bytes(address)[0] == 0x41  # a valid, checksummed mainnet T address
    assert "m/44'/195'/0'/0/0, Tron mainnet" in out and "no node configured" in out
    assert T_ADDRESS.findall(_run(path, capsys)) == [address]  # the same seed, the same address


def test_testnet_keys_use_coin_type_1_and_an_unreachable_node_is_a_status_line(tmp_path, monkeypatch, capsys):
    tron = '[plugin.tron]\nurl = "http://127.0.0.1:9"\nnetwork = "testnet"\ntimeout_seconds = 1\n'
    out = _run(_config(tmp_path, monkeypatch, tron), capsys)
    assert "m/44'/1'/0'/0/0, Tron testnet" in out and "node unavailable (ChainUnavailable)" in out
    assert len(T_ADDRESS.findall(out)) == 1


async def test_the_report_shows_what_the_node_holds_for_the_hot_wallet(tron_node, make_config, make_client):  # noqa: F811
    shop = await open_tron_shop(tron_node, make_config, make_client)
    hot = hot_wallet_address(shop.gateway)

    lines = await hot_wallet_report(shop.gateway, shop.adapter)
    assert lines[0].endswith(f": {hot}")
    assert "  not activated yet: send it TRX first (that creates the account)" in lines
    assert "  TRX 0 (0 sun)" in lines

    shop.node.pay_trx(hot, 12_345_678)
    shop.node.pay_token(shop.online.usdt, hot, 7_500_000)
    shop.node.mine(1)
    lines = await hot_wallet_report(shop.gateway, shop.adapter)
    assert not any("not activated" in line for line in lines)
    assert "  TRX 12.345678 (12345678 sun)" in lines
    free = PARAMETERS["getFreeNetLimit"]
    assert f"  bandwidth left: {free} free + 0 staked bytes; staked energy left: 0" in lines
    assert f"  USDT_TRC20 7.5 (contract {shop.online.usdt})" in lines
