"""Who may read an operator's metrics: the bearer token of ``[metrics] token`` / ``token_file``.

Shared by the web's ``/metrics`` (web/routes/operations.py) and the signer's own (core/custody/signer.py), so
both ask for the same token and compare it the same way (constant time).
"""

from __future__ import annotations

import hmac
from functools import lru_cache
from pathlib import Path

from .config import ConfigError, MetricsConfig


@lru_cache(maxsize=8)
def _file_token(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"config key 'metrics.token_file': cannot read {path}: {exc.strerror}") from None


def metrics_token(config: MetricsConfig) -> str:
    """The bearer token /metrics asks for ("" when none is configured)."""
    return _file_token(config.token_file) if config.token_file else config.token


def bearer_matches(authorization: str, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``Bearer <token>`` (``token`` non-empty)."""
    scheme, _, value = authorization.partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())
