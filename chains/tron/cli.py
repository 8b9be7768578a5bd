"""``orbchain tron hot-wallet``: the address operators fund, with its TRX, pinned tokens and resources.

The hot wallet (m/44'/195'/0'/0/0, coin type 1 on testnets) pays every
payout, every sweep top-up and the bandwidth and energy they burn, so an
operator needs its address before the first payout and its balance and
resources afterwards. Without ``[plugin.tron] url`` only the address is
shown; an unreachable node is a status line, not a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from ...api import BroadcastError, ChainUnavailable, coin_type_for, format_units, load_secrets
from .http import NodeError
from ..platform_keys import HOT_WALLET_ACCOUNT, HOT_WALLET_INDEX
from .keys import hot_wallet_address
from .resources import account_state, chain_parameters, token_balance
from .settings import PLUGIN_NAME, read_settings

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from .adapter import TronAdapter

TRX_DECIMALS = 6
_NODE_ERRORS = (ChainUnavailable, NodeError, BroadcastError)


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="tron_command", required=True, metavar="{hot-wallet}")
    sub.add_parser("hot-wallet", help="print the hot wallet address, its TRX, pinned tokens and resources")
    parser.set_defaults(func=cmd_hot_wallet)


def cmd_hot_wallet(args: argparse.Namespace | None, gateway: "Gateway") -> int:
    gateway.secrets = gateway.secrets or load_secrets(gateway.config)
    from . import tron_adapter

    adapter = tron_adapter(gateway)

    async def report() -> list[str]:
        try:
            return await hot_wallet_report(gateway, adapter)
        finally:
            if adapter is not None:
                await adapter.close()

    print("\n".join(asyncio.run(report())))
    return 0


async def hot_wallet_report(gateway: "Gateway", adapter: "TronAdapter | None") -> list[str]:
    """The lines ``hot-wallet`` prints; asks the node only when an adapter is configured."""
    network = read_settings(gateway.config.plugin_config(PLUGIN_NAME)).network
    address = hot_wallet_address(gateway, network)
    path = f"m/44'/{coin_type_for(195, network)}'/{HOT_WALLET_ACCOUNT}'/0/{HOT_WALLET_INDEX}"
    lines = [f"hot wallet ({path}, Tron {network}): {address}"]
    if adapter is None:
        return [*lines, "  no node configured ([plugin.tron] url): balances not shown"]
    try:
        params = await chain_parameters(adapter.http)
        state = await account_state(adapter.http, address, params)
    except _NODE_ERRORS as exc:
        return [*lines, f"  node unavailable ({type(exc).__name__})"]
    if not state.exists:
        lines.append("  not activated yet: send it TRX first (that creates the account)")
    lines.append(f"  TRX {format_units(state.balance, TRX_DECIMALS)} ({state.balance} sun)")
    lines.append(f"  bandwidth left: {state.free_net} free + {state.staked_net} staked bytes;"
                 f" staked energy left: {state.staked_energy}")
    for symbol, contract in sorted(adapter.token_contracts.items()):
        try:
            units = await token_balance(adapter.http, contract, address)
        except _NODE_ERRORS as exc:
            lines.append(f"  {symbol}: balance unavailable ({type(exc).__name__})")
            continue
        lines.append(f"  {symbol} {format_units(units, gateway.coins.require(symbol).decimals)} (contract {contract})")
    return lines
