"""``orbchain evm hot-wallet``: the address operators fund, and its balance on each configured chain."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from ...api import load_secrets
from .keys import hot_wallet_address
from .rpc import quantity

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="evm_command", required=True, metavar="{hot-wallet}")
    sub.add_parser("hot-wallet", help="print the hot wallet address and its native balance per chain")
    parser.set_defaults(func=cmd_hot_wallet)


def cmd_hot_wallet(args: argparse.Namespace, gateway: "Gateway") -> int:
    gateway.secrets = gateway.secrets or load_secrets(gateway.config)
    address = hot_wallet_address(gateway)
    print(f"hot wallet (m/44'/60'/0'/0/0, every EVM chain): {address}")

    async def balances() -> None:
        from . import evm_adapters

        for adapter in evm_adapters(gateway):
            try:
                wei = quantity(await adapter.rpc.call("eth_getBalance", address, "latest"))
                print(f"  {adapter.name}: {adapter.native} {wei} wei")
            except Exception as exc:  # noqa: BLE001 - a status line per chain, whatever fails
                print(f"  {adapter.name}: node unavailable ({type(exc).__name__})")
            finally:
                await adapter.close()

    asyncio.run(balances())
    return 0
