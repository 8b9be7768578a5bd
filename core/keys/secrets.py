"""The gateway's own secrets: JWT signing secret, HD seed, receipt signing key.

Each comes from the config value, else from a file the config names. In
development, a missing secret is generated once into the data directory
(mode 0600) and the log says so, so ``make run`` needs no set-up; in
production a missing secret stops the start with a clear message. Secret
values never appear in logs or reprs.
"""

from __future__ import annotations

import base64
import logging
import os
import secrets as stdlib_secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nacl.signing import SigningKey

from ..infra.config import Config, ConfigError
from .seed_file import is_encrypted, open_seed

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Secrets:
    jwt_secret: bytes = field(repr=False)
    seed_material: str = field(repr=False)  # a BIP-39 mnemonic or a hex seed; "" when watch-only
    receipt_key: SigningKey = field(repr=False)
    # True when the gateway made the receipt key itself (development only):
    # GET /v1/common/receipt-public-key reports it as "ephemeral".
    receipt_key_generated: bool = False
    # A check's load (write=False): the development secrets the first start will generate into data_dir.
    to_generate: tuple[str, ...] = ()
    # The seed came from a file encrypted at rest (core/keys/seed_file.py); config check and doctor say so.
    seed_encrypted: bool = False


def _read_file(path: str, key: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"config key {key!r}: cannot read {path}: {exc.strerror}") from None


