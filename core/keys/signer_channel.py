"""The serve-to-signer channel's credential: HMAC-signed requests with a timestamp and a one-time nonce.

Why signed requests rather than mutual TLS (docs/decisions.md, "A signer
process"): no certificate authority to run and rotate, the same secrets-file
discipline as the seed and the JWT secret, and a replay window the signer
enforces itself. The key is 32 random bytes in a file both hosts hold
(``orbchain secrets signer-key``); it authenticates, the socket's own
permissions (Unix) or a private network (TCP) keep it off the internet.

The MAC covers ``timestamp \\n nonce \\n body``: a body changed in transit, a
request older or newer than the window, or a nonce seen inside the window is
refused. A nonce is remembered only for the window, so the set stays small.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets as stdlib_secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..infra.config import ConfigError

TIMESTAMP_HEADER = "X-Orbchain-Timestamp"
NONCE_HEADER = "X-Orbchain-Nonce"
MAC_HEADER = "X-Orbchain-Signature"
KEY_BYTES = 32


class ChannelRefused(Exception):
    """A request the signer does not answer: no credential, a wrong one, stale, or replayed."""


def new_channel_key() -> str:
    """A fresh channel key, hex, the form the key file holds."""
    return stdlib_secrets.token_hex(KEY_BYTES)


def read_channel_key(path: str) -> bytes:
    """The key in ``path`` (hex, 32 bytes); ``ConfigError`` naming the key and what is wrong."""
    if not path:
        raise ConfigError("config key 'signer.key_file' is required: create it with `orbchain secrets signer-key`")
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"config key 'signer.key_file': cannot read {path}: {exc.strerror}") from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise ConfigError(f"config key 'signer.key_file': {path} must hold {KEY_BYTES} bytes in hex")
    return key


def _mac(key: bytes, timestamp: str, nonce: str, body: bytes) -> str:
    return hmac.new(key, timestamp.encode() + b"\n" + nonce.encode() + b"\n" + body, hashlib.sha256).hexdigest()


def signed_headers(key: bytes, body: bytes, now: int) -> dict[str, str]:
    """The headers that authenticate ``body`` sent at ``now``, with a fresh nonce."""
    timestamp, nonce = str(int(now)), stdlib_secrets.token_hex(16)
    return {TIMESTAMP_HEADER: timestamp, NONCE_HEADER: nonce, MAC_HEADER: _mac(key, timestamp, nonce, body)}


@dataclass
class RequestVerifier:
    """Checks each request's credential; remembers nonces for the window so none is accepted twice."""

    key: bytes = field(repr=False)
    window_seconds: int
    seen: dict[str, int] = field(default_factory=dict)  # nonce -> timestamp of its request

    def verify(self, headers: Mapping[str, str], body: bytes, now: int) -> None:
        """Return quietly for a fresh, authentic request; ``ChannelRefused`` saying why otherwise."""
        timestamp, nonce, mac = (headers.get(name, "") for name in (TIMESTAMP_HEADER, NONCE_HEADER, MAC_HEADER))
        if not (timestamp and nonce and mac):
            raise ChannelRefused("no credential")
        if not hmac.compare_digest(str(mac), _mac(self.key, str(timestamp), str(nonce), body)):
            raise ChannelRefused("wrong credential")
        if not str(timestamp).isdigit() or abs(now - int(timestamp)) > self.window_seconds:
            raise ChannelRefused("stale request")
        self._forget_before(now - self.window_seconds)
        if nonce in self.seen:
            raise ChannelRefused("replayed request")
        self.seen[str(nonce)] = int(timestamp)

    def _forget_before(self, cutoff: int) -> None:
        for old in [n for n, at in self.seen.items() if at < cutoff]:
            del self.seen[old]
