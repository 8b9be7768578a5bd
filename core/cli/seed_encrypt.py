"""``orbchain secrets encrypt-seed`` and ``change-passphrase``: a seed file sealed, or sealed again under a new
passphrase (core/keys/seed_file.py).

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


NEW_PASSPHRASE_VARIABLE = "ORBCHAIN_SEED_FILE_NEW_PASSPHRASE"


def _asked_twice(prompt: str) -> str:
    first = getpass.getpass(prompt)
    if getpass.getpass("The same again: ") != first:
        raise ConfigError("the two passphrases differ; nothing changed")
    return first


def _no_terminal(where: str) -> ConfigError:
    return ConfigError(f"no passphrase: set {where}, or run this on a terminal")


def _passphrase() -> str:
    found = read_passphrase()
    if found is not None:
        return found[0]
    if not sys.stdin.isatty():
        raise _no_terminal(f"${PASSPHRASE_VARIABLE} (or the credential {CREDENTIAL_NAME})")
    return _asked_twice("Passphrase for the seed file: ")


def _new_passphrase() -> str:
    """The new passphrase: ``$ORBCHAIN_SEED_FILE_NEW_PASSPHRASE`` (scripted rotation), else asked twice."""
    given = os.environ.get(NEW_PASSPHRASE_VARIABLE, "").rstrip("\n")
    if given:
        return given
    if not sys.stdin.isatty():
        raise _no_terminal(f"${NEW_PASSPHRASE_VARIABLE}")
    return _asked_twice("New passphrase for the seed file: ")


def _own_seed_text(path: Path) -> str:
    """The stripped text of ``path`` when it is a regular file of the user running this (no symlink followed)."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist") from None
    if not stat.S_ISREG(found.st_mode):
        raise ConfigError(f"{path} is not a regular file (a symbolic link is not followed); nothing changed")
    if found.st_uid != os.geteuid():
        raise ConfigError(f"{path} belongs to user {found.st_uid}, not to the user running this; nothing changed")
    return path.read_text(encoding="utf-8").strip()


def _seal_in_place(path: Path, seed: str, passphrase: str) -> None:
    """Replace ``path`` by ``seed`` sealed under ``passphrase``, opened again first (written aside, renamed)."""
    sealed = encrypt_seed(seed, passphrase)
    if decrypt_seed(sealed, passphrase) != seed:  # pragma: no cover - AES-GCM round trip
        raise ConfigError("the encrypted seed did not open again; nothing changed")
    scratch = write_scratch(path.parent, path.name, sealed)
    try:
        os.replace(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)


def encrypt_seed_file(path: Path, passphrase: str) -> None:
    """Encrypt ``path`` in place; ``ConfigError`` (nothing changed) for anything but a plaintext seed of ours."""
    seed = _own_seed_text(path)
    if is_encrypted(seed):
        raise ConfigError(f"{path} is encrypted already; nothing changed")
    if not seed:
        raise ConfigError(f"{path} is empty; nothing changed")
    _seal_in_place(path, seed, passphrase)


def change_seed_passphrase(path: Path, current: str, new: str) -> None:
    """Seal an encrypted ``path`` again under ``new``: the seed (and every key) stays the same, a fresh salt and
    nonce are drawn; a wrong ``current`` or a plaintext file changes nothing."""
    text = _own_seed_text(path)
    if not is_encrypted(text):
        raise ConfigError(f"{path} is not encrypted: `orbchain secrets encrypt-seed` seals it; nothing changed")
    if new == current:
        raise ConfigError("the new passphrase is the current one; nothing changed")
    _seal_in_place(path, decrypt_seed(text, current, str(path)), new)


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


def cmd_change_passphrase(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        change_seed_passphrase(path, _current_passphrase(), _new_passphrase())
    except OSError as exc:
        raise ConfigError(f"cannot rewrite {exc.filename or path}: {exc.strerror}; nothing changed") from None
    print(f"sealed {path} again under the new passphrase (the seed and every address are unchanged). Replace the"
          f" passphrase where the signer reads it (${PASSPHRASE_VARIABLE} or the credential {CREDENTIAL_NAME})"
          " before its next start, and the file in your backups: an old copy still opens with the old one.")
    return 0


def _current_passphrase() -> str:
    found = read_passphrase()
    if found is not None:
        return found[0]
    if not sys.stdin.isatty():
        raise _no_terminal(f"${PASSPHRASE_VARIABLE} (or the credential {CREDENTIAL_NAME}) to the current one")
    return getpass.getpass("Current passphrase of the seed file: ")


def add_encrypt_seed_command(secrets_sub: "argparse._SubParsersAction[argparse.ArgumentParser]",
                             default_dir: str) -> None:
    encrypt = secrets_sub.add_parser("encrypt-seed", help="encrypt the seed file at rest with a passphrase"
                                                          f" (from ${PASSPHRASE_VARIABLE}, or asked)")
    encrypt.add_argument("--file", default=f"{default_dir}/seed", help=f"the seed file (default {default_dir}/seed)")
    encrypt.set_defaults(func=cmd_encrypt_seed)
    change = secrets_sub.add_parser("change-passphrase", help="seal an encrypted seed file again under a new"
                                    f" passphrase (current from ${PASSPHRASE_VARIABLE}, new from"
                                    f" ${NEW_PASSPHRASE_VARIABLE}, or asked)")
    change.add_argument("--file", default=f"{default_dir}/seed", help=f"the seed file (default {default_dir}/seed)")
    change.set_defaults(func=cmd_change_passphrase)
