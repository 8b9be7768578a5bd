"""The ``[plugin.evm.<chain>]`` config blocks, read and validated in one place.

One block per EVM chain the operator runs a node (or an RPC provider) for::

    [plugin.evm.ethereum]
    rpc_url = "http://127.0.0.1:8545"
    chain_id = 1
    ws_url = "ws://127.0.0.1:8546"         # optional: push through eth_subscribe newHeads
    payout_confirmations = 1      # optional
    node_max_tip_age_seconds = 600  # optional: a node whose newest block is older is refused (0 = off)
    contracts = { USDT_ERC20 = "0x..." }   # optional: replace pinned token contracts
    fee_ceiling_gwei = 100        # optional: payouts wait while the next base fee + tip is above it
    bump_after_blocks = 3         # optional: re-sign a payout or top-up priced out this many blocks (0 = never)
    sweep_max_fee_percent = 5     # optional: a native sweep waits while its gas bound is above 5 % of it
    credit_at_finalized = true    # optional: credit deposits only once their block is `finalized` too

A chain without a block registers nothing. Every error names the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ...api import (
    ConfigError, int_setting, lag_setting, node_urls_setting, quorum_setting, seconds_setting, tip_age_setting,
)
from ..contracts import read_contracts
from ..subscription import is_ws_url
from .coins import COINS

PLUGIN_NAME = "evm"
REQUIRED = ("rpc_url", "chain_id")
OPTIONAL = (
    "payout_confirmations", "scan_seconds", "start_height", "max_blocks_per_scan", "drop_after_seconds",
    "timeout_seconds", "ws_url", "quorum", "node_lag_blocks", "sweep", "sweep_seconds", "gas_margin_percent",
    "priority_fee_wei", "contracts", "node_max_tip_age_seconds", "fee_ceiling_gwei", "sweep_max_fee_percent",
    "credit_at_finalized", "bump_after_blocks",
)
# Deposit detection reads one block per call; a public RPC rarely allows more.
DEFAULT_SCAN_SECONDS = 5.0
DEFAULT_SWEEP_SECONDS = 300.0
DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_GAS_MARGIN_PERCENT = 20
# A hot-wallet transaction priced below the next block's fees this many blocks after it was signed is re-signed
# at its nonce (bumping.py): 36 s on Ethereum, long enough for a base fee that jumped one block to come back.
DEFAULT_BUMP_AFTER_BLOCKS = 3
DEFAULT_NODE_LAG_BLOCKS = 5  # a node this many blocks below the agreed tip is "behind" (a minute on Ethereum)
# A node whose newest block is older than this is refused (docs/decisions.md): 50 Ethereum slots, and still
# minutes on 2-second chains. Development chains (anvil, hardhat, geth --dev) mine on demand: off.
DEFAULT_MAX_TIP_AGE_SECONDS = 600
DEVELOPMENT_CHAIN_IDS = frozenset({1337, 31337})


@dataclass(frozen=True)
class ChainSettings:
    """One EVM chain's validated block."""

    chain: str
    # One node, or several (failover, and a quorum on blocks); never in repr: API keys live in provider URLs.
    rpc_url: str | tuple[str, ...] = field(repr=False)
    chain_id: int
    payout_confirmations: int = 1
    scan_seconds: float = DEFAULT_SCAN_SECONDS
    start_height: int | None = None
    max_blocks_per_scan: int = 200
    drop_after_seconds: int = 3600
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    ws_url: str | None = None  # None: no push, the scan polls every scan_seconds
    sweep: bool = True
    sweep_seconds: float = DEFAULT_SWEEP_SECONDS
    gas_margin_percent: int = DEFAULT_GAS_MARGIN_PERCENT
    priority_fee_wei: int | None = None  # None: ask the node (eth_maxPriorityFeePerGas)
    fee_ceiling_gwei: int | None = None  # the most maxFeePerGas of a payout; above it payouts wait (None: no ceiling)
    sweep_max_fee_percent: int | None = None  # a native sweep waits while its gas bound is above this % of it
    contracts: Mapping[str, str] = field(default_factory=dict)  # symbol -> contract overrides
    quorum: int = 1  # nodes that must agree on a block
    node_lag_blocks: int = DEFAULT_NODE_LAG_BLOCKS
    max_tip_age_seconds: int = DEFAULT_MAX_TIP_AGE_SECONDS  # 0: no stale-tip check
    credit_at_finalized: bool = False  # deposits credited only once their block is finalized (Capability.FINALITY)
    bump_after_blocks: int = DEFAULT_BUMP_AFTER_BLOCKS  # 0: a stuck payout or top-up is never re-signed


