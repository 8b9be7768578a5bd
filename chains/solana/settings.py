"""The ``[plugin.solana]`` config block, read and validated in one place.

Without ``rpc_url`` the plugin stays coin-only (the devnet simulates SOL)::

    [plugin.solana]
    rpc_url = "http://127.0.0.1:8899"
    headers = { Authorization = "Bearer ..." }   # optional: hosted providers' API key
    ws_url = "ws://127.0.0.1:8900"               # optional: PubSub, slotSubscribe wakes the scan
    commitment = "confirmed"                     # or "finalized"
    payout_confirmations = 1                     # optional
    cluster = "mainnet-beta"                     # or "devnet", "testnet", "localnet": the genesis nodes must have
    genesis_hash = "..."                         # optional: another cluster's (a localnet's) genesis hash
    node_max_tip_age_seconds = 120               # optional: a node whose newest block is older is refused (0 = off)
    priority_fee_percentile = 75                 # optional: of the recent slots' fees for the accounts written
    fee_ceiling_micro_lamports_per_cu = 10000000 # optional: payouts wait while that fee is above it (fees.py)

Every error names the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ...api import (
    ConfigError, int_setting, lag_setting, node_urls_setting, quorum_setting, seconds_setting, tip_age_setting,
)
from ..subscription import is_ws_url
from .fees import PriorityFeePolicy

PLUGIN_NAME = "solana"
CHAIN = "solana"
COMMITMENTS = ("confirmed", "finalized")  # getBlock refuses "processed"
KNOWN = (
    "rpc_url", "ws_url", "headers", "commitment", "payout_confirmations", "scan_seconds", "start_height",
    "max_blocks_per_scan", "drop_after_seconds", "timeout_seconds", "sweep", "sweep_seconds",
    "history_max_addresses", "history_pages", "history_page_size", "quorum", "node_lag_blocks",
    "cluster", "genesis_hash", "node_max_tip_age_seconds", "address_pool_size", "address_pool_seconds",
    "priority_fee_percentile", "fee_ceiling_micro_lamports_per_cu",
)
# getGenesisHash of each public cluster: a node answering another is on another cluster. A localnet's is
# made when it starts: nothing to compare unless the operator names it (genesis_hash).
GENESIS_HASHES = {
    "mainnet-beta": frozenset({"5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"}),
    "devnet": frozenset({"EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"}),
    "testnet": frozenset({"4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY"}),
    "localnet": frozenset[str](),
}
# A node whose newest block is older than this is refused (docs/decisions.md): 300 slots of 0.4 s on
# mainnet-beta, three times that on devnet/testnet, off on a localnet (it may sit still).
MAINNET_MAX_TIP_AGE_SECONDS = 120
MAX_PAGE_SIZE = 1000  # getSignaturesForAddress refuses a larger limit
DEFAULT_SCAN_SECONDS = 2.0  # a slot is ~400 ms: one scan takes the few slots since the last
DEFAULT_SWEEP_SECONDS = 300.0
DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_NODE_LAG_SLOTS = 150  # a node this many slots (~1 min) below the agreed tip is "behind"
# Pre-derived deposit addresses kept unused per merchant for a seedless serve (pool.py), and how often the
# signer tops them up: 50 covers a burst of 50 new payments a merchant makes between two 30-second runs.
DEFAULT_ADDRESS_POOL_SIZE = 50
DEFAULT_ADDRESS_POOL_SECONDS = 30.0
# The priority fee (fees.py, docs/decisions.md): the 75th percentile of the recent slots' least fees for the
# accounts written, and at most 10 lamports a compute unit, 10,000 lamports (twice the signature fee) a transfer.
DEFAULT_PRIORITY_FEE_PERCENTILE = 75
DEFAULT_FEE_CEILING_MICRO_LAMPORTS_PER_CU = 10_000_000


@dataclass(frozen=True)
class SolanaSettings:
    # One node, or several (failover, and a quorum on blocks); never in repr: API keys live in provider URLs.
    rpc_url: str | tuple[str, ...] = field(repr=False)
    ws_url: str | None = None  # None: no push (a validator serves PubSub on the RPC port + 1, never guessed)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold an API key
    commitment: str = "confirmed"
    payout_confirmations: int = 1
    scan_seconds: float = DEFAULT_SCAN_SECONDS
    start_height: int | None = None  # a slot
    max_blocks_per_scan: int = 200
    drop_after_seconds: int = 3600
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    sweep: bool = True
    sweep_seconds: float = DEFAULT_SWEEP_SECONDS
    history_max_addresses: int = 1000  # catch-up over pruned slots: open-payment addresses searched
    history_pages: int = 10  # ... pages of getSignaturesForAddress per address
    history_page_size: int = MAX_PAGE_SIZE
    quorum: int = 1  # nodes that must agree on a block
    node_lag_blocks: int = DEFAULT_NODE_LAG_SLOTS  # slots, Solana's blocks
    genesis_hashes: frozenset[str] = GENESIS_HASHES["mainnet-beta"]  # what getGenesisHash must answer
    max_tip_age_seconds: int = MAINNET_MAX_TIP_AGE_SECONDS  # 0: no stale-tip check
    address_pool_size: int = DEFAULT_ADDRESS_POOL_SIZE  # unused pre-derived addresses per merchant (pool.py)
    address_pool_seconds: float = DEFAULT_ADDRESS_POOL_SECONDS
    priority_fee: PriorityFeePolicy = PriorityFeePolicy(DEFAULT_PRIORITY_FEE_PERCENTILE,
                                                        DEFAULT_FEE_CEILING_MICRO_LAMPORTS_PER_CU)


def _key(name: str | None = None) -> str:
    return f"plugin.{PLUGIN_NAME}" + (f".{name}" if name else "")


def _headers(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and k and isinstance(v, str)
                                                 for k, v in value.items()):
        raise ConfigError(f"config key '{_key('headers')}' must be a table of header name = \"value\" strings")
    return dict(value)


def read_settings(block: Mapping[str, Any]) -> SolanaSettings | None:
    """The validated block, or None when no RPC endpoint is configured (coin-only)."""
    if not isinstance(block, Mapping):
        raise ConfigError(f"config key '{_key()}' must be a table like [{_key()}]")
    for name in block:
        if name not in KNOWN:
            raise ConfigError(f"unknown config key '{_key(name)}' (known: {', '.join(KNOWN)})")
    if not block:
        return None
    url = node_urls_setting(block, _key(), "rpc_url") or ("",)
    if not all(u.startswith(("http://", "https://")) for u in url):
        raise ConfigError(f"config key '{_key('rpc_url')}' must be an http(s) URL or a list of them")
    ws_url = block.get("ws_url")
    if ws_url is not None and not is_ws_url(ws_url):
        raise ConfigError(f"config key '{_key('ws_url')}' must be a ws(s):// URL")
    commitment = block.get("commitment", "confirmed")
    if commitment not in COMMITMENTS:
        raise ConfigError(f"config key '{_key('commitment')}' must be one of {', '.join(COMMITMENTS)},"
                          f" got {commitment!r}")
    sweep = block.get("sweep", True)
    if not isinstance(sweep, bool):
        raise ConfigError(f"config key '{_key('sweep')}' must be true or false, got {sweep!r}")
    prefix = _key()
    cluster = block.get("cluster", "mainnet-beta")
    if cluster not in GENESIS_HASHES:
        raise ConfigError(f"config key '{_key('cluster')}' must be one of {', '.join(GENESIS_HASHES)}, got {cluster!r}")
    genesis = block.get("genesis_hash")
    if genesis is not None and (not isinstance(genesis, str) or not 32 <= len(genesis) <= 44):
        raise ConfigError(f"config key '{_key('genesis_hash')}' must be a base58 hash (getGenesisHash's answer)")
    tip_age = {"mainnet-beta": MAINNET_MAX_TIP_AGE_SECONDS, "localnet": 0}.get(cluster, 3 * MAINNET_MAX_TIP_AGE_SECONDS)
    return SolanaSettings(
        rpc_url=url,
        quorum=quorum_setting(block, prefix, len(url)),
        node_lag_blocks=lag_setting(block, prefix, DEFAULT_NODE_LAG_SLOTS),
        ws_url=ws_url,
        headers=_headers(block.get("headers", {})),
        commitment=commitment,
        payout_confirmations=int_setting(block, prefix, "payout_confirmations", 1, minimum=1),
        scan_seconds=seconds_setting(block, prefix, "scan_seconds", DEFAULT_SCAN_SECONDS, maximum=86_400),
        start_height=int_setting(block, prefix, "start_height", None, minimum=0),
        max_blocks_per_scan=int_setting(block, prefix, "max_blocks_per_scan", 200, minimum=1),
        drop_after_seconds=int_setting(block, prefix, "drop_after_seconds", 3600, minimum=0),
        timeout_seconds=seconds_setting(block, prefix, "timeout_seconds", DEFAULT_TIMEOUT_SECONDS, maximum=86_400),
        sweep=sweep,
        sweep_seconds=seconds_setting(block, prefix, "sweep_seconds", DEFAULT_SWEEP_SECONDS, maximum=86_400),
        history_max_addresses=int_setting(block, prefix, "history_max_addresses", 1000, minimum=1),
        history_pages=int_setting(block, prefix, "history_pages", 10, minimum=1),
        history_page_size=_page_size(block, prefix),
        genesis_hashes=frozenset({genesis}) if genesis else GENESIS_HASHES[cluster],
        max_tip_age_seconds=tip_age_setting(block, prefix, tip_age),
        address_pool_size=int_setting(block, prefix, "address_pool_size", DEFAULT_ADDRESS_POOL_SIZE, minimum=1),
        address_pool_seconds=seconds_setting(block, prefix, "address_pool_seconds", DEFAULT_ADDRESS_POOL_SECONDS,
                                             maximum=86_400),
        priority_fee=_priority_fee(block, prefix),
    )


def _priority_fee(block: Mapping[str, Any], prefix: str) -> PriorityFeePolicy:
    percentile = int_setting(block, prefix, "priority_fee_percentile", DEFAULT_PRIORITY_FEE_PERCENTILE, minimum=1)
    if percentile > 100:
        raise ConfigError(f"config key '{_key('priority_fee_percentile')}' must be at most 100, got {percentile}")
    ceiling = int_setting(block, prefix, "fee_ceiling_micro_lamports_per_cu",
                          DEFAULT_FEE_CEILING_MICRO_LAMPORTS_PER_CU, minimum=1)
    return PriorityFeePolicy(percentile, ceiling)


def _page_size(block: Mapping[str, Any], prefix: str) -> int:
    size = int_setting(block, prefix, "history_page_size", MAX_PAGE_SIZE, minimum=1)
    if size > MAX_PAGE_SIZE:
        raise ConfigError(f"config key '{_key('history_page_size')}' must be at most {MAX_PAGE_SIZE}, got {size}")
    return size
