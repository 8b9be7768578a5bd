"""``orbchain secrets init``: a production gateway's secret files, written once, safely.

In development the gateway makes its own secrets under ``./var``; production
refuses to start without them (core/keys/secrets.py) and an operator used to
make them by hand, with whatever permissions the shell's umask gave. This
writes the HD seed (a 24-word BIP-39 mnemonic), the receipt signing key, the
JWT secret, the metrics token and the signer channel's key as 0600 files in a 0700 directory, the names
``deploy/orbchain.service`` and ``deploy/compose.yaml`` load, and prints what
to back up and what losing each means. An existing file is never overwritten
unless named with ``--replace``, and then the old one is kept beside it:
replacing the seed by accident would strand every deposit address's funds.

All or none (issue 42): every target is checked before anything is written
(a planted symbolic link, something that is not a file, another user's file
or folder stop the command), the new files are written under scratch names
and linked into place together, and a failure on the way leaves nothing new.
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
from ..keys.secrets import new_jwt_secret, new_mnemonic, new_receipt_key, write_scratch
from ..keys.signer_channel import new_channel_key
from .seed_encrypt import add_encrypt_seed_command

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
    SecretFile("signer_key", "signer.key_file", new_channel_key,
               "the signer refuses the web process's requests until both hold the new key (copy it to both)"),
)
NAMES = tuple(s.name for s in SECRET_FILES)


@dataclass(frozen=True)
class Step:
    """What ``init`` does with one secret file: ``write`` a new one, ``replace`` it (the old one kept as
    ``kept``), or ``keep`` the one there."""

    secret: SecretFile
    path: Path
    action: str
    kept: Path | None = None


def _kind(path: Path) -> os.stat_result | None:
    """``lstat`` of ``path`` (a symbolic link is itself, never what it points to); None when nothing is there."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _owner_problem(path: Path, found: os.stat_result) -> str | None:
    if found.st_uid != os.geteuid():
        return f"{path} belongs to user {found.st_uid}, not to the user running this: refusing to use it"
    return None


def _target_problem(path: Path, found: os.stat_result | None) -> str | None:
    """Why a secret's target may not be used, or None: only nothing, or a regular file of ours, will do."""
    if found is None:
        return None
    if stat.S_ISLNK(found.st_mode):
        return (f"{path} is a symbolic link: refusing to write through it or keep it (a secret must be a file"
                " in this folder; remove the link if you did not make it)")
    if not stat.S_ISREG(found.st_mode):
        return f"{path} exists and is not a regular file: refusing to use it"
    return _owner_problem(path, found)


def _folder_problem(directory: Path) -> str | None:
    """Why the folder may not hold the secrets, or None (it may not exist yet)."""
    try:
        found = os.stat(directory)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(found.st_mode):
        return f"{directory} exists and is not a folder"
    return _owner_problem(directory, found)


