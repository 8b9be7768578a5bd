"""The ``orbchain`` console script and ``python -m orbchain``.

The core's commands (``orbchain.core.cli.commands``) plus ``serve`` from the web
layer: the only place both layers meet, so the core never imports the web.
"""

from __future__ import annotations

from typing import Sequence

from .core.cli import commands as core_cli
from .web.serve import add_serve_command


def main(argv: Sequence[str] | None = None) -> int:
    return core_cli.main(argv, commands=(add_serve_command,))
