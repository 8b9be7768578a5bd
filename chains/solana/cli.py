"""``orbchain solana hot-wallet``: the address operators fund, and its balance on the configured cluster."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from ...api import load_secrets
from .keys import hot_wallet_address

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="solana_command", required=True, metavar="{hot-wallet}")
    sub.add_parser("hot-wallet", help="print the hot wallet address and its SOL balance")
    parser.set_defaults(func=cmd_hot_wallet)


def cmd_hot_wallet(args: argparse.Namespace | None, gateway: "Gateway") -> int:
    gateway.secrets = gateway.secrets or load_secrets(gateway.config)
    address = hot_wallet_address(gateway)
    print(f"hot wallet (m/44'/501'/0'/0'): {address}")

    async def balance() -> None:
        from . import solana_adapter

        adapter = solana_adapter(gateway)
        if adapter is None:
            print("  no [plugin.solana] rpc_url configured")
            return
        try:
            print(f"  {adapter.native} {await adapter.txs.balance(address)} lamports")
        except Exception as exc:  # noqa: BLE001 - a status line, whatever fails
            print(f"  node unavailable ({type(exc).__name__})")
        finally:
            await adapter.close()

    asyncio.run(balance())
    return 0
