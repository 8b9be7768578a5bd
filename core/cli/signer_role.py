"""``orbchain custody signer-role ROLE``: give the signer its own least-privilege PostgreSQL role.

Run by the operator with the owner's config (``[database] url``, the role that
ran ``migrate``), after every ``migrate`` too (new tables). The signer then
connects with ``[signer] database_url`` naming ``ROLE``. The privileges are
core/custody/signer_role.py's list, replaced as a whole: running it twice
changes nothing.

``--sweeps`` (which once added ledger writes for the signer's sweeps) is
accepted as a no-op with a warning: the sweeps' postings are booked by
``serve`` now, so there is nothing left to widen, and an operator's script
that still passes it after every ``migrate`` keeps working and gets the
narrower grant (docs/decisions.md, issue 45, branch sweepbook).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from .support import config_from_args

SWEEPS_IGNORED = ("orbchain custody signer-role: --sweeps is ignored (deprecated): the signer no longer books"
                  " ledger transactions, serve books what its sweeps record; the role gets the one signer's list")


def cmd_signer_role(args: argparse.Namespace) -> int:
    """Exit 0 with what was granted; 2 on SQLite or a role that cannot be restricted (nothing changed)."""
    from ..custody.signer_role import RoleRefused, grant_signer_role
    from ..infra.db import Database

    config = config_from_args(args)
    if args.sweeps:
        print(SWEEPS_IGNORED, file=sys.stderr)
    if not config.database_url.startswith("postgresql"):
        print("orbchain custody signer-role: the database is SQLite: there the signer runs inside `serve`"
              " ([signer] in_process) and there is no role to restrict; use PostgreSQL for a separate signer",
              file=sys.stderr)
        return 2

    async def grant() -> int:
        db = Database(config.database_url)
        await db.connect()
        try:
            done = await grant_signer_role(db, args.role)
        except RoleRefused as exc:
            print(f"orbchain custody signer-role: {exc}", file=sys.stderr)
            return 2
        finally:
            await db.disconnect()
        print("\n".join(done.lines()))
        print(f"set the signer's [signer] database_url to this role's DSN (e.g. postgresql://{args.role}@host/db);"
              " run this again after every `orbchain migrate` (`orbchain doctor` says when it is due)")
        return 0

    return asyncio.run(grant())


def add_signer_role_command(custody_sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    role = custody_sub.add_parser("signer-role", help="create or update the signer's least-privilege PostgreSQL"
                                  " role (idempotent; run after every migrate)")
    role.add_argument("role", help="the role's name, e.g. orbchain_signer (created, LOGIN, if missing)")
    role.add_argument("--sweeps", action="store_true", help=argparse.SUPPRESS)  # deprecated no-op, warned
    role.set_defaults(func=cmd_signer_role)
