"""``orbchain devnet pay|mine|reorg|status|outage``: drive the simulated chain from a shell.

Each command opens the gateway's database itself and applies the devnet's
own migrations if they are missing, so it works before the first ``serve``
and beside a running server on the same SQLite file (the database layer
waits for the other process's write lock). Operator mistakes print one line
and exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Awaitable, Callable

from ...api import AmountError, migrate
from .adapter import devnet_chain
from .chain import DevnetChain, DevnetError, InvalidAmount, UnservedCoin
from .settings import PLUGIN_NAME

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

Action = Callable[[argparse.Namespace, "Gateway", DevnetChain], Awaitable[int]]
USAGE_ERROR = 2


def configure(parser: argparse.ArgumentParser) -> None:
    # The sub-commands set ``devnet_action``, not ``func``: the core wraps the
    # ``devnet`` parser's ``func`` to build the gateway first.
    sub = parser.add_subparsers(dest="devnet_command", required=True, metavar="{pay,mine,reorg,status,outage}")

    pay = sub.add_parser("pay", help="send a transfer to an address; it waits in the mempool")
    pay.add_argument("--coin", required=True, help="coin symbol, e.g. BTC or USDT_ERC20")
    pay.add_argument("address", help="destination in the coin's mainnet format")
    pay.add_argument("amount", help="amount in coin units as a decimal, e.g. 0.5")
    pay.set_defaults(devnet_action=cmd_pay)

    mine = sub.add_parser("mine", help="mine blocks now; the first takes the whole mempool")
    mine.add_argument("-n", "--blocks", type=int, default=1, help="how many blocks (default 1)")
    mine.set_defaults(devnet_action=cmd_mine)

    reorg = sub.add_parser("reorg", help="replace the newest blocks by a longer chain")
    reorg.add_argument("--depth", type=int, required=True, help="how many blocks to replace")
    reorg.add_argument("--drop", nargs="+", action="extend", default=[], metavar="TX",
                       help="transactions that vanish instead of returning to the mempool")
    reorg.set_defaults(devnet_action=cmd_reorg)

    status = sub.add_parser("status", help="show the tip and the mempool size")
    status.set_defaults(devnet_action=cmd_status)

    outage = sub.add_parser("outage", help="take the node away from the gateway (on) or give it back (off)")
    outage.add_argument("state", choices=("on", "off"))
    outage.set_defaults(devnet_action=cmd_outage)

    parser.set_defaults(func=run)


def run(args: argparse.Namespace, gateway: "Gateway") -> int:
    return asyncio.run(_run(args, gateway))


def _fail(args: argparse.Namespace, message: str) -> int:
    print(f"orbchain devnet {args.devnet_command}: {message}", file=sys.stderr)
    return USAGE_ERROR


async def _run(args: argparse.Namespace, gateway: "Gateway") -> int:
    chain = devnet_chain(gateway)
    if chain is None:
        return _fail(args, f"the devnet is not enabled (set [plugin.{PLUGIN_NAME}] enabled = true)")
    await gateway.db.connect()
    try:
        await migrate(gateway.db, [m for m in gateway.migrations if m.namespace == PLUGIN_NAME])
        return await args.devnet_action(args, gateway, chain)
    except DevnetError as exc:
        return _fail(args, str(exc))
    finally:
        await gateway.db.disconnect()


async def cmd_pay(args: argparse.Namespace, gateway: "Gateway", chain: DevnetChain) -> int:
    coin = gateway.coins.get(args.coin.strip().upper())
    if coin is None:
        raise UnservedCoin(f"unknown coin {args.coin!r}")
    try:
        units = coin.to_units(args.amount)
    except AmountError as exc:
        raise InvalidAmount(f"amount {args.amount!r} {exc}") from None
    print(await chain.pay(coin, args.address, units))
    return 0


async def cmd_mine(args: argparse.Namespace, gateway: "Gateway", chain: DevnetChain) -> int:
    for ref in await chain.mine(args.blocks):
        print(f"{ref.height} {ref.hash}")
    return 0


async def cmd_reorg(args: argparse.Namespace, gateway: "Gateway", chain: DevnetChain) -> int:
    await chain.reorg(args.depth, args.drop)
    tip = await chain.tip()
    print(f"replaced {args.depth} block(s); new tip {tip.height} {tip.hash}")
    return 0


async def cmd_status(args: argparse.Namespace, gateway: "Gateway", chain: DevnetChain) -> int:
    tip = await chain.tip()
    waiting = await chain.mempool()
    print(f"tip: {tip.height} {tip.hash}")
    print(f"mempool: {len(waiting)} transfer(s)")
    return 0


async def cmd_outage(args: argparse.Namespace, gateway: "Gateway", chain: DevnetChain) -> int:
    await chain.set_outage(args.state == "on")
    print(f"devnet node {'unreachable' if args.state == 'on' else 'reachable'}")
    return 0
