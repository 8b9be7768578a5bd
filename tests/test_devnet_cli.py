"""``orbchain devnet ...`` against a config file on the test's database (both databases).

The CLI runs ``asyncio.run`` itself, so each call runs in a worker thread
while the test's own gateway (standing in for the server) stays connected.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from orbchain.api import BroadcastError, ChainUnavailable, PayoutOrder
from orbchain.chains.devnet import devnet_chain
from orbchain.cli import main

BTC_ADDRESS = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
EVM_ADDRESS = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"


def _write_config(tmp_path: Path, db_url: str, environment: str = "development", extra: str = "") -> Path:
    path = tmp_path / "orbchain.toml"
    path.write_text(
        f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "{environment}"\n'
        f'[database]\nurl = "{db_url}"\n{extra}',
        encoding="utf-8",
    )
    return path


@pytest.fixture
def config_path(tmp_path, db_url) -> Path:
    return _write_config(tmp_path, db_url)


async def devnet(config_path: Path, *argv: str) -> int:
    return await asyncio.to_thread(main, ["--config", str(config_path), "devnet", *argv])


async def test_pay_puts_a_transfer_in_the_mempool(gateway, config_path, capsys):
    assert await devnet(config_path, "pay", "--coin", "BTC", BTC_ADDRESS, "0.5") == 0
    tx = capsys.readouterr().out.strip()
    row = await gateway.db.fetch_one("SELECT coin, address, amount, status, block_height FROM devnet_txs"
                                     " WHERE tx_hash = :tx", {"tx": tx})
    assert row["coin"] == "BTC" and row["address"] == BTC_ADDRESS and row["status"] == "mempool"
    assert gateway.db.to_int(row["amount"]) == 50_000_000 and row["block_height"] is None


async def test_pay_converts_18_decimals_exactly(gateway, config_path, capsys):
    assert await devnet(config_path, "pay", "--coin", "eth", EVM_ADDRESS.lower(), "1.000000000000000001") == 0
    tx = capsys.readouterr().out.strip()
    (transfer,) = await devnet_chain(gateway).mempool()
    assert transfer.tx_hash == tx and transfer.amount == 10**18 + 1 and transfer.address == EVM_ADDRESS


async def test_mine_status_and_reorg(gateway, config_path, capsys):
    chain = devnet_chain(gateway)
    await devnet(config_path, "pay", "--coin", "BTC", BTC_ADDRESS, "0.1")
    tx = capsys.readouterr().out.strip()
    assert await devnet(config_path, "mine", "-n", "3") == 0
    lines = capsys.readouterr().out.split()
    tip = await chain.tip()
    assert tip.height == 3 and lines[-2:] == ["3", tip.hash]
    assert await chain.tx_status(tx) == ("mined", 1)

    assert await devnet(config_path, "reorg", "--depth", "3", "--drop", tx) == 0
    assert "new tip 4" in capsys.readouterr().out
    assert (await chain.tip()).height == 4 and await chain.tx_status(tx) == ("dropped", None)

    await devnet(config_path, "pay", "--coin", "BTC", BTC_ADDRESS, "0.2")
    capsys.readouterr()
    assert await devnet(config_path, "status") == 0
    out = capsys.readouterr().out
    assert f"tip: 4 {(await chain.tip()).hash}" in out and "mempool: 1 transfer(s)" in out


async def test_outage_takes_the_node_away_from_the_gateway_until_off(gateway, config_path, capsys):
    adapter = gateway.chains.get("devnet")
    assert await devnet(config_path, "outage", "on") == 0
    assert await devnet(config_path, "outage", "on") == 0  # twice: still one outage
    assert "unreachable" in capsys.readouterr().out
    for read in (adapter.tip(), adapter.block(0), adapter.mempool()):
        with pytest.raises(ChainUnavailable, match="simulated outage"):
            await read
    signed = await adapter.sign_payout(PayoutOrder("p1", "BTC", BTC_ADDRESS, 1000))
    with pytest.raises(BroadcastError) as refused:
        await adapter.broadcast(signed)
    assert not refused.value.permanent  # retried later, not failed
    await devnet(config_path, "pay", "--coin", "BTC", BTC_ADDRESS, "0.1")  # the chain itself goes on
    assert await devnet(config_path, "outage", "off") == 0
    assert (await adapter.tip()).height >= 0 and len(await adapter.mempool()) == 1


async def test_commands_migrate_a_fresh_database(tmp_path, db_url, capsys):
    path = _write_config(tmp_path, db_url)
    assert await devnet(path, "status") == 0
    assert capsys.readouterr().out.startswith("tip: 0 ")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["pay", "--coin", "NOPE", BTC_ADDRESS, "1"], "unknown coin 'NOPE'"),
        (["pay", "--coin", "XMR", BTC_ADDRESS, "1"], "does not simulate XMR"),
        (["pay", "--coin", "BTC", EVM_ADDRESS, "1"], "not a valid BTC address"),
        (["pay", "--coin", "BTC", BTC_ADDRESS, "0"], "greater than 0"),
        (["pay", "--coin", "BTC", BTC_ADDRESS, "-1"], "greater than 0"),
        (["pay", "--coin", "BTC", BTC_ADDRESS, "abc"], "decimal"),
        (["pay", "--coin", "BTC", BTC_ADDRESS, "0.000000001"], "more than 8 decimal places"),
        (["mine", "-n", "0"], "between 1 and"),
        (["reorg", "--depth", "1"], "genesis"),
        (["reorg", "--depth", "0"], "at least 1"),
    ],
)
async def test_operator_mistakes_print_one_line_and_exit_2(gateway, config_path, capsys, argv, message):
    assert await devnet(config_path, *argv) == 2
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("orbchain devnet")]
    assert len(errors) == 1 and message in errors[0]
    assert captured.out == ""
    assert await devnet_chain(gateway).mempool() == ()


async def test_disabled_devnet_exits_2(tmp_path, db_url, capsys):
    path = _write_config(tmp_path, db_url, environment="production")
    assert await devnet(path, "status") == 2
    assert "not enabled" in capsys.readouterr().err


async def test_bad_config_block_exits_2(tmp_path, db_url, capsys):
    path = _write_config(tmp_path, db_url, extra="[plugin.devnet]\nblock_seconds = 0\n")
    assert await devnet(path, "status") == 2
    assert "plugin.devnet.block_seconds" in capsys.readouterr().err


async def test_another_process_pays_while_the_server_is_connected(gateway, config_path):
    """The real thing: ``python -m orbchain`` in its own process on the same database."""
    chain = devnet_chain(gateway)
    await chain.mine()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "orbchain", "--config", str(config_path), "devnet", "pay", "--coin", "USDT_ERC20",
        EVM_ADDRESS, "12.5", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    mining = asyncio.create_task(chain.mine())  # the server keeps writing meanwhile
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    await mining
    assert proc.returncode == 0, err.decode()
    tx = out.decode().strip()
    assert tx in {t.tx_hash for t in await chain.mempool()} | {
        t.tx_hash for t in (await chain.block((await chain.tip()).height)).transfers}
