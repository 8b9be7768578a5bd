"""The ``[plugin.monero]`` block: where monerod and monero-wallet-rpc answer (docs/monero.md).

Without the block (or without ``wallet_rpc_url``) the plugin serves only the
coin and its address family: no chain adapter, XMR payments answer 400
``xmr_receive_unsupported``. With it, one adapter named ``monero`` detects
payments through the wallet (view-only or full) and counts confirmations on
the node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

from ...api import (
    Config, ConfigError, NETWORKS, checked_block, int_setting, lag_setting, node_name, node_urls_setting,
    quorum_setting, seconds_setting, text_setting, tip_age_setting,
)
from .publisher import is_zmq_url

PLUGIN_NAME = "monero"
KEYS = ("daemon_url", "daemon_user", "daemon_password", "wallet_rpc_url", "wallet_rpc_user", "wallet_rpc_password",
        "network", "account_index", "scan_seconds", "start_height", "rpc_timeout_seconds", "drop_after_seconds",
        "zmq_pub_url", "quorum", "node_lag_blocks", "node_max_tip_age_seconds")
DEFAULT_NODE_LAG_BLOCKS = 2  # a monerod this many blocks (2 min each) below the agreed tip is "behind"
# A monerod whose newest block is older is refused (docs/decisions.md): 30 two-minute blocks; three times
# that on testnet/stagenet; off on regtest, which mines on demand.
MAINNET_MAX_TIP_AGE_SECONDS = 3600
# get_info's nettype for each configured network (regtest runs as "fakechain"; our testnet is either test net).
NETTYPES = {"mainnet": frozenset({"mainnet"}), "testnet": frozenset({"testnet", "stagenet"}),
            "regtest": frozenset({"fakechain"})}


@dataclass(frozen=True)
class MoneroSettings:
    daemon_url: str | tuple[str, ...]  # one monerod, or several (failover, and a quorum on blocks)
    daemon_user: str | None
    daemon_password: str | None
    wallet_rpc_url: str
    wallet_rpc_user: str | None
    wallet_rpc_password: str | None
    network: str
    account_index: int
    scan_seconds: float
    start_height: int | None
    rpc_timeout_seconds: float
    drop_after_seconds: int
    zmq_pub_url: str | None = None  # monerod's --zmq-pub endpoint: push; None polls only
    quorum: int = 1  # monerods that must agree on a block
    node_lag_blocks: int = DEFAULT_NODE_LAG_BLOCKS
    max_tip_age_seconds: int = 0  # a monerod whose newest block is older is refused; 0 = off

    def __repr__(self) -> str:  # never the passwords
        return f"<MoneroSettings {self.network}>"


def _key(name: str) -> str:
    return f"plugin.{PLUGIN_NAME}.{name}"


def _text(block: Mapping[str, Any], name: str) -> str | None:
    return text_setting(block, f"plugin.{PLUGIN_NAME}", name)


def _url(block: Mapping[str, Any], name: str, what: str) -> str:
    url = _text(block, name)
    if url is None:
        raise ConfigError(f"config key '{_key(name)}' is required ({what})")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"config key '{_key(name)}' must be an http(s) URL, got {url!r}")
    return url.rstrip("/")


def _pair(block: Mapping[str, Any], prefix: str) -> tuple[str | None, str | None]:
    user, password = _text(block, f"{prefix}_user"), _text(block, f"{prefix}_password")
    if (user is None) != (password is None):
        raise ConfigError(f"config keys '{_key(prefix + '_user')}' and '{_key(prefix + '_password')}' go together")
    return user, password


def read_settings(config: Config) -> MoneroSettings | None:
    """The validated block, or None when XMR detection is not configured; ``ConfigError`` names a bad key."""
    block = checked_block(config, PLUGIN_NAME, KEYS)
    if not block:
        return None
    network = block.get("network")
    if network not in NETWORKS:
        raise ConfigError(f"config key '{_key('network')}' must be one of {', '.join(NETWORKS)}, got {network!r}")
    daemon_user, daemon_password = _pair(block, "daemon")
    wallet_user, wallet_password = _pair(block, "wallet_rpc")
    zmq_pub_url = _text(block, "zmq_pub_url")
    if zmq_pub_url is not None and not is_zmq_url(zmq_pub_url):
        raise ConfigError(f"config key '{_key('zmq_pub_url')}' must be monerod's --zmq-pub endpoint,"
                          f" e.g. tcp://127.0.0.1:18084, got {zmq_pub_url!r}")
    prefix = f"plugin.{PLUGIN_NAME}"
    daemons = node_urls_setting(block, prefix, "daemon_url")
    if daemons is None:
        raise ConfigError(f"config key '{_key('daemon_url')}' is required (monerod's RPC, e.g. http://127.0.0.1:18081)")
    for url in daemons:
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise ConfigError(f"config key '{_key('daemon_url')}' must be http(s) URLs, got {node_name(url)!r}")
    return MoneroSettings(
        daemon_url=tuple(url.rstrip("/") for url in daemons), quorum=quorum_setting(block, prefix, len(daemons)),
        node_lag_blocks=lag_setting(block, prefix, DEFAULT_NODE_LAG_BLOCKS),
        daemon_user=daemon_user, daemon_password=daemon_password,
        wallet_rpc_url=_url(block, "wallet_rpc_url", "monero-wallet-rpc, e.g. http://127.0.0.1:18083"),
        wallet_rpc_user=wallet_user, wallet_rpc_password=wallet_password, network=network,
        account_index=int_setting(block, prefix, "account_index", 0, minimum=0),
        scan_seconds=seconds_setting(block, prefix, "scan_seconds", 5.0 if network == "regtest" else 30.0),
        start_height=int_setting(block, prefix, "start_height", None, minimum=0),
        rpc_timeout_seconds=seconds_setting(block, prefix, "rpc_timeout_seconds", 60.0),
        drop_after_seconds=int_setting(block, prefix, "drop_after_seconds", 3 * 3600, minimum=1),
        zmq_pub_url=zmq_pub_url,
        max_tip_age_seconds=tip_age_setting(block, prefix, {"mainnet": MAINNET_MAX_TIP_AGE_SECONDS, "regtest": 0}.get(
            network, 3 * MAINNET_MAX_TIP_AGE_SECONDS)),
    )
