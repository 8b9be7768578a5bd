"""The seed file encrypted at rest: Argon2id from a passphrase, then AES-256-GCM.

A stolen disk, backup or snapshot of the signer's host then holds no usable
seed; the passphrase arrives only at start, from the environment
(``ORBCHAIN_SEED_FILE_PASSPHRASE``) or a systemd credential
(``$CREDENTIALS_DIRECTORY/seed_file_passphrase``), never from the config file
that sits beside the seed. The file is one line of JSON whose header (format,
version, KDF and its parameters, salt) is the cipher's associated data, so an
edited parameter fails authentication like an edited ciphertext; the
parameters are read from the file, so stronger ones later still open old
files. Not the BIP-39 passphrase (``secrets.seed_passphrase``): that one
changes which keys the seed derives; this one only locks the file.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any, Mapping

from ..infra.config import ConfigError

FORMAT = "orbchain-encrypted-seed"
VERSION = 1
PASSPHRASE_VARIABLE = "ORBCHAIN_SEED_FILE_PASSPHRASE"
CREDENTIAL_NAME = "seed_file_passphrase"
MIN_PASSPHRASE_CHARS = 12
# RFC 9106's second recommended option (64 MiB, 3 passes, 4 lanes): about half a second once per start.
KDF_PARAMS = {"iterations": 3, "lanes": 4, "memory_cost": 65536}
_BOUNDS = {"iterations": (1, 64), "lanes": (1, 64), "memory_cost": (8, 4 * 1024 * 1024)}  # a hostile file cannot
# make the start allocate terabytes


class SeedFileError(ConfigError):
    """The encrypted seed cannot be opened: no passphrase, a wrong one, or a damaged file (one line, no trace)."""


def is_encrypted(text: str) -> bool:
    return text.lstrip().startswith("{") and FORMAT in text


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _header(kdf: Mapping[str, Any], salt: str) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "kdf": "argon2id", "params": dict(kdf), "salt": salt}


def _aad(header: Mapping[str, Any]) -> bytes:
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode()


def _key(passphrase: str, salt: bytes, params: Mapping[str, int]) -> bytes:
    from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

    return Argon2id(salt=salt, length=32, iterations=params["iterations"], lanes=params["lanes"],
                    memory_cost=params["memory_cost"]).derive(passphrase.encode())


def encrypt_seed(seed: str, passphrase: str) -> str:
    """The file text (one JSON line) holding ``seed`` under ``passphrase``."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if len(passphrase) < MIN_PASSPHRASE_CHARS:
        raise SeedFileError(f"the seed file's passphrase must be at least {MIN_PASSPHRASE_CHARS} characters")
    salt, nonce = os.urandom(16), os.urandom(12)
    header = _header(KDF_PARAMS, _b64(salt))
    sealed = AESGCM(_key(passphrase, salt, KDF_PARAMS)).encrypt(nonce, seed.strip().encode(), _aad(header))
    return json.dumps({**header, "nonce": _b64(nonce), "ciphertext": _b64(sealed)}, sort_keys=True)


def _parse(text: str, where: str) -> tuple[dict[str, Any], dict[str, int], bytes, bytes, bytes]:
    try:
        found = json.loads(text)
        params = {k: int(found["params"][k]) for k in KDF_PARAMS}
        if found["format"] != FORMAT or found["version"] != VERSION or found["kdf"] != "argon2id" \
                or set(found["params"]) != set(KDF_PARAMS):
            raise ValueError
        if any(not low <= params[k] <= high for k, (low, high) in _BOUNDS.items()):
            raise ValueError
        salt, nonce = base64.b64decode(found["salt"], validate=True), base64.b64decode(found["nonce"], validate=True)
        sealed = base64.b64decode(found["ciphertext"], validate=True)
        if len(salt) < 16 or len(nonce) != 12:
            raise ValueError
    except (ValueError, KeyError, TypeError, AttributeError):
        raise SeedFileError(f"{where}: not a readable encrypted seed file (damaged, or another version)") from None
    return _header(params, found["salt"]), params, salt, nonce, sealed


def decrypt_seed(text: str, passphrase: str, where: str = "the seed file") -> str:
    """The seed in ``text``; ``SeedFileError`` for a wrong passphrase or any change to the file."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    header, params, salt, nonce, sealed = _parse(text, where)
    try:
        plain = AESGCM(_key(passphrase, salt, params)).decrypt(nonce, sealed, _aad(header))
    except InvalidTag:
        raise SeedFileError(f"{where}: wrong passphrase, or the file was changed (it does not authenticate);"
                            " refusing to start") from None
    return plain.decode()


def read_passphrase(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(passphrase, where it came from) from the environment, else the systemd credential; None when neither."""
    env = os.environ if environ is None else environ
    if env.get(PASSPHRASE_VARIABLE):
        return env[PASSPHRASE_VARIABLE].rstrip("\n"), f"${PASSPHRASE_VARIABLE}"
    directory = env.get("CREDENTIALS_DIRECTORY")
    if directory:
        path = Path(directory) / CREDENTIAL_NAME
        try:
            return path.read_text(encoding="utf-8").rstrip("\n"), f"credential {CREDENTIAL_NAME}"
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SeedFileError(f"cannot read the credential {path}: {exc.strerror}") from None
    return None


def open_seed(text: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    """The seed of an encrypted file's ``text``, with the passphrase from the environment or credential."""
    found = read_passphrase(environ)
    if found is None:
        raise SeedFileError(f"{where} is encrypted: give its passphrase in ${PASSPHRASE_VARIABLE} or the systemd"
                            f" credential {CREDENTIAL_NAME} (never in the config file)")
    return decrypt_seed(text, found[0], where)
