"""The ``[plugin.bitcoin.<COIN>]`` config blocks, read and validated in one place.

One block per coin; a coin without a block registers nothing::

    [plugin.bitcoin.LTC]
    rpc_url = "http://127.0.0.1:19443"
    rpc_user = "orbchain"              # or rpc_cookie_file = "/var/lib/litecoind/regtest/.cookie"
    rpc_password = "..."
    network = "regtest"                # mainnet | testnet | regtest
    fee_fallback_sat_per_vbyte = 10    # when estimatesmartfee has no answer
    payout_confirmations = 1

Optional: ``scan_seconds``, ``start_height`` (where a fresh database starts;
default: the tip), ``rpc_timeout_seconds``, ``drop_after_seconds``,
``node_max_tip_age_seconds`` (a node whose newest block is older is not used;
0 = off; default per coin and network, off on regtest: networks.py),
``bump_after_blocks`` (default 3; 0 = never): a payout still unconfirmed that
many blocks after signing is bumped by a child spending its change (CPFP), the
package paying the current rate up to the ceiling (``bumping.py``);
``bump_by_replacement`` (default true): first try a replacement paying more
(BIP 125), which a node started without replace-by-fee refuses (Litecoin
Core's default: ``-mempoolreplacement=1`` turns it on); the child is then made
instead. ``false`` never tries (nodes known to refuse; one refused attempt per
process otherwise).

The fee policy (``fees.py``): ``fee_target_blocks`` (default 2), the
confirmation target asked of ``estimatesmartfee``; ``fee_ceiling_sat_per_vbyte``
(default 20 x the coin's default fallback rate), the most a payout or its
bump pays: above it payouts wait queued until the rate falls.

``batch_window_seconds`` (default 0 = off): a payout waits queued up to this
long after it was requested, and goes out in ONE transaction with every other
queued payout of the coin requested meanwhile (separate API requests,
auto-withdrawals), each booking its share of the fee (``core/payouts/batches.py``).

Consolidation of deposits into the hot wallet (``consolidation.py``; off
unless ``consolidate_min_outputs`` is set): once that many deposit outputs
are each worth spending (their input's fee at most
``consolidate_max_fee_percent``, default 1, of their value), one transaction
every ``consolidate_seconds`` (default 600) moves them to a platform key,
its whole fee within that share of what it moves and the rate within the
fee ceiling. Outputs worth no more than their spending fee are dust: left.

Several nodes (one or more providers): ``rpc_url`` may be a list; credentials
shared by all come from ``rpc_user``/``rpc_password`` (or the cookie), or each
URL carries its own (``http://user:pass@host:port``). ``quorum`` (default: a
majority of the URLs) is how many must agree on a block before it counts::

    rpc_url = ["http://10.0.0.1:9332", "http://10.0.0.2:9332", "http://10.0.0.3:9332"]
    quorum = 2

Push (the adapter declares ``Capability.PUSH`` only when one is set; both may be)::

    p2p = "127.0.0.1:19444"                       # the node's P2P port (-whitelist=noban@...)
    zmq_rawtx = "tcp://127.0.0.1:28332"           # -zmqpubrawtx
    zmq_hashblock = "tcp://127.0.0.1:28332"       # -zmqpubhashblock
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import SplitResult, urlsplit

from ...api import (
    Config, ConfigError, int_setting, lag_setting, node_name, node_urls_setting, quorum_setting, seconds_setting,
    tip_age_setting,
)
from .networks import default_tip_age

from .coins import COINS

PLUGIN_NAME = "bitcoin"
NETWORKS = ("mainnet", "testnet", "regtest")


@dataclass(frozen=True)
class CoinSpec:
    """What differs between the Bitcoin Core forks we serve."""

    symbol: str
    chain: str  # the coin table's chain name, also the adapter's name
    family: str  # the key layer's address family
    script: str  # "p2wpkh" (native segwit deposits) or "p2pkh" (legacy, DOGE)
    change_min_sat: int  # smaller change is left to the miner (above every dust limit): the coin's min_payment
    default_fallback_sat_per_vbyte: int
    node: str  # for messages and docs
    node_lag_blocks: int = 2  # a node this many blocks below the agreed tip is "behind" (about 20 minutes on BTC)


_DUST = {coin.symbol: coin.min_payment_units for coin in COINS}  # one figure per coin (coins.py says why)
COIN_SPECS: Mapping[str, CoinSpec] = {
    "BTC": CoinSpec("BTC", "bitcoin", "btc", "p2wpkh", _DUST["BTC"], 10, "Bitcoin Core"),
    "LTC": CoinSpec("LTC", "litecoin", "ltc", "p2wpkh", _DUST["LTC"], 10, "Litecoin Core", node_lag_blocks=4),
    # Dogecoin's fees are per-kB high.
    "DOGE": CoinSpec("DOGE", "dogecoin", "doge", "p2pkh", _DUST["DOGE"], 1_000, "Dogecoin Core", node_lag_blocks=10),
}

KEYS = ("rpc_url", "rpc_user", "rpc_password", "rpc_cookie_file", "network", "fee_fallback_sat_per_vbyte",
        "payout_confirmations", "scan_seconds", "start_height", "rpc_timeout_seconds", "drop_after_seconds",
        "p2p", "zmq_rawtx", "zmq_hashblock", "quorum", "node_lag_blocks", "node_max_tip_age_seconds",
        "bump_after_blocks", "fee_ceiling_sat_per_vbyte", "fee_target_blocks", "bump_by_replacement",
        "batch_window_seconds", "consolidate_min_outputs", "consolidate_max_fee_percent", "consolidate_seconds")
BUMP_AFTER_BLOCKS = 3  # a payout unconfirmed this many blocks after signing is bumped (CPFP); 0 = never
FEE_CEILING_FACTOR = 20  # default fee ceiling: this many times the coin's default fallback rate
FEE_TARGET_BLOCKS = 2  # default confirmation target for estimatesmartfee
MAX_FEE_TARGET_BLOCKS = 1008  # the most estimatesmartfee answers for
ZMQ_SCHEMES = ("tcp", "ipc")
CONSOLIDATE_MAX_FEE_PERCENT = 1  # default: a consolidation pays at most 1 % of what it moves
CONSOLIDATE_SECONDS = 600.0


@dataclass(frozen=True)
class CoinSettings:
    spec: CoinSpec
    rpc_urls: tuple[str, ...]
    rpc_user: str | None
    rpc_password: str | None
    rpc_cookie_file: str | None
    network: str
    fee_fallback_sat_per_vbyte: int
    payout_confirmations: int
    scan_seconds: float
    start_height: int | None
    rpc_timeout_seconds: float
    drop_after_seconds: int
    p2p: tuple[str, int] | None = None  # (host, port) of the node's P2P listener
    zmq: Mapping[str, str] = field(default_factory=dict)  # ZMQ topic ("rawtx", "hashblock") -> endpoint
    quorum: int = 1  # nodes that must agree on a block
    node_lag_blocks: int = 2  # blocks below the agreed tip before a node is "behind"
    max_tip_age_seconds: int = 0  # a node whose newest block is older is refused; 0 = off
    bump_after_blocks: int = BUMP_AFTER_BLOCKS
    fee_ceiling_sat_per_vbyte: int = 0  # payouts and bumps never pay more; above it payouts wait (fees.py)
    fee_target_blocks: int = FEE_TARGET_BLOCKS
    bump_by_replacement: bool = True  # try a replacement first; a node that refuses gets a child (replacing.py)
    batch_window_seconds: int = 0  # payouts of separate requests within it share one transaction; 0 = off
    consolidate_min_outputs: int = 0  # deposit outputs worth consolidating before one is made; 0 = never
    consolidate_max_fee_percent: int = CONSOLIDATE_MAX_FEE_PERCENT
    consolidate_seconds: float = CONSOLIDATE_SECONDS

    @property
    def push(self) -> bool:
        return self.p2p is not None or bool(self.zmq)

    def __repr__(self) -> str:  # never the password
        return f"<CoinSettings {self.spec.symbol} {self.network} {len(self.rpc_urls)} node(s)>"


def _key(symbol: str, name: str | None = None) -> str:
    return f"plugin.{PLUGIN_NAME}.{symbol}" + (f".{name}" if name else "")


def _text(block: Mapping[str, Any], symbol: str, name: str) -> str | None:
    value = block.get(name)
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"config key '{_key(symbol, name)}' must be a non-empty string")
    return value


def _p2p(block: Mapping[str, Any], symbol: str) -> tuple[str, int] | None:
    """``"host:port"`` or ``"[v6]:port"`` of the node's P2P listener."""
    value = _text(block, symbol, "p2p")
    if value is None:
        return None
    host, _, port = value.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or "/" in host:
        raise ConfigError(f"config key '{_key(symbol, 'p2p')}' must be host:port of the node's P2P listener"
                          f" (e.g. \"127.0.0.1:19444\"), got {value!r}")
    return host, int(port)


