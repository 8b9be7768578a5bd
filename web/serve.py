"""``orbchain serve``: the one command that needs the web layer.

It lives here, not in ``core/cli/commands.py``, because the core never imports the
web layer; ``orbchain.cli`` adds it to the core's commands. It serves with
``web.server.run``, not ``web.run_app``, whose runner answers malformed
requests in plain text, echoing them. The port is bound first (web/listen.py), so
"serving on" is printed only once it is held and a taken port is one line.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import replace
from pathlib import Path

from ..core.cli.commands import config_from_args
from ..core.infra.allocator import fix_mmap_threshold
from ..core.infra.config import Config
from ..core.infra.metrics import enable_multiprocess
from ..core.infra.open_files import raise_open_file_limit
from .app import create_app
from .listen import listen
from .server import run
from .workers import serve_workers

log = logging.getLogger("orbchain")


def cmd_serve(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    workers = getattr(args, "workers", None) or 1
    database = config.database_url.split(":", 1)[0]
    if workers < 1:
        log.error("--workers must be at least 1")
        return 2
    if workers > 1 and not database.startswith("postgres"):
        log.error("--workers %d needs PostgreSQL: a SQLite gateway is one process (its rate limits and caches"
                  " live in memory)", workers)
        return 2

    # Before anything is built or forked: the workers inherit both (core/infra/allocator.py,
    # core/infra/open_files.py; the streams' budget is derived from the open-file limit, web/stream_budget.py).
    fix_mmap_threshold()
    raise_open_file_limit()

    def serving() -> None:
        log.info("Orbchain serving on http://%s:%d (%s, database %s, %d worker%s)", config.server.host,
                 config.server.port, config.server.environment, database, workers, "s" if workers > 1 else "")

    if workers > 1:
        # Before the fork and before any metric exists: every worker writes to, and a scrape of any
        # worker reads, the same directory (core/infra/metrics.py).
        enable_multiprocess(Path(config.metrics.multiprocess_dir) if config.metrics.multiprocess_dir
                            else config.data_dir / "metrics")
        shared = worker_share(config, workers)
        return serve_workers(lambda: create_app(shared), config.server.host, config.server.port, workers,
                             drain_seconds=config.server.drain_seconds, development=config.is_development,
                             ready=serving, access_log=None)
    sock = listen(config.server.host, config.server.port)  # ListenError: one line from the CLI, exit 2
    run(create_app(config), config.server.host, config.server.port, sock=sock, ready=serving, access_log=None)
    return 0


def worker_share(config: Config, workers: int) -> Config:
    """``config`` for one of ``workers`` processes: ``[live] max_streams`` bounds the server, so each worker
    takes its share, rounded up (the kernel spreads connections evenly among them). The per-client bounds
    stay per process: one client's connections land on any worker, so a share could refuse it early."""
    live = config.live
    return replace(config, live=replace(live, max_streams=-(-live.max_streams // workers)))


def add_serve_command(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    serve = sub.add_parser("serve", help="run the HTTP server, scheduler and chain watchers")
    serve.add_argument("--host", help="listen address (default 127.0.0.1; env ORBCHAIN_HOST)")
    serve.add_argument("--port", type=int, help="listen port (default 8080; env ORBCHAIN_PORT)")
    serve.add_argument("--workers", type=int, default=1,
                       help="processes sharing the port (default 1; more than 1 needs PostgreSQL)")
    serve.set_defaults(func=cmd_serve)
