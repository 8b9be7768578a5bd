"""``orbchain signer``: run the payout signer, the one process that holds the seed (core/custody/signer.py).

It builds the gateway from the config like any command (database, chains,
the ``[signing]`` policy, plugins for ``check_payout_signing``), loads the
seed, reads the channel key (``[signer] key_file``, required: a signer with
no credential would sign for anyone who reaches the socket) and answers on
``[signer] listen`` until SIGTERM/SIGINT. With ``[signer] database_url`` it connects as its own
least-privilege role (``orbchain custody signer-role``, core/custody/signer_role.py). It serves no web route, and of the
jobs runs only those that sign (``Job.signs``: the EVM deposit sweeps and gas
top-ups, hot-to-cold sweeps), which a seedless ``serve`` leaves to it; their
destinations are the hot wallet and this config's cold addresses.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import TYPE_CHECKING

from .support import config_from_args, with_db
from ..infra.config import ConfigError
from ..startup import build_gateway

if TYPE_CHECKING:  # pragma: no cover
    from ..gateway import Gateway

log = logging.getLogger(__name__)


async def serve_signer(gateway: "Gateway", listen: str) -> int:
    """Answer signing requests and, with ``[scheduler] enabled``, run the jobs that sign, until stopped."""
    from ...scheduler.runner import JobScheduler, signing_job
    from ..custody.signer import run_signer
    from ..custody.signer_role import unrestricted_warning
    from ..keys.signer_channel import RequestVerifier, read_channel_key

    config = gateway.config.signer
    verifier = RequestVerifier(read_channel_key(config.key_file), config.max_skew_seconds)
    warning = await unrestricted_warning(gateway.db)
    if warning:
        log.warning(warning)
    scheduler = JobScheduler(gateway, select=signing_job)
    if gateway.config.scheduler.enabled and scheduler.jobs():
        scheduler.start()
    try:
        return await run_signer(gateway, verifier, listen, asyncio.Event())
    finally:
        await scheduler.drain()


def cmd_signer(args: argparse.Namespace) -> int:
    from ..custody.signer import default_listen
    from ..infra.stopping import HARD_MARGIN_SECONDS, arm_exit_deadline, run_until_stopped
    from ..keys.secrets import load_secrets
    from ..keys.signer_channel import read_channel_key

    config = config_from_args(args)
    if config.signer.url:  # one config file shared by both processes on one host: the signer signs itself
        config = config.with_overrides(signer={"url": ""})
    if args.listen:
        config = config.with_overrides(signer={"listen": args.listen})
    if config.signer.database_url:  # its own least-privilege role, for every connection it opens
        config = config.with_overrides(database={"url": config.signer.database_url, "direct_url": "", "read_url": ""})
    gateway = build_gateway(config)
    gateway.secrets = load_secrets(config)
    if not gateway.secrets.seed_material:
        raise ConfigError("the signer needs the seed: set secrets.seed_file (or seed_mnemonic) in its config")
    read_channel_key(config.signer.key_file)  # a missing or bad key stops the start before anything is opened
    command = "orbchain signer"
    try:
        return asyncio.run(with_db(gateway, lambda gw: run_until_stopped(
            gw.stop, command, serve_signer(gw, default_listen(gw)))))
    finally:
        arm_exit_deadline(HARD_MARGIN_SECONDS, command)


def add_signer_command(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser("signer", help="hold the seed and sign payouts for seedless `serve` processes")
    parser.add_argument("--listen", default="",
                        help="unix:///path or http://host:port (default: [signer] listen, else"
                             " unix://<data_dir>/signer.sock)")
    parser.set_defaults(func=cmd_signer)