def _key(chain: str, name: str | None = None) -> str:
    return f"plugin.{PLUGIN_NAME}.{chain}" + (f".{name}" if name else "")


def _chain(chain: str, block: Any) -> ChainSettings:
    if not isinstance(block, Mapping):
        raise ConfigError(f"config key '{_key(chain)}' must be a table like [{_key(chain)}]")
    for name in block:
        if name not in REQUIRED + OPTIONAL:
            raise ConfigError(f"unknown config key '{_key(chain, name)}' (known: {', '.join(REQUIRED + OPTIONAL)})")
    for name in REQUIRED:
        if name not in block:
            raise ConfigError(f"config key '{_key(chain, name)}' is required")
    urls = node_urls_setting(block, _key(chain), "rpc_url") or ()
    if not all(url.startswith(("http://", "https://")) for url in urls):
        raise ConfigError(f"config key '{_key(chain, 'rpc_url')}' must be an http(s) URL or a list of them")
    # Never derived from rpc_url: geth and reth serve WebSocket on another port (8546), Infura on another
    # path, so a guess would fail on every reconnect; push is on only when the operator names the endpoint.
    ws_url = block.get("ws_url")
    if ws_url is not None and not is_ws_url(ws_url):
        raise ConfigError(f"config key '{_key(chain, 'ws_url')}' must be a ws(s):// URL")
    sweep = block.get("sweep", True)
    if not isinstance(sweep, bool):
        raise ConfigError(f"config key '{_key(chain, 'sweep')}' must be true or false, got {sweep!r}")
    credit_at_finalized = block.get("credit_at_finalized", False)
    if not isinstance(credit_at_finalized, bool):
        raise ConfigError(f"config key '{_key(chain, 'credit_at_finalized')}' must be true or false,"
                          f" got {credit_at_finalized!r}")
    chain_id = int_setting(block, _key(chain), "chain_id", None, minimum=1)
    assert chain_id is not None, "chain_id is REQUIRED: its presence was checked above"
    return ChainSettings(
        chain=chain,
        rpc_url=urls,
        quorum=quorum_setting(block, _key(chain), len(urls)),
        node_lag_blocks=lag_setting(block, _key(chain), DEFAULT_NODE_LAG_BLOCKS),
        chain_id=chain_id,
        payout_confirmations=int_setting(block, _key(chain), "payout_confirmations", 1, minimum=1),
        scan_seconds=seconds_setting(block, _key(chain), "scan_seconds", DEFAULT_SCAN_SECONDS, maximum=86_400),
        start_height=int_setting(block, _key(chain), "start_height", None, minimum=0),
        max_blocks_per_scan=int_setting(block, _key(chain), "max_blocks_per_scan", 200, minimum=1),
        drop_after_seconds=int_setting(block, _key(chain), "drop_after_seconds", 3600, minimum=0),
        timeout_seconds=seconds_setting(block, _key(chain), "timeout_seconds", DEFAULT_TIMEOUT_SECONDS, maximum=86_400),
        ws_url=ws_url,
        sweep=sweep,
        credit_at_finalized=credit_at_finalized,
        sweep_seconds=seconds_setting(block, _key(chain), "sweep_seconds", DEFAULT_SWEEP_SECONDS, maximum=86_400),
        gas_margin_percent=int_setting(block, _key(chain), "gas_margin_percent", DEFAULT_GAS_MARGIN_PERCENT, minimum=0),
        priority_fee_wei=int_setting(block, _key(chain), "priority_fee_wei", None, minimum=0),
        fee_ceiling_gwei=int_setting(block, _key(chain), "fee_ceiling_gwei", None, minimum=1),
        bump_after_blocks=int_setting(block, _key(chain), "bump_after_blocks", DEFAULT_BUMP_AFTER_BLOCKS, minimum=0),
        sweep_max_fee_percent=int_setting(block, _key(chain), "sweep_max_fee_percent", None, minimum=1),
        contracts=read_contracts(block, _key(chain), [coin for coin in COINS if coin.chain == chain]),
        max_tip_age_seconds=tip_age_setting(
            block, _key(chain), 0 if chain_id in DEVELOPMENT_CHAIN_IDS else DEFAULT_MAX_TIP_AGE_SECONDS),
    )


def read_settings(plugin_block: Mapping[str, Any]) -> dict[str, ChainSettings]:
    """Every configured chain by name; raises ``ConfigError`` naming the bad key."""
    if not isinstance(plugin_block, Mapping):
        raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}' must hold tables like [plugin.{PLUGIN_NAME}.ethereum]")
    return {chain: _chain(chain, block) for chain, block in plugin_block.items()}
