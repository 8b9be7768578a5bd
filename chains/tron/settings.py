"""The ``[plugin.tron]`` config block, read and validated in one place.

Without ``url`` the plugin registers only its coins and address family (the
devnet may still simulate them); with it, a chain adapter watches and pays
on Tron through a full node's HTTP API::

    [plugin.tron]
    url = "https://api.trongrid.io"        # or http://127.0.0.1:8090 for your own java-tron
    api_key = "..."                        # optional: sent as TRON-PRO-API-KEY (hosted providers)
    network = "mainnet"                    # or "testnet" (Shasta, Nile): coin type 1 for keys
    fee_limit_sun = 50000000               # ceiling of energy a TRC-20 payout may burn
    contracts = { USDT_TRC20 = "T..." }    # optional: replace pinned TRC-20 contracts
    genesis_block_id = "..."               # optional: a private network's block 0 (default: mainnet's, or
                                           # Nile's or Shasta's on testnet); a node with another is refused
    node_max_tip_age_seconds = 300         # optional: a node whose newest block is older is refused (0 = off)

Every error names the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ...api import (
    ConfigError, int_setting, lag_setting, node_urls_setting, quorum_setting, seconds_setting, tip_age_setting,
)
from ..contracts import read_contracts
from .coins import COINS

PLUGIN_NAME = "tron"
CHAIN = "tron"
KNOWN = (
    "quorum", "node_lag_blocks",
    "url", "api_key", "network", "contracts", "payout_confirmations", "scan_seconds", "start_height",
    "max_blocks_per_scan", "drop_after_seconds", "timeout_seconds", "sweep", "sweep_seconds", "fee_limit_sun",
    "expiration_seconds", "genesis_block_id", "node_max_tip_age_seconds", "sweep_max_fee_percent",
)
# The id of block 0 (wallet/getblockbynum {"num": 0}) on each network: a node with another is on another chain.
GENESIS_BLOCK_IDS = {
    "mainnet": frozenset({"00000000000000001ebf88508a03865c71d452e25f4d51194196a1d22b6653dc"}),
    "testnet": frozenset({"0000000000000000d698d4192c56cb6be724a558448e2684802de4d6cd8690dc",  # Nile
                          "0000000000000000de1aa88295e1fcf982742f773e0419c5a9c134c994a9059e"}),  # Shasta
}
# A node whose newest block is older than this is refused (docs/decisions.md): 100 three-second slots.
DEFAULT_MAX_TIP_AGE_SECONDS = 300
# Mainnet, Shasta and Nile all produce a block every 3 s (DPoS slots), and no hosted provider pushes: one
# scan per block keeps a deposit at most one block late, and a faster poll would only ask for blocks
# that are not there yet (docs/tron.md, "Scan interval").
BLOCK_SECONDS = 3.0
DEFAULT_SCAN_SECONDS = BLOCK_SECONDS
DEFAULT_SWEEP_SECONDS = 300.0
DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_NODE_LAG_BLOCKS = 5  # a node this many blocks (3 s each) below the agreed tip is "behind"
DEFAULT_FEE_LIMIT_SUN = 50_000_000  # 50 TRX: a first USDT transfer to a new holder burns about a third of it
DEFAULT_EXPIRATION_SECONDS = 1800
MAX_EXPIRATION_SECONDS = 86_400  # java-tron refuses an expiration more than 24 h past its head block


@dataclass(frozen=True)
class TronSettings:
    """The validated block; ``url`` None means "no adapter"."""

    url: str | tuple[str, ...] | None = None  # one node, or several (failover, and a quorum on blocks)
    quorum: int = 1  # nodes that must agree on a block
    node_lag_blocks: int = DEFAULT_NODE_LAG_BLOCKS
    api_key: str | None = None
    network: str = "mainnet"
    genesis_block_ids: frozenset[str] = GENESIS_BLOCK_IDS["mainnet"]
    max_tip_age_seconds: int = DEFAULT_MAX_TIP_AGE_SECONDS  # 0: no stale-tip check
    contracts: Mapping[str, str] = field(default_factory=dict)
    payout_confirmations: int = 19
    scan_seconds: float = DEFAULT_SCAN_SECONDS
    start_height: int | None = None
    max_blocks_per_scan: int = 200
    drop_after_seconds: int = 3600
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    sweep: bool = True
    sweep_seconds: float = DEFAULT_SWEEP_SECONDS
    fee_limit_sun: int = DEFAULT_FEE_LIMIT_SUN
    sweep_max_fee_percent: int | None = None  # a TRX sweep waits while its burn is above this % of the balance
    expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS

    def __repr__(self) -> str:  # the URL and key of a hosted provider are secrets
        return f"TronSettings(network={self.network!r}, url={'set' if self.url else None})"


def _key(name: str) -> str:
    return f"plugin.{PLUGIN_NAME}.{name}"


def read_settings(block: Mapping[str, Any]) -> TronSettings:
    """The block's settings; raises ``ConfigError`` naming the bad key."""
    if not isinstance(block, Mapping):
        raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}' must be a table like [plugin.{PLUGIN_NAME}]")
    for name in block:
        if name not in KNOWN:
            raise ConfigError(f"unknown config key '{_key(name)}' (known: {', '.join(KNOWN)})")
    prefix = f"plugin.{PLUGIN_NAME}"
    contracts = read_contracts(block, prefix, COINS)
    url = node_urls_setting(block, prefix, "url")
    if url is not None and not all(u.startswith(("http://", "https://")) for u in url):
        raise ConfigError(f"config key '{_key('url')}' must be an http(s) URL or a list of them")
    api_key = block.get("api_key")
    if api_key is not None and (not isinstance(api_key, str) or not api_key or "\n" in api_key):
        raise ConfigError(f"config key '{_key('api_key')}' must be a non-empty string")
    network = block.get("network", "mainnet")
    if network not in ("mainnet", "testnet"):
        raise ConfigError(f"config key '{_key('network')}' must be 'mainnet' or 'testnet', got {network!r}")
    sweep = block.get("sweep", True)
    if not isinstance(sweep, bool):
        raise ConfigError(f"config key '{_key('sweep')}' must be true or false, got {sweep!r}")
    expiration = int_setting(block, prefix, "expiration_seconds", DEFAULT_EXPIRATION_SECONDS, minimum=60)
    if expiration > MAX_EXPIRATION_SECONDS:
        raise ConfigError(f"config key '{_key('expiration_seconds')}' must be at most {MAX_EXPIRATION_SECONDS}")
    drop_after = int_setting(block, prefix, "drop_after_seconds", 3600, minimum=0)
    if drop_after <= expiration:
        # A payout is failed (and re-credited) only once its transaction can no longer be mined.
        raise ConfigError(f"config key '{_key('drop_after_seconds')}' must exceed expiration_seconds ({expiration})")
    return TronSettings(
        url=url, quorum=quorum_setting(block, prefix, len(url or ("",))), api_key=api_key, network=network,
        node_lag_blocks=lag_setting(block, prefix, DEFAULT_NODE_LAG_BLOCKS),
        contracts=contracts,
        payout_confirmations=int_setting(block, prefix, "payout_confirmations", 19, minimum=1),
        scan_seconds=seconds_setting(block, prefix, "scan_seconds", DEFAULT_SCAN_SECONDS, maximum=86_400),
        start_height=int_setting(block, prefix, "start_height", None, minimum=0),
        max_blocks_per_scan=int_setting(block, prefix, "max_blocks_per_scan", 200, minimum=1),
        drop_after_seconds=drop_after,
        timeout_seconds=seconds_setting(block, prefix, "timeout_seconds", DEFAULT_TIMEOUT_SECONDS, maximum=86_400),
        sweep=sweep,
        sweep_seconds=seconds_setting(block, prefix, "sweep_seconds", DEFAULT_SWEEP_SECONDS, maximum=86_400),
        fee_limit_sun=int_setting(block, prefix, "fee_limit_sun", DEFAULT_FEE_LIMIT_SUN, minimum=1),
        sweep_max_fee_percent=int_setting(block, prefix, "sweep_max_fee_percent", None, minimum=1),
        expiration_seconds=expiration,
        genesis_block_ids=_genesis(block, network),
        max_tip_age_seconds=tip_age_setting(block, prefix, DEFAULT_MAX_TIP_AGE_SECONDS),
    )


def _genesis(block: Mapping[str, Any], network: str) -> frozenset[str]:
    value = block.get("genesis_block_id")
    if value is None:
        return GENESIS_BLOCK_IDS[network]
    if not isinstance(value, str) or len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise ConfigError(f"config key '{_key('genesis_block_id')}' must be 64 lower-case hex digits (block 0's id)")
    return frozenset({value})
