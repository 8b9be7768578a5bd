"""``orbchain chain notify NAME``: a node's ``-blocknotify`` wakes the gateway's scan of that chain.

The node runs the command once per new block. On PostgreSQL it sends the
``wake`` signal (core/infra/signals.py) with one ``NOTIFY`` on the signals
channel, which every gateway process hears; the one leading the chain's
scan scans at once. On SQLite the gateway is one process whose signals
stay in memory, so nothing outside it can reach them: the command refuses
and says what to use instead (docs/decisions.md, issue 31).
"""

from __future__ import annotations

import argparse
import asyncio

from ..gateway import Gateway
from ..infra.config import ConfigError
from ..infra.signals import CHANNEL, WAKE
from ..startup import build_gateway
from ..watching.scanner import scan_job_name
from .support import config_from_args, with_db


def cmd_chain_notify(args: argparse.Namespace) -> int:
    gateway = build_gateway(config_from_args(args))
    if args.chain not in gateway.chains:
        raise ConfigError(f"no chain {args.chain!r} is configured (chains: {', '.join(gateway.chains.names())})")
    if not gateway.db.is_postgres:
        raise ConfigError("chain notify needs PostgreSQL: on SQLite the gateway's signals stay inside its one"
                          " process; use the chain's push settings (bitcoin: p2p or zmq_*) or its scan_seconds")

    async def work(gw: Gateway) -> int:
        await gw.db.execute("SELECT pg_notify(:channel, :message)",
                            {"channel": CHANNEL, "message": gw.signals.message(WAKE, scan_job_name(args.chain))})
        return 0

    return asyncio.run(with_db(gateway, work))


def add_chain_command(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    chain = sub.add_parser("chain", help="chain tools")
    chain_sub = chain.add_subparsers(dest="chain_command", required=True)
    notify = chain_sub.add_parser("notify", help="wake the scan of a chain now (a node's -blocknotify runs it)")
    notify.add_argument("chain", help="the chain's name, e.g. litecoin")
    notify.set_defaults(func=cmd_chain_notify)