def _port(parts: SplitResult) -> int | None:
    try:
        return parts.port
    except ValueError:  # out of range
        return None


def _zmq(block: Mapping[str, Any], symbol: str) -> dict[str, str]:
    endpoints = {}
    for topic in ("rawtx", "hashblock"):
        url = _text(block, symbol, f"zmq_{topic}")
        if url is None:
            continue
        parts = urlsplit(url)
        if parts.scheme not in ZMQ_SCHEMES or not (parts.netloc or parts.path):
            raise ConfigError(f"config key '{_key(symbol, f'zmq_{topic}')}' must be a ZMQ endpoint such as"
                              f" \"tcp://127.0.0.1:28332\" (the node's -zmqpub{topic}), got {url!r}")
        if parts.scheme == "tcp" and (not parts.hostname or _port(parts) is None):
            raise ConfigError(f"config key '{_key(symbol, f'zmq_{topic}')}' needs a host and port, got {url!r}")
        endpoints[topic] = url
    return endpoints


def _coin_settings(symbol: str, block: Any) -> CoinSettings:
    if not isinstance(block, Mapping):
        raise ConfigError(f"config key '{_key(symbol)}' must be a table of settings")
    for name in block:
        if name not in KEYS:
            raise ConfigError(f"unknown config key '{_key(symbol, name)}' (known: {', '.join(KEYS)})")
    spec = COIN_SPECS[symbol]
    urls = node_urls_setting(block, _key(symbol), "rpc_url")
    if urls is None:
        raise ConfigError(f"config key '{_key(symbol, 'rpc_url')}' is required (the node's JSON-RPC URL)")
    for url in urls:
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise ConfigError(f"config key '{_key(symbol, 'rpc_url')}' must be http(s) URLs, got {node_name(url)!r}")
    user, password = _text(block, symbol, "rpc_user"), _text(block, symbol, "rpc_password")
    cookie = _text(block, symbol, "rpc_cookie_file")
    if cookie and (user or password):
        raise ConfigError(f"config keys '{_key(symbol, 'rpc_cookie_file')}' and '{_key(symbol, 'rpc_user')}'"
                          f"/'rpc_password' are alternatives: set one")
    if not cookie and (user is None or password is None):
        raise ConfigError(f"config block '{_key(symbol)}' needs 'rpc_user' and 'rpc_password', or 'rpc_cookie_file'")
    network = block.get("network")
    if network not in NETWORKS:
        raise ConfigError(
            f"config key '{_key(symbol, 'network')}' must be one of {', '.join(NETWORKS)}, got {network!r}")
    return CoinSettings(
        spec=spec, rpc_urls=urls, quorum=quorum_setting(block, _key(symbol), len(urls)), rpc_user=user,
        node_lag_blocks=lag_setting(block, _key(symbol), spec.node_lag_blocks),
        rpc_password=password, rpc_cookie_file=cookie, network=network,
        fee_fallback_sat_per_vbyte=int_setting(block, _key(symbol), "fee_fallback_sat_per_vbyte",
                                               spec.default_fallback_sat_per_vbyte, minimum=1),
        payout_confirmations=int_setting(block, _key(symbol), "payout_confirmations", 1, minimum=1),
        scan_seconds=seconds_setting(block, _key(symbol), "scan_seconds", 5.0 if network == "regtest" else 30.0),
        start_height=int_setting(block, _key(symbol), "start_height", None, minimum=0),
        rpc_timeout_seconds=seconds_setting(block, _key(symbol), "rpc_timeout_seconds", 30.0),
        drop_after_seconds=int_setting(block, _key(symbol), "drop_after_seconds", 3 * 3600, minimum=1),
        p2p=_p2p(block, symbol), zmq=_zmq(block, symbol),
        max_tip_age_seconds=tip_age_setting(block, _key(symbol), default_tip_age(symbol, network)),
        bump_after_blocks=int_setting(block, _key(symbol), "bump_after_blocks", BUMP_AFTER_BLOCKS, minimum=0),
        fee_ceiling_sat_per_vbyte=int_setting(block, _key(symbol), "fee_ceiling_sat_per_vbyte",
                                              FEE_CEILING_FACTOR * spec.default_fallback_sat_per_vbyte, minimum=1),
        fee_target_blocks=_fee_target(block, symbol),
        bump_by_replacement=_flag(block, symbol, "bump_by_replacement", True),
        batch_window_seconds=int_setting(block, _key(symbol), "batch_window_seconds", 0, minimum=0),
        consolidate_min_outputs=_consolidate_min_outputs(block, symbol),
        consolidate_max_fee_percent=_percent(block, symbol, "consolidate_max_fee_percent",
                                             CONSOLIDATE_MAX_FEE_PERCENT),
        consolidate_seconds=seconds_setting(block, _key(symbol), "consolidate_seconds", CONSOLIDATE_SECONDS),
    )


