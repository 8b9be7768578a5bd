"""Links from a payment's transactions to a block explorer, as the operator configured them.

``[plugin.dashboard] explorer_urls`` maps a chain (``bitcoin``, ``ethereum``)
or a coin (``USDT_ERC20``; a coin's entry wins over its chain's) to a URL with
one ``{txid}``, e.g. ``bitcoin = "https://mempool.space/tx/{txid}"``. Nothing is
linked by default: which explorer learns what a shop looks at, and whether a
regtest or testnet coin has one at all, is the operator's choice (a chain
plugin cannot know it), and a link to the wrong network would mislead.

The template is checked at startup (http or https, a host, exactly one
``{txid}``, nowhere but the path or query). A transaction id comes from the
chain, and a payer can choose which transaction pays, so it is never trusted:
only ids of letters and digits (optionally ``0x``-prefixed) are linked, and
percent-quoted even then; anything else shows as text without a link.
"""

from __future__ import annotations

import re
from typing import Any, Mapping
from urllib.parse import quote, urlsplit

from ...api import ConfigError

PLACEHOLDER = "{txid}"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
TXID = re.compile(r"^(0x)?[A-Za-z0-9]{8,128}$")
_KEY = "plugin.dashboard.explorer_urls"


def parse_explorer_urls(value: Any) -> dict[str, str]:
    """The config table, checked: each name is a chain or coin name, each value a URL template."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"config key '{_KEY}' must be a table of chain or coin name = URL with {PLACEHOLDER}")
    urls = {}
    for name, template in value.items():
        if not isinstance(name, str) or not NAME.match(name):
            raise ConfigError(f"config key '{_KEY}' names {name!r}: use a chain or coin name")
        urls[name] = check_template(name, template)
    return urls


def check_template(name: str, template: Any) -> str:
    where = f"config key '{_KEY}.{name}'"
    if not isinstance(template, str) or template.count(PLACEHOLDER) != 1 or len(template) > 500:
        raise ConfigError(f"{where} must be a URL with exactly one {PLACEHOLDER}")
    parts = urlsplit(template.replace(PLACEHOLDER, "TXID"))
    if parts.scheme not in ("http", "https") or not parts.hostname or "{" in template.replace(PLACEHOLDER, ""):
        raise ConfigError(f"{where} must be an http(s) URL with a host, such as https://mempool.space/tx/{PLACEHOLDER}")
    if PLACEHOLDER in urlsplit(template).netloc:
        raise ConfigError(f"{where}: {PLACEHOLDER} belongs in the path or query, not in the host")
    return template


def explorer_link(urls: Mapping[str, str], *, coin: str | None, chain: str | None, txid: Any) -> str | None:
    """The explorer page of ``txid`` on the coin's (else the chain's) explorer; None when none is configured or
    the id is not one a chain would mint."""
    template = urls.get(coin or "") or urls.get(chain or "")
    if template is None or not isinstance(txid, str) or not TXID.match(txid):
        return None
    return template.replace(PLACEHOLDER, quote(txid, safe=""))