def plan(directory: Path, replace: frozenset[str], keep_existing: bool) -> tuple[list[Step], list[str], list[str]]:
    """Every file's step, checked before anything is written: (steps, problems, blocking).

    ``problems`` (a planted symbolic link, something not a file, another
    user's file or folder, a name taken for the replaced file) and
    ``blocking`` (a file that exists and was neither kept nor replaced) each
    stop the command before it writes anything.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    steps, problems, blocking = [], [], []
    folder = _folder_problem(directory)
    if folder is not None:
        return [], [folder], []
    for secret in SECRET_FILES:
        path = directory / secret.name
        found = _kind(path)
        problem = _target_problem(path, found)
        if problem is not None:
            problems.append(problem)
        elif found is None:
            steps.append(Step(secret, path, "write"))
        elif secret.name in replace:
            kept = path.with_name(f"{secret.name}.replaced-{stamp}")
            if _kind(kept) is not None:
                problems.append(f"{kept} exists already: refusing to overwrite it")
            steps.append(Step(secret, path, "replace", kept))
        elif keep_existing or replace:  # naming what to replace keeps the rest
            steps.append(Step(secret, path, "keep"))
        else:
            blocking.append(f"{path} exists, not overwritten (losing it: {secret.loss})")
    return steps, problems, blocking


def _missing_folders(directory: Path) -> list[Path]:
    """The folders ``mkdir -p directory`` would create, deepest first (removed again if nothing is written)."""
    return [p for p in (directory, *directory.parents) if not p.exists()]


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


def _place(steps: list[Step], scratch: dict[Path, Path]) -> list[str]:
    """Link every written scratch file into place, all or none: a failure puts back what was placed."""
    placed: list[Step] = []
    try:
        for step in steps:
            new = scratch[step.path]
            if step.action == "replace":
                assert step.kept is not None, "a replace step names where the old file goes"
                os.link(step.path, step.kept, follow_symlinks=False)  # the old one stays, under its new name
                placed.append(step)
                os.replace(new, step.path)
            else:
                os.link(new, step.path)  # refuses anything that appeared there since the check
                placed.append(step)
    except OSError:
        for step in reversed(placed):
            if step.action == "replace":
                assert step.kept is not None
                os.replace(step.kept, step.path)
            else:
                step.path.unlink(missing_ok=True)
        raise
    notes = []
    for step in steps:
        if step.action == "replace":
            notes.append(f"REPLACED {step.path}; the old one is kept as {step.kept} (losing it: {step.secret.loss})")
        notes.append(f"wrote    {step.path} (0600)")
    return notes


def _tighten(steps: list[Step]) -> list[str]:
    """Kept files readable by others are made 0600 (they were checked to be regular files of ours)."""
    notes = []
    for step in steps:
        mode = stat.S_IMODE(os.lstat(step.path).st_mode)
        if mode & 0o077:
            os.chmod(step.path, 0o600)
            notes.append(f"kept     {step.path} (it exists; permissions {mode:04o} tightened to 0600)")
        else:
            notes.append(f"kept     {step.path} (it exists)")
    return notes


def _write_all(directory: Path, steps: list[Step]) -> list[str]:
    """Write every new secret under a scratch name, then place them all; nothing new is left on a failure."""
    created = _missing_folders(directory)
    notes = _prepare(directory)
    writes = [s for s in steps if s.action != "keep"]
    scratch: dict[Path, Path] = {}
    try:
        for step in writes:
            scratch[step.path] = write_scratch(directory, step.secret.name, step.secret.make())
        placed = _place(writes, scratch)
    except BaseException:
        for folder in created:  # only if empty: a folder that held nothing before holds nothing again
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    finally:
        for path in scratch.values():
            path.unlink(missing_ok=True)
    return notes + _tighten([s for s in steps if s.action == "keep"]) + placed


def init_secrets(directory: Path, replace: frozenset[str] = frozenset(), keep_existing: bool = False) -> int:
    """Write the missing secret files, all or none; 1 (writing nothing) when a target may not be used.

    Every target is checked first (a symbolic link, something not a file,
    another user's file, a file neither kept nor replaced stop it); then each
    new secret is written under a scratch name and all are linked into
    place, and a failure on the way removes what was placed (a replaced file
    comes back). A folder it created for nothing is removed again.
    """
    steps, problems, blocking = plan(directory, replace, keep_existing)
    for line in problems or blocking:
        print(f"orbchain: {line}", file=sys.stderr)
    if problems:
        print("orbchain: nothing written.", file=sys.stderr)
        return 1
    if blocking:
        print("orbchain: nothing written. --keep-existing writes only the missing files; --replace NAME"
              " overwrites that one, keeping the others (and the old file beside it)", file=sys.stderr)
        return 1
    try:
        notes = _write_all(directory, steps)
    except OSError as exc:
        raise ConfigError(f"cannot write {exc.filename or directory}: {exc.strerror}; nothing was written") from None
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
    add_encrypt_seed_command(secrets_sub, DEFAULT_DIR)