def _consolidate_min_outputs(block: Mapping[str, Any], symbol: str) -> int:
    value = int_setting(block, _key(symbol), "consolidate_min_outputs", 0, minimum=0)
    if value == 1:
        raise ConfigError(f"config key '{_key(symbol, 'consolidate_min_outputs')}' must be 0 (off) or at least 2:"
                          " one output moved to another key of ours only pays a fee")
    return value


def _percent(block: Mapping[str, Any], symbol: str, name: str, default: int) -> int:
    value = int_setting(block, _key(symbol), name, default, minimum=1)
    if value > 100:
        raise ConfigError(f"config key '{_key(symbol, name)}' is a percentage: 1 to 100, got {value}")
    return value


def _flag(block: Mapping[str, Any], symbol: str, name: str, default: bool) -> bool:
    value = block.get(name, default)
    if not isinstance(value, bool):
        raise ConfigError(f"config key '{_key(symbol, name)}' must be true or false, got {value!r}")
    return value


def _fee_target(block: Mapping[str, Any], symbol: str) -> int:
    target = int_setting(block, _key(symbol), "fee_target_blocks", FEE_TARGET_BLOCKS, minimum=1)
    if target > MAX_FEE_TARGET_BLOCKS:
        raise ConfigError(f"config key '{_key(symbol, 'fee_target_blocks')}' must be at most"
                          f" {MAX_FEE_TARGET_BLOCKS} (what estimatesmartfee answers for), got {target}")
    return target


def read_settings(config: Config) -> dict[str, CoinSettings]:
    """The validated blocks by coin symbol; raises ``ConfigError`` naming the bad key."""
    blocks = dict(config.plugin_config(PLUGIN_NAME))
    for symbol in blocks:
        if symbol not in COIN_SPECS:
            raise ConfigError(f"unknown config block '{_key(symbol)}' (coins served: {', '.join(COIN_SPECS)})")
    return {symbol: _coin_settings(symbol, block) for symbol, block in blocks.items()}
