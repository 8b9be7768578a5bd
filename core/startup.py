"""The composition root: the one place a process's gateway is put together.

``build_gateway`` joins the gateway (``gateway.py``: what plugins contribute)
with the core's own jobs (``jobs.py``: webhook delivery, the scanner, the
payout worker ...). Keeping the wiring here is why ``gateway.py``, which
every hook's argument type names, imports none of those modules. The web
app, the CLI and the test fixtures build their gateway through it.
"""

from __future__ import annotations

import pluggy

from .infra.config import Config
from .gateway import Gateway, assemble_gateway
from .jobs import register_core_jobs
from .custody.hot_wallet import load_limits
from .payouts.signing_gate import load_policy


def build_gateway(config: Config, pm: pluggy.PluginManager | None = None) -> Gateway:
    """A gateway for ``config`` with the core's jobs and every plugin's contributions, config validated.

    ``pm`` defaults to the installed plugins less ``[plugins] blocked``. The signer's ``[signing]`` policy is
    judged against the chains here, so a wrong coin or address stops the start, not the first payout.
    """
    gateway = assemble_gateway(config, pm, register_core_jobs)
    load_policy(gateway)
    load_limits(gateway)  # [custody.hot_wallet.<COIN>]: a wrong coin, amount or cold address stops the start
    return gateway
