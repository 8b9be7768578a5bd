"""``orbchain serve``: the one command that needs the web layer.

It lives here, not in ``core/cli.py``, because the core never imports the
web layer; ``orbchain.cli`` adds it to the core's commands. It serves with
``web.server.run``, not ``web.run_app``, whose runner answers malformed
requests in plain text, echoing them.
"""

from __future__ import annotations

import argparse
import logging

from ..core.cli import config_from_args
from .app import create_app
from .server import run

log = logging.getLogger("orbchain")


def cmd_serve(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    app = create_app(config)
    log.info("Orbchain serving on http://%s:%d (%s, database %s)", config.server.host, config.server.port,
             config.server.environment, config.database_url.split(":", 1)[0])
    run(app, config.server.host, config.server.port, access_log=None)
    return 0


def add_serve_command(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    serve = sub.add_parser("serve", help="run the HTTP server, scheduler and chain watchers")
    serve.add_argument("--host", help="listen address (default 127.0.0.1; env ORBCHAIN_HOST)")
    serve.add_argument("--port", type=int, help="listen port (default 8080; env ORBCHAIN_PORT)")
    serve.set_defaults(func=cmd_serve)
