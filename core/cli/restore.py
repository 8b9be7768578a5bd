"""``orbchain restore recover BACKUP``: make a database restored to an earlier point safe to serve from.

Skips every derivation counter past the addresses the lost hours may have
handed out and watches those addresses, so no address is given to two payers
and money sent to one is credited as a recovered deposit
(core/watching/recovery.py). Run it after restoring and before starting
any gateway process; a second run for the same backup changes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from ..types.errors import NotConfigured
from ..gateway import Gateway
from ..infra.config import ConfigError
from ..keys.secrets import load_secrets
from ..startup import build_gateway
from ..watching.recovery import DEFAULT_SKIP, check_input, recover
from .support import config_from_args, with_db


def cmd_restore_recover(args: argparse.Namespace) -> int:
    try:
        check_input(args.backup, args.skip)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None

    async def work(gw: Gateway) -> int:
        try:
            done = await recover(gw, args.backup, args.skip)
        except NotConfigured as exc:
            raise ConfigError(f"cannot derive the skipped addresses: {exc}") from None
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(done.recovered_at))
        if done.already:
            print(f"already recovered from {done.label} at {when}: nothing changed")
        else:
            print(f"recovered from {done.label}: {done.counters} counter(s) skipped {done.skip} ahead,"
                  f" {done.addresses} skipped address(es) watched")
        return 0

    config = config_from_args(args)
    gateway = build_gateway(config)
    gateway.secrets = load_secrets(config)  # the skipped addresses are derived from the seed (or account xpubs)
    return asyncio.run(with_db(gateway, work))


def add_restore_command(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    restore = sub.add_parser("restore", help="after restoring a backup")
    restore_sub = restore.add_subparsers(dest="restore_command", required=True)
    recover_cmd = restore_sub.add_parser(
        "recover", help="skip the address counters past what the backup missed and watch the skipped addresses")
    recover_cmd.add_argument("backup", help="the backup restored from, e.g. its file name (a second run for it"
                                            " changes nothing)")
    recover_cmd.add_argument("--skip", type=int, default=DEFAULT_SKIP,
                             help=f"indexes to skip on every counter (default {DEFAULT_SKIP})")
    recover_cmd.set_defaults(func=cmd_restore_recover)
