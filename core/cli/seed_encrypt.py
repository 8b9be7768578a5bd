"""``orbchain secrets encrypt-seed``: replace a plaintext seed file by its encrypted form (core/keys/seed_file.py).

The passphrase comes from where the signer will read it (``$ORBCHAIN_SEED_FILE_PASSPHRASE`` or the systemd
credential), else it is asked twice on the terminal. The encrypted text is opened again before it replaces the
file (written under a scratch name, then renamed over it), so a mistake never leaves a seed nobody can open.
"""

from __future__ import annotations

import argparse
import getpass
import os
import stat
import sys
from pathlib import Path

from ..infra.config import ConfigError
from ..keys.secrets import write_scratch
from ..keys.seed_file import (CREDENTIAL_NAME, PASSPHRASE_VARIABLE, decrypt_seed, encrypt_seed, is_encrypted,
                              read_passphrase)


def _passphrase() -> str:
    found = read_passphrase()
    if found is not None:
        return found[0]
    if not sys.stdin.isatty():
        raise ConfigError(f"no passphrase: set ${PASSPHRASE_VARIABLE} (or the credential {CREDENTIAL_NAME}),"
                          " or run this on a terminal")
    first = getpass.getpass("Passphrase for the seed file: ")
    if getpass.getpass("The same again: ") != first:
        raise ConfigError("the two passphrases differ; nothing changed")
    return first


def encrypt_seed_file(path: Path, passphrase: str) -> None:
    """Encrypt ``path`` in place; ``ConfigError`` (nothing changed) for anything but a plaintext seed of ours."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist") from None
    if not stat.S_ISREG(found.st_mode):
        raise ConfigError(f"{path} is not a regular file (a symbolic link is not followed); nothing changed")
    if found.st_uid != os.geteuid():
        raise ConfigError(f"{path} belongs to user {found.st_uid}, not to the user running this; nothing changed")
    seed = path.read_text(encoding="utf-8").strip()
    if is_encrypted(seed):
        raise ConfigError(f"{path} is encrypted already; nothing changed")
    if not seed:
        raise ConfigError(f"{path} is empty; nothing changed")
    sealed = encrypt_seed(seed, passphrase)
    if decrypt_seed(sealed, passphrase) != seed:  # pragma: no cover - AES-GCM round trip
        raise ConfigError("the encrypted seed did not open again; nothing changed")
    scratch = write_scratch(path.parent, path.name, sealed)
    try:
        os.replace(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)


def cmd_encrypt_seed(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        encrypt_seed_file(path, _passphrase())
    except OSError as exc:
        raise ConfigError(f"cannot rewrite {exc.filename or path}: {exc.strerror}; nothing changed") from None
    print(f"encrypted {path} (Argon2id + AES-256-GCM). The signer (and an in-process serve) now needs the passphrase"
          f" at start: ${PASSPHRASE_VARIABLE} or the systemd credential {CREDENTIAL_NAME}.\n"
          "Keep the passphrase apart from the file's backups, and the 24 words on paper: the passphrase alone"
          " recovers nothing, and losing it strands the file (not the paper).\n"
          "The plaintext may survive in the filesystem's free blocks and in earlier backups: replace those.")
    return 0


def add_encrypt_seed_command(secrets_sub: "argparse._SubParsersAction[argparse.ArgumentParser]",
                             default_dir: str) -> None:
    encrypt = secrets_sub.add_parser("encrypt-seed", help="encrypt the seed file at rest with a passphrase"
                                                          f" (from ${PASSPHRASE_VARIABLE}, or asked)")
    encrypt.add_argument("--file", default=f"{default_dir}/seed", help=f"the seed file (default {default_dir}/seed)")
    encrypt.set_defaults(func=cmd_encrypt_seed)
