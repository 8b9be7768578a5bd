"""``orbchain secrets init``: a production gateway's secret files, written once, safely.

In development the gateway makes its own secrets under ``./var``; production
refuses to start without them (core/infra/secrets.py) and an operator used to
make them by hand, with whatever permissions the shell's umask gave. This
writes the HD seed (a 24-word BIP-39 mnemonic), the receipt signing key, the
JWT secret and the metrics token as 0600 files in a 0700 directory, the names
``deploy/orbchain.service`` and ``deploy/compose.yaml`` load, and prints what
to back up and what losing each means. An existing file is never overwritten
unless named with ``--replace``, and then the old one is kept beside it:
replacing the seed by accident would strand every deposit address's funds.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from secrets import token_urlsafe
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..infra.config import ConfigError
from ..infra.secrets import new_jwt_secret, new_mnemonic, new_receipt_key

DEFAULT_DIR = "/etc/orbchain/credentials"  # where deploy/orbchain.service's LoadCredential= reads them


@dataclass(frozen=True)
class SecretFile:
    name: str  # the file name, also the credential's name in the systemd unit and compose file
    setting: str  # the config key naming the file
    make: Callable[[], str]
    loss: str  # what losing it means (docs/operations.md, "What to back up", says the same)


SECRET_FILES = (
    SecretFile("seed", "secrets.seed_file", new_mnemonic,
               "EVERY DEPOSIT ADDRESS AND THE FUNDS ON THEM ARE UNRECOVERABLE. Write the 24 words on paper and"
               " keep them offline (a safe); the seed never changes"),
    SecretFile("receipt_signing_key", "secrets.receipt_signing_key_file", new_receipt_key,
               "receipts signed so far no longer match the published key, and merchants who pinned it must"
               " pin the new one"),
    SecretFile("jwt_secret", "secrets.jwt_secret_file", new_jwt_secret,
               "every dashboard session ends (a new one only signs everyone out)"),
    SecretFile("metrics_token", "metrics.token_file", lambda: token_urlsafe(32),
               "the /metrics scraper is refused until it gets the new token"),
)
NAMES = tuple(s.name for s in SECRET_FILES)


def _prepare(directory: Path) -> list[str]:
    """Create ``directory`` 0700 (tightening an existing one); notes for the operator."""
    notes = []
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = stat.S_IMODE(directory.stat().st_mode)
        if mode != 0o700:
            os.chmod(directory, 0o700)
            notes.append(f"{directory}: permissions {mode:04o} tightened to 0700")
    except OSError as exc:
        raise ConfigError(f"cannot prepare {directory}: {exc.strerror} (run as root, or choose another"
                          " --dir)") from None
    return notes


def _write(path: Path, value: str) -> None:
    """A new 0600 file holding ``value``; refuses (FileExistsError) to replace one."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.fchmod(fd, 0o600)  # whatever the umask
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(value + "\n")


def init_secrets(directory: Path, replace: frozenset[str] = frozenset(), keep_existing: bool = False) -> int:
    """Write the missing secret files; 1 (writing nothing) when one exists that is neither kept nor replaced."""
    existing = [s for s in SECRET_FILES if (directory / s.name).exists()]
    blocking = [s for s in existing if s.name not in replace]
    if blocking and not (keep_existing or replace):  # naming what to replace keeps the rest
        for s in blocking:
            print(f"orbchain: {directory / s.name} exists, not overwritten (losing it: {s.loss})", file=sys.stderr)
        print("orbchain: nothing written. --keep-existing writes only the missing files; --replace NAME"
              " overwrites that one, keeping the others (and the old file beside it)", file=sys.stderr)
        return 1
    notes = _prepare(directory)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for s in SECRET_FILES:
        path = directory / s.name
        if s in existing and s.name not in replace:
            notes.append(f"kept     {path} (it exists)")
            continue
        if s in existing:
            kept = path.with_name(f"{s.name}.replaced-{stamp}")
            os.replace(path, kept)
            notes.append(f"REPLACED {path}; the old one is kept as {kept} (losing it: {s.loss})")
        _write(path, s.make())
        notes.append(f"wrote    {path} (0600)")
    for note in notes:
        print(note)
    print(f"\nBack up now, offline (paper, an encrypted medium), and keep {directory} readable by root only:")
    for s in SECRET_FILES:
        print(f"  {s.name:<20} ({s.setting}) losing it: {s.loss}.")
    print("The database needs its own backups (docs/operations.md, \"Backups\").\n"
          f"The gateway reads these files through deploy/orbchain.service's LoadCredential= (from {DEFAULT_DIR}),"
          " deploy/compose.yaml's secrets (from deploy/secrets/), or the config keys named above.")
    return 0


def cmd_secrets_init(args: argparse.Namespace) -> int:
    try:
        return init_secrets(Path(args.dir), frozenset(args.replace), args.keep_existing)
    except OSError as exc:  # a file that cannot be written: one line, no traceback
        raise ConfigError(f"cannot write {exc.filename or args.dir}: {exc.strerror}") from None


def add_secrets_command(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    secrets = sub.add_parser("secrets", help="production secret files")
    secrets_sub = secrets.add_subparsers(dest="secrets_command", required=True)
    init = secrets_sub.add_parser("init", help="write the seed, receipt key, JWT secret and metrics token"
                                               " (0600 files in a 0700 directory) and say what to back up")
    init.add_argument("--dir", default=DEFAULT_DIR, help=f"where to write them (default {DEFAULT_DIR})")
    init.add_argument("--keep-existing", action="store_true", help="write only the missing files")
    init.add_argument("--replace", action="append", default=[], choices=NAMES, metavar="NAME",
                      help=f"overwrite this existing file, keeping the old one beside it ({', '.join(NAMES)})")
    init.set_defaults(func=cmd_secrets_init)
