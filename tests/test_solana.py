"""The solana plugin's deposit side: settings, blocks by slot, skipped slots, forks, failed transactions.

Chain state comes from the LiteSVM-backed node (``tests/solana_node.py``):
whether a transaction failed, and what it moved, is the runtime's verdict.
"""

from __future__ import annotations

from typing import AsyncIterator

import pytest
import pytest_asyncio
from solders.keypair import Keypair

from orbchain.chains.solana.blocks import transfers
from orbchain.chains.solana.rpc import SolanaRpc
from orbchain.chains.solana.settings import read_settings
from orbchain.core.types.chains import ChainUnavailable
from orbchain.core.infra.config import ConfigError

from .solana_node import SolanaNode, open_solana_shop, running_node

@pytest_asyncio.fixture
async def solana_node() -> AsyncIterator[SolanaNode]:
    async with running_node() as node:
        yield node



# -- settings ---------------------------------------------------------------------------------


def test_no_block_keeps_the_plugin_coin_only():
    assert read_settings({}) is None


@pytest.mark.parametrize("block, key", [
    ({"rpc_url": "ftp://x"}, "plugin.solana.rpc_url"),
    ({"rpc_url": "http://x", "commitment": "processed"}, "plugin.solana.commitment"),
    ({"rpc_url": "http://x", "headers": {"Authorization": 5}}, "plugin.solana.headers"),
    ({"rpc_url": "http://x", "sweep": "yes"}, "plugin.solana.sweep"),
    ({"rpc_url": "http://x", "nonsense": 1}, "plugin.solana.nonsense"),
    ({"rpc_url": "http://x", "priority_fee_percentile": 101}, "plugin.solana.priority_fee_percentile"),
    ({"rpc_url": "http://x", "priority_fee_percentile": 0}, "plugin.solana.priority_fee_percentile"),
    ({"rpc_url": "http://x", "fee_ceiling_micro_lamports_per_cu": 0}, "plugin.solana.fee_ceiling_micro_lamports_per_cu"),
])
def test_bad_settings_name_the_key(block, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        read_settings(block)


def test_settings_defaults():
    settings = read_settings({"rpc_url": "https://rpc.example", "headers": {"x-api-key": "k"}})
    assert settings is not None
    assert (settings.commitment, settings.payout_confirmations, dict(settings.headers)) == (
        "confirmed", 1, {"x-api-key": "k"})
    assert (settings.priority_fee.percentile, settings.priority_fee.ceiling) == (75, 10_000_000)


# -- deposits ---------------------------------------------------------------------------------


def test_balance_changes_become_transfers():
    """Positive deltas of successful transactions only; v0 lookup-table accounts follow the static keys."""
    ok = {"transaction": {"signatures": ["sig1"], "message": {"accountKeys": ["payer", "shop"]}},
          "meta": {"err": None, "preBalances": [10, 0], "postBalances": [3, 5],
                   "loadedAddresses": {"writable": ["table"], "readonly": []}}}
    ok["meta"]["preBalances"].append(1)
    ok["meta"]["postBalances"].append(3)
    failed = {"transaction": {"signatures": ["sig2"], "message": {"accountKeys": ["payer", "shop"]}},
              "meta": {"err": {"InstructionError": [0, "Custom"]}, "preBalances": [10, 0], "postBalances": [5, 0]}}
    found = transfers({"transactions": [ok, failed]}, "SOL")
    assert [(t.tx_hash, t.output_index, t.address, t.amount) for t in found] == [
        ("sig1", 1, "shop", 5), ("sig1", 2, "table", 2)]


async def test_failed_transaction_is_never_credited(solana_node, make_config, make_client):
    """A transfer the runtime fails (too small to open the account) lands with its fee only: not a deposit."""
    shop = await open_solana_shop(solana_node, make_config, make_client)
    payment = await shop.payment()
    failed = solana_node.pay(payment["address"], 1000, skip_preflight=True)
    await shop.mine(1)
    meta = solana_node.handle("getTransaction", [failed, {"commitment": "confirmed"}])["meta"]
    assert meta["err"] == {"InsufficientFundsForRent": {"account_index": 1}}  # the runtime's verdict
    assert (await shop.view(payment["track_id"]))["transactions"] == []

    good = solana_node.pay(payment["address"], shop.units("1"))
    await shop.mine(32)
    view = await shop.view(payment["track_id"])
    assert view["status"] == "Paid" and [t["tx_hash"] for t in view["transactions"]] == [good]
    assert await shop.ledger_ok()


async def test_confirmations_count_slots_across_skipped_ones(solana_node, make_config, make_client):
    shop = await open_solana_shop(solana_node, make_config, make_client)
    payment = await shop.payment()
    tx = solana_node.pay(payment["address"], shop.units("1"))
    await shop.mine(1)
    deposit_slot = solana_node.tip.slot
    solana_node.skip(3)
    report = await shop.mine(1)
    assert report.blocks == 4 and report.disconnected == 0  # three skipped slots and a block
    assert solana_node.tip.slot == deposit_slot + 4
    (seen,) = (await shop.view(payment["track_id"]))["transactions"]
    assert (seen["tx_hash"], seen["confirmations"]) == (tx, 5)
    await shop.mine(27)
    assert (await shop.view(payment["track_id"]))["status"] == "Paid"


async def test_fork_across_skipped_slots_takes_the_deposit_back(solana_node, make_config, make_client):
    shop = await open_solana_shop(solana_node, make_config, make_client)
    payment = await shop.payment()
    tx = solana_node.pay(payment["address"], shop.units("1"))
    await shop.mine(1)
    solana_node.skip(2)
    await shop.mine(2)
    assert (await shop.view(payment["track_id"]))["transactions"][0]["confirmations"] == 5

    report = await shop.reorg(3)  # the deposit's block and the two after the gap: a new branch fills the gap
    assert report.disconnected == 5, report  # three blocks and two skipped slots left the best chain
    (seen,) = (await shop.view(payment["track_id"]))["transactions"]
    assert (seen["tx_hash"], seen["confirmations"], seen["status"]) == (tx, 0, "PENDING")
    assert await shop.balance() == 0 and await shop.ledger_ok()


async def test_finalized_commitment_sees_blocks_only_once_final(solana_node, make_config, make_client):
    shop = await open_solana_shop(solana_node, make_config, make_client, commitment="finalized", start_height=None)
    payment = await shop.payment()
    solana_node.pay(payment["address"], shop.units("1"))
    await shop.mine(1)
    assert (await shop.view(payment["track_id"]))["transactions"] == []  # confirmed, not final yet
    await shop.mine(32)
    (seen,) = (await shop.view(payment["track_id"]))["transactions"]
    assert seen["confirmations"] == 1


async def test_auth_header_is_sent_and_required():
    async with running_node(required_headers={"x-api-key": "s3cret"}) as node:
        without, with_key = SolanaRpc(node.url), SolanaRpc(node.url, headers={"x-api-key": "s3cret"})
        with pytest.raises(ChainUnavailable, match="credentials"):
            await without.call("getSlot", {"commitment": "confirmed"})
        assert await with_key.call("getSlot", {"commitment": "confirmed"}) == node.tip.slot
        assert "s3cret" not in repr(with_key)
        await without.close()
        await with_key.close()


def test_payer_is_independent_of_the_gateway():
    """The node's own payments are built by solders, not by chains/solana/wire.py."""
    node = SolanaNode()
    target = str(Keypair().pubkey())
    node.pay(target, 10**9)
    node.produce(1)
    assert node.balance(target) == 10**9


def test_hot_wallet_command_prints_the_address_to_fund(make_config, capsys):
    from orbchain.chains.solana.cli import cmd_hot_wallet
    from orbchain.chains.solana.keys import hot_wallet_address
    from orbchain.core.startup import build_gateway
    from orbchain.core.contract.plugins import get_plugin_manager

    config = make_config(plugin={"solana": {"rpc_url": "http://127.0.0.1:9", "timeout_seconds": 1}})
    gateway = build_gateway(config, get_plugin_manager(blocked=["devnet"]))
    assert cmd_hot_wallet(None, gateway) == 0
    out = capsys.readouterr().out
    assert hot_wallet_address(gateway) in out and "node unavailable" in out


def test_registration_follows_the_config(make_config):
    from orbchain.core.startup import build_gateway
    from orbchain.core.contract.plugins import get_plugin_manager

    coin_only = build_gateway(make_config(), get_plugin_manager())
    assert coin_only.chains.get("solana") is None
    assert coin_only.coins.require("SOL").chain == "solana"  # the devnet simulates it meanwhile

    config = make_config(plugin={"solana": {"rpc_url": "http://127.0.0.1:9", "sweep_seconds": 60}})
    gateway = build_gateway(config, get_plugin_manager(blocked=["devnet"]))
    adapter = gateway.chains.get("solana")
    assert adapter is not None and adapter.serves("SOL") and adapter.name == "solana"
    assert gateway.jobs.get("solana.sweep").seconds == 60
