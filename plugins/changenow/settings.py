"""The ``[plugin.changenow]`` block. Without ``api_key`` the venue is not registered.

::

    [plugin.changenow]
    api_key = "..."                       # x-changenow-api-key
    base_url = "https://api.changenow.io" # the API's origin (tests point it at a local server)
    flow = "standard"                     # or "fixed-rate" (a rateId locks the quote)
    timeout_seconds = 15
    [plugin.changenow.tickers]            # coin -> "currency/network" at ChangeNOW; merged over the defaults
    USDT_POL = "usdt/matic"
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ...api import Config, ConfigError, checked_block, text_setting

PLUGIN_NAME = "changenow"
KEYS = ("api_key", "base_url", "flow", "timeout_seconds", "tickers")
FLOWS = ("standard", "fixed-rate")
# (currency, network) per gateway coin, as ChangeNOW's v2 currency list names them.
DEFAULT_TICKERS: Mapping[str, tuple[str, str]] = {
    "BTC": ("btc", "btc"), "LTC": ("ltc", "ltc"), "DOGE": ("doge", "doge"), "ETH": ("eth", "eth"),
    "USDT_ERC20": ("usdt", "eth"), "USDC_ERC20": ("usdc", "eth"), "DAI": ("dai", "eth"),
    "BNB": ("bnb", "bsc"), "USDT_BEP20": ("usdt", "bsc"), "TRX": ("trx", "trx"),
    "USDT_TRC20": ("usdt", "trx"), "SOL": ("sol", "sol"), "XMR": ("xmr", "xmr"),
}


@dataclass(frozen=True)
class ChangeNowSettings:
    api_key: str | None
    base_url: str = "https://api.changenow.io"
    flow: str = "standard"
    timeout_seconds: float = 15.0
    tickers: Mapping[str, tuple[str, str]] = field(default_factory=lambda: dict(DEFAULT_TICKERS))


def _key(name: str) -> str:
    return f"plugin.{PLUGIN_NAME}.{name}"


def read_settings(config: Config) -> ChangeNowSettings:
    block = checked_block(config, PLUGIN_NAME, KEYS)
    api_key = text_setting(block, f"plugin.{PLUGIN_NAME}", "api_key")
    base_url = block.get("base_url", "https://api.changenow.io")
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"config key '{_key('base_url')}' must be an http(s) URL")
    flow = block.get("flow", "standard")
    if flow not in FLOWS:
        raise ConfigError(f"config key '{_key('flow')}' must be one of {', '.join(FLOWS)}")
    timeout = block.get("timeout_seconds", 15)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 120:
        raise ConfigError(f"config key '{_key('timeout_seconds')}' must be a number of seconds, 0-120")
    tickers = dict(DEFAULT_TICKERS)
    raw = block.get("tickers", {})
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config key '{_key('tickers')}' must be a table of COIN = \"currency/network\"")
    for coin, text in raw.items():
        if not isinstance(text, str) or text.count("/") != 1 or not all(text.split("/")):
            raise ConfigError(f"config key '{_key('tickers')}.{coin}' must be \"currency/network\"")
        currency, network = text.lower().split("/")
        tickers[str(coin).upper()] = (currency, network)
    return ChangeNowSettings(api_key, base_url.rstrip("/"), flow, float(timeout), tickers)