def write_scratch(directory: Path, name: str, value: str) -> Path:
    """``value`` written whole and synced to a new private (0600) file in ``directory``; its path.

    The name is hidden and random (``.NAME.<pid>.<random>``) and created
    exclusively without following a symbolic link, so nothing planted there is
    written through. The caller links or renames it into place, or unlinks it.
    """
    scratch = directory / f".{name}.{os.getpid()}.{stdlib_secrets.token_hex(4)}"
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(value + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise
    return scratch


def _generated(config: Config, filename: str, make: Callable[[], str], what: str, write: bool) -> str:
    """Read ``data_dir/filename`` or create it, saying which in the log; ``write=False`` (a check) only makes
    a value in memory: a check must not write, and the first start generates the file."""
    path = config.data_dir / filename
    if path.exists():
        log.info("using the development %s from %s", what, path)
        return path.read_text(encoding="utf-8").strip()
    if not write:
        return make()
    path.parent.mkdir(parents=True, exist_ok=True)
    value = make()
    # Written whole under a private name, then linked into place: a process
    # starting at the same moment on the same data_dir (serve --workers, two
    # hosts on one volume) either wins the link or reads the winner's complete
    # file, never a half-written or second secret.
    scratch = write_scratch(path.parent, filename, value)
    try:
        os.link(scratch, path)
    except FileExistsError:
        log.info("using the development %s another process just generated at %s", what, path)
        return path.read_text(encoding="utf-8").strip()
    finally:
        scratch.unlink(missing_ok=True)
    log.warning("generated a development %s at %s (set it in the config for production)", what, path)
    return value


@dataclass(frozen=True)
class _Wanted:
    """One secret: its value key and file key as the operator writes them, where development keeps it."""

    key: str
    file_key: str
    filename: str
    make: Callable[[], str]
    what: str


@dataclass
class _Resolver:
    """Resolves each secret; in production every missing one is collected, so one error names them all."""

    config: Config
    write: bool
    missing: list[str] = field(default_factory=list)
    made: list[str] = field(default_factory=list)  # development secrets generated (or, in a check, to be)

    def resolve(self, wanted: _Wanted, value: str, file_value: str) -> tuple[str, bool]:
        if value:
            return value, False
        if file_value:
            return _read_file(file_value, f"secrets.{wanted.file_key}"), False
        if not self.config.is_development:
            self.missing.append(f"'secrets.{wanted.key}' (or 'secrets.{wanted.file_key}')")
            return "", False
        if not (self.config.data_dir / wanted.filename).exists():
            self.made.append(wanted.what)
        return _generated(self.config, wanted.filename, wanted.make, wanted.what, self.write), True


def _new_mnemonic_placeholder() -> str:
    # A 256-bit hex seed; operators supply a BIP-39 mnemonic in production (`orbchain secrets init`).
    return stdlib_secrets.token_hex(32)


def new_jwt_secret() -> str:
    return stdlib_secrets.token_urlsafe(48)


def new_receipt_key() -> str:
    """A base64 32-byte Ed25519 seed, the form ``secrets.receipt_signing_key`` takes."""
    return base64.b64encode(bytes(SigningKey.generate())).decode()


def new_mnemonic() -> str:
    """A 24-word BIP-39 mnemonic (256 bits): what a production seed file holds; writable on paper."""
    from .bip39 import entropy_to_mnemonic

    return entropy_to_mnemonic(stdlib_secrets.token_bytes(32))


JWT = _Wanted("jwt_secret", "jwt_secret_file", "jwt_secret", new_jwt_secret, "JWT secret")
SEED = _Wanted("seed_mnemonic", "seed_file", "seed", _new_mnemonic_placeholder, "HD seed")
RECEIPT = _Wanted("receipt_signing_key", "receipt_signing_key_file", "receipt_signing_key", new_receipt_key,
                  "receipt signing key")


def load_secrets(config: Config, *, write: bool = True) -> Secrets:
    """The three secrets; ``write=False`` for a check, which reads but never creates a development file
    (``Secrets.to_generate`` then names what the first start will make)."""
    s = config.secrets
    resolver = _Resolver(config, write)
    jwt_text, _ = resolver.resolve(JWT, s.jwt_secret, s.jwt_secret_file)
    if config.signer.url:
        if s.seed_mnemonic or s.seed_file:
            raise ConfigError("[signer] url is set: this process must not hold the seed (the signer does);"
                              " remove 'secrets.seed_mnemonic' and 'secrets.seed_file' from its config")
        seed_text = ""  # a separate signer signs; deposit addresses come from account xpubs
    elif s.account_xpubs_file and not (s.seed_mnemonic or s.seed_file):
        seed_text = ""  # watch-only: derives deposit addresses from xpubs, signs nothing
    else:
        seed_text, _ = resolver.resolve(SEED, s.seed_mnemonic, s.seed_file)
    encrypted = bool(seed_text and s.seed_file and not s.seed_mnemonic and is_encrypted(seed_text))
    if encrypted:
        seed_text = open_seed(seed_text, f"secrets.seed_file ({s.seed_file})")
    elif seed_text and not config.is_development and write:
        log.warning("the seed is stored in plaintext: encrypt it at rest (`orbchain secrets encrypt-seed`,"
                    " docs/operations.md \"The seed encrypted at rest\") or keep it in an encrypted systemd"
                    " credential")
    key_text, generated = resolver.resolve(RECEIPT, s.receipt_signing_key, s.receipt_signing_key_file)
    if resolver.missing:
        raise ConfigError(f"required in production: {', '.join(resolver.missing)}")
    if len(jwt_text) < 32:
        raise ConfigError("config key 'secrets.jwt_secret' must be at least 32 characters")
    try:
        raw_key = base64.b64decode(key_text, validate=True)
        if len(raw_key) != 32:
            raise ValueError
        receipt_key = SigningKey(raw_key)
    except ValueError:
        raise ConfigError("config key 'secrets.receipt_signing_key' must be a base64 32-byte Ed25519 seed") from None
    return Secrets(jwt_text.encode(), seed_text, receipt_key, receipt_key_generated=generated,
                   to_generate=() if write else tuple(resolver.made), seed_encrypted=encrypted)


def check_signing_role(config: Config, secrets: Secrets) -> None:
    """Who signs payouts must be said in production: a seed here without ``[signer] in_process = true`` stops
    the start, so the seed never lands on an internet-facing host by default; said, the log names the risk."""
    if config.signer.url or not secrets.seed_material or config.is_development:
        return
    if not config.signer.in_process:
        raise ConfigError("this process holds the seed but no signer is configured: run `orbchain signer` on its"
                          " own host and set [signer] url here (docs/operations.md \"Custody: a signer on its own"
                          " host\"), or say [signer] in_process = true to sign here")
    log.warning("this host is also the signer ([signer] in_process = true): the seed is in the process that"
                " faces the internet")
