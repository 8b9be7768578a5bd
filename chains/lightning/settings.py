"""The ``[plugin.lightning]`` config block, read and validated in one place.

::

    [plugin.lightning]
    backend = "lnd"                       # "devnet" (simulated node), "none" (BTC_LN off), or a third party's
    network = "mainnet"                   # mainnet | testnet | regtest: invoices of other networks are refused
    lnd_url = "https://127.0.0.1:8080"    # LND's REST listener
    macaroon_path = "/var/lib/lnd/data/chain/bitcoin/mainnet/admin.macaroon"   # pays: where payouts are sent
    invoice_macaroon_path = "/etc/orbchain/receive.macaroon"   # receives only: a web process beside a signer
    tls_cert_path = "/var/lib/lnd/tls.cert"
    pay_timeout_seconds = 30              # how long a payout request waits for its payment
    poll_seconds = 10                     # the settlement polling fallback
    subscribe = true                      # follow LND's invoice stream (the poll still runs)
    lnurl_ca_file = "/etc/ssl/internal-ca.pem"   # optional extra CA for Lightning Address servers
    lnurl_timeout_seconds = 10            # per request to a Lightning Address service
    lnurl_allow_private_hosts = false     # true only for tests / a local LNURL server: lifts the SSRF guard

``backend`` defaults to ``"devnet"`` in development while the on-chain devnet
is enabled (``[plugin.devnet] enabled``, itself on by default there), so
``make run`` takes BTC_LN with nothing to set up; ``backend = "none"`` (and
any production server without a ``backend``) registers only the coin:
BTC_LN answers 503. With the devnet backend, ``network`` defaults to
``regtest`` (its invoices read ``lnbcrt...``, never mistaken for real ones),
``subscribe`` to false and ``poll_seconds`` to 2.

Two macaroons, by authority: ``macaroon_path`` can pay (LND's admin.macaroon),
``invoice_macaroon_path`` can only issue and follow invoices (baked with
``lncli bakemacaroon info:read invoices:read invoices:write``). With ``[signer]
url`` the payouts are sent by the signer, which holds the paying one; the web
process takes the invoice one, and a production web process given the paying
one refuses to start (``check_paying_macaroon``). With ``backend = "lnd"`` one
of the two is required; the paying one is used when both are given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

from ...api import Config, ConfigError, checked_block, int_setting, seconds_setting, text_setting, tip_age_setting

PLUGIN_NAME = "lightning"
DEVNET, NO_BACKEND = "devnet", "none"
NETWORKS = ("mainnet", "testnet", "regtest")
KEYS = ("backend", "network", "lnd_url", "macaroon_path", "invoice_macaroon_path", "tls_cert_path",
        "pay_timeout_seconds", "poll_seconds",
        "subscribe", "lnurl_ca_file", "lnurl_timeout_seconds", "lnurl_allow_private_hosts", "node_max_tip_age_seconds")
# GetInfo's chain:network a node must report for each configured network (vetted.py).
NODE_NETWORKS = {"mainnet": frozenset({"bitcoin:mainnet"}),
                 "testnet": frozenset({"bitcoin:testnet", "bitcoin:testnet4", "bitcoin:signet"}),
                 "regtest": frozenset({"bitcoin:regtest"})}
# The Bitcoin bounds (chains/bitcoin/networks.py, docs/decisions.md): the node's chain backend is Bitcoin's.
TIP_AGE_SECONDS = {"mainnet": 3 * 3600, "testnet": 9 * 3600, "regtest": 0}


@dataclass(frozen=True)
class LightningSettings:
    backend: str | None
    network: str
    lnd_url: str | None
    macaroon_path: str | None
    tls_cert_path: str | None
    pay_timeout_seconds: int
    poll_seconds: float
    subscribe: bool
    lnurl_ca_file: str | None
    lnurl_timeout_seconds: float
    lnurl_allow_private_hosts: bool
    max_tip_age_seconds: int = 0  # a node whose best block is older is refused; 0 = off
    invoice_macaroon_path: str | None = None  # receives only (settings docstring)

    @property
    def enabled(self) -> bool:
        return self.backend is not None


def _key(name: str) -> str:
    return f"plugin.{PLUGIN_NAME}.{name}"


def _text(block: Mapping[str, Any], name: str) -> str | None:
    return text_setting(block, f"plugin.{PLUGIN_NAME}", name)


def _file(block: Mapping[str, Any], name: str) -> str | None:
    path = _text(block, name)
    if path is not None and not Path(path).is_file():
        raise ConfigError(f"config key '{_key(name)}': no such file {path!r}")
    return path


def _flag(block: Mapping[str, Any], name: str, default: bool) -> bool:
    value = block.get(name, default)
    if not isinstance(value, bool):
        raise ConfigError(f"config key '{_key(name)}' must be true or false")
    return value


def read_settings(config: Config) -> LightningSettings:
    """The validated block; raises ``ConfigError`` naming the bad key."""
    block = checked_block(config, PLUGIN_NAME, KEYS)
    backend = _text(block, "backend")
    if backend is None and config.is_development and config.plugin_config("devnet").get("enabled", True) is True:
        backend = DEVNET
    if backend == NO_BACKEND:
        backend = None
    devnet = backend == DEVNET
    network = block.get("network", "regtest" if devnet else "mainnet")
    if network not in NETWORKS:
        raise ConfigError(f"config key '{_key('network')}' must be one of {', '.join(NETWORKS)}, got {network!r}")
    url = _text(block, "lnd_url")
    if backend == "lnd":
        if url is None or urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise ConfigError(f"config key '{_key('lnd_url')}' must be LND's REST URL (https://host:8080)")
        if block.get("macaroon_path") is None and block.get("invoice_macaroon_path") is None:
            raise ConfigError(f"config key '{_key('macaroon_path')}' (or '{_key('invoice_macaroon_path')}' where a"
                              " signer sends the payouts) is required with backend = \"lnd\"")
        if block.get("tls_cert_path") is None and urlsplit(url).scheme != "http":
            raise ConfigError(f"config key '{_key('tls_cert_path')}' is required with backend = \"lnd\"")
    subscribe = _flag(block, "subscribe", not devnet)
    return LightningSettings(
        backend=backend, network=network, lnd_url=url, macaroon_path=_file(block, "macaroon_path"),
        tls_cert_path=_file(block, "tls_cert_path"),
        pay_timeout_seconds=int_setting(block, f"plugin.{PLUGIN_NAME}", "pay_timeout_seconds", 30, minimum=1),
        poll_seconds=seconds_setting(block, f"plugin.{PLUGIN_NAME}", "poll_seconds", 2.0 if devnet else 10.0),
        subscribe=subscribe, lnurl_ca_file=_file(block, "lnurl_ca_file"),
        lnurl_timeout_seconds=seconds_setting(block, f"plugin.{PLUGIN_NAME}", "lnurl_timeout_seconds", 10.0),
        lnurl_allow_private_hosts=_flag(block, "lnurl_allow_private_hosts", False),
        max_tip_age_seconds=tip_age_setting(block, f"plugin.{PLUGIN_NAME}", TIP_AGE_SECONDS[network]),
        invoice_macaroon_path=_file(block, "invoice_macaroon_path"),
    )


def check_paying_macaroon(config: Config, settings: LightningSettings) -> None:
    """Production: a process with ``[signer] url`` (its payouts sent by the signer) must not hold the paying
    macaroon; the operator who wants this host to pay says so with ``[signer] in_process = true`` instead."""
    if config.is_development or not config.signer.url or settings.macaroon_path is None:
        return
    raise ConfigError(f"config key '{_key('macaroon_path')}': this process has [signer] url set, so its Lightning"
                      " payouts are sent by the signer, which holds the paying macaroon; give this process only"
                      f" '{_key('invoice_macaroon_path')}' (`lncli bakemacaroon info:read invoices:read"
                      " invoices:write`), or say [signer] in_process = true (without url) to pay here")
