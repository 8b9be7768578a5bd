"""Operator configuration: one TOML file plus ``ORBCHAIN_*`` environment overrides.

Everything is validated when the process starts, so a typo in a key or a
wrong type stops the gateway with a message naming the key instead of
surfacing later as a confusing runtime error.

Environment overrides use ``ORBCHAIN_<SECTION>__<KEY>`` (double underscore
between section and key), plus a few short aliases operators expect:
``ORBCHAIN_HOST``, ``ORBCHAIN_PORT``, ``ORBCHAIN_DATABASE_URL``,
``ORBCHAIN_ALLOW_PRIVATE_URLS`` and ``ORBCHAIN_MAINTENANCE``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Mapping, Sequence, overload

ENV_PREFIX = "ORBCHAIN_"
ENV_ALIASES = {
    "ORBCHAIN_HOST": ("server", "host"),
    "ORBCHAIN_PORT": ("server", "port"),
    "ORBCHAIN_BASE_URL": ("server", "base_url"),
    "ORBCHAIN_DATA_DIR": ("server", "data_dir"),
    "ORBCHAIN_ENVIRONMENT": ("server", "environment"),
    "ORBCHAIN_MAINTENANCE": ("server", "maintenance"),
    "ORBCHAIN_DATABASE_URL": ("database", "url"),
    "ORBCHAIN_ALLOW_PRIVATE_URLS": ("webhooks", "allow_private_urls"),
}
ENVIRONMENTS = ("development", "production")
LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


class ConfigError(ValueError):
    """A configuration value is missing, unknown or of the wrong type."""


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    base_url: str = ""
    data_dir: str = "./var"
    environment: str = "development"
    maintenance: bool = False
    trust_forwarded_for: bool = False
    # The bounded pool for CPU-heavy work (core/cpu_pool.py): threads, and jobs that may wait for one.
    cpu_workers: int = 2
    cpu_queue: int = 64


@dataclass(frozen=True)
class DatabaseConfig:
    url: str = ""


@dataclass(frozen=True)
class SecretsConfig:
    jwt_secret: str = ""
    jwt_secret_file: str = ""
    seed_mnemonic: str = ""
    seed_file: str = ""
    seed_passphrase: str = ""
    # Watch-only processes: account xpubs exported by `orbchain keys export-xpubs`.
    account_xpubs_file: str = ""
    receipt_signing_key: str = ""
    receipt_signing_key_file: str = ""


@dataclass(frozen=True)
class FeesConfig:
    default_fee_percent: str = "1"


@dataclass(frozen=True)
class WebhooksConfig:
    allow_private_urls: bool = False
    timeout_seconds: int = 10
    max_attempts: int = 5
    tick_seconds: int = 5


@dataclass(frozen=True)
class RateLimitConfig:
    enabled: bool = True
    read_per_minute: int = 300
    write_per_minute: int = 60
    auth_per_minute: int = 10
    public_page_per_minute: int = 60
    # Public routes whose answer costs real CPU even when cached work is skipped (GET /tgapp/qr), per IP.
    cpu_per_minute: int = 30
    # Failed authentications (bad key, token or IP allowlist) per client IP.
    auth_failures_per_minute: int = 20


@dataclass(frozen=True)
class PluginsConfig:
    blocked: tuple[str, ...] = ()


@dataclass(frozen=True)
class SchedulerConfig:
    enabled: bool = True


@dataclass(frozen=True)
class MetricsConfig:
    """``/metrics``: served only when a bearer token or a separate listen address is configured."""

    token: str = ""
    token_file: str = ""
    # "host:port" of a listener that serves only /metrics and /ready (then not on the main port).
    listen: str = ""
    # Where ``serve --workers N`` keeps the per-process metric files (default <data_dir>/metrics).
    multiprocess_dir: str = ""
    # Seconds between ``ledger.check`` job runs; 0 turns the job off.
    ledger_check_seconds: int = 3600


@dataclass(frozen=True)
class ReadinessConfig:
    """``/ready``: when a chain counts as synced, and how long a node may take to answer."""

    max_lag_blocks: int = 6
    node_timeout_seconds: int = 3


@dataclass(frozen=True)
class LoggingConfig:
    """``format`` text (default) or json (one object per line); ``access_log`` one line per request."""

    format: str = "text"
    access_log: bool = False
    level: str = "INFO"


@dataclass(frozen=True)
class Config:
    """The whole validated configuration; immutable once loaded."""

    server: ServerConfig = field(default_factory=ServerConfig)
    database: DatabaseConfig = field(default_factory=DatabaseConfig)
    secrets: SecretsConfig = field(default_factory=SecretsConfig)
    fees: FeesConfig = field(default_factory=FeesConfig)
    webhooks: WebhooksConfig = field(default_factory=WebhooksConfig)
    rate_limits: RateLimitConfig = field(default_factory=RateLimitConfig)
    plugins: PluginsConfig = field(default_factory=PluginsConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    readiness: ReadinessConfig = field(default_factory=ReadinessConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    # Per-plugin blocks, ``[plugin.<name>]``: validated by each plugin at startup.
    plugin: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str = "<defaults>"

    @property
    def data_dir(self) -> Path:
        return Path(self.server.data_dir).resolve()

    @property
    def database_url(self) -> str:
        """The configured DSN, or an SQLite file under the data directory."""
        if self.database.url:
            return self.database.url
        # Four slashes: the absolute path keeps its own leading slash.
        return f"sqlite+aiosqlite:///{self.data_dir / 'orbchain.db'}"

    @property
    def base_url(self) -> str:
        if self.server.base_url:
            return self.server.base_url.rstrip("/")
        return f"http://{self.server.host}:{self.server.port}"

    @property
    def is_development(self) -> bool:
        return self.server.environment == "development"

    def plugin_config(self, name: str) -> Mapping[str, Any]:
        """The ``[plugin.<name>]`` block, empty when absent."""
        return self.plugin.get(name, {})

    def with_overrides(self, **sections: Mapping[str, Any]) -> "Config":
        """A copy with some keys of some sections replaced (tests, CLI flags)."""
        return _build(_merge(_as_raw(self), sections), self.source)


_SECTIONS = {f.name: f.type for f in fields(Config) if f.name not in ("plugin", "source")}


def _section_class(name: str) -> type:
    return {
        "server": ServerConfig,
        "database": DatabaseConfig,
        "secrets": SecretsConfig,
        "fees": FeesConfig,
        "webhooks": WebhooksConfig,
        "rate_limits": RateLimitConfig,
        "plugins": PluginsConfig,
        "scheduler": SchedulerConfig,
        "metrics": MetricsConfig,
        "readiness": ReadinessConfig,
        "logging": LoggingConfig,
    }[name]


def _coerce(key: str, value: Any, default: Any) -> Any:
    """Coerce ``value`` to the type of ``default``; environment values arrive as text."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off", ""):
            return False
        raise ConfigError(f"config key {key!r} must be a boolean, got {value!r}")
    if isinstance(default, int):
        if isinstance(value, bool):
            raise ConfigError(f"config key {key!r} must be an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        raise ConfigError(f"config key {key!r} must be an integer, got {value!r}")
    if isinstance(default, tuple):
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"config key {key!r} must be a list of strings")
        return tuple(value)
    if not isinstance(value, str):
        raise ConfigError(f"config key {key!r} must be a string, got {value!r}")
    return value


def _build(raw: Mapping[str, Any], source: str) -> Config:
    sections: dict[str, Any] = {}
    for name, values in raw.items():
        if name == "plugin":
            if not isinstance(values, Mapping) or not all(isinstance(v, Mapping) for v in values.values()):
                raise ConfigError("config key 'plugin' must hold tables like [plugin.<name>]")
            sections["plugin"] = {k: dict(v) for k, v in values.items()}
            continue
        if name not in _SECTIONS:
            raise ConfigError(f"unknown config section {name!r} (known: {', '.join(sorted(_SECTIONS))}, plugin)")
        if not isinstance(values, Mapping):
            raise ConfigError(f"config key {name!r} must be a table")
        cls = _section_class(name)
        defaults = cls()
        known = {f.name for f in fields(cls)}
        kwargs = {}
        for key, value in values.items():
            if key not in known:
                raise ConfigError(f"unknown config key '{name}.{key}' (known: {', '.join(sorted(known))})")
            kwargs[key] = _coerce(f"{name}.{key}", value, getattr(defaults, key))
        sections[name] = replace(defaults, **kwargs)
    config = Config(**sections, source=source)
    _check_values(config)
    return config


def _check_values(config: Config) -> None:
    if config.server.environment not in ENVIRONMENTS:
        raise ConfigError(f"config key 'server.environment' must be one of {', '.join(ENVIRONMENTS)}")
    if not 0 < config.server.port < 65536:
        raise ConfigError("config key 'server.port' must be between 1 and 65535")
    try:
        fee = Decimal(config.fees.default_fee_percent)
    except InvalidOperation:
        raise ConfigError("config key 'fees.default_fee_percent' must be a decimal string such as \"1.5\"") from None
    if not fee.is_finite() or not Decimal(0) <= fee < Decimal(100):
        raise ConfigError("config key 'fees.default_fee_percent' must be at least 0 and below 100")
    if not 1 <= config.server.cpu_workers <= 64 or not 0 <= config.server.cpu_queue <= 10_000:
        raise ConfigError("config keys 'server.cpu_workers' (1-64) and 'server.cpu_queue' (0-10000) are out of range")
    if not 1 <= config.webhooks.max_attempts <= 20:
        raise ConfigError("config key 'webhooks.max_attempts' must be between 1 and 20")
    if config.logging.format not in LOG_FORMATS:
        raise ConfigError(f"config key 'logging.format' must be one of {', '.join(LOG_FORMATS)}")
    if config.logging.level.upper() not in LOG_LEVELS:
        raise ConfigError(f"config key 'logging.level' must be one of {', '.join(LOG_LEVELS)}")
    if config.metrics.listen and not _is_host_port(config.metrics.listen):
        raise ConfigError("config key 'metrics.listen' must look like 127.0.0.1:9100")
    if config.metrics.ledger_check_seconds < 0 or config.readiness.max_lag_blocks < 0:
        raise ConfigError("config keys 'metrics.ledger_check_seconds' and 'readiness.max_lag_blocks' must be >= 0")
    if config.readiness.node_timeout_seconds < 1:
        raise ConfigError("config key 'readiness.node_timeout_seconds' must be at least 1")
    url = config.database_url
    if not (url.startswith("sqlite") or url.startswith("postgres")):
        raise ConfigError("config key 'database.url' must be an sqlite+aiosqlite:// or postgresql:// URL")


def _is_host_port(value: str) -> bool:
    host, sep, port = value.rpartition(":")
    return bool(sep) and bool(host) and port.isdigit() and 0 < int(port) < 65536


def _as_raw(config: Config) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    for name in _SECTIONS:
        section = getattr(config, name)
        raw[name] = {f.name: getattr(section, f.name) for f in fields(section)}
    raw["plugin"] = {k: dict(v) for k, v in config.plugin.items()}
    return raw


def _merge(base: Mapping[str, Any], extra: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    merged = {k: dict(v) for k, v in base.items()}
    for section, values in extra.items():
        merged.setdefault(section, {}).update(values)
    return merged


def _env_overrides(environ: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    overrides: dict[str, dict[str, Any]] = {}
    for name, value in environ.items():
        if name in ENV_ALIASES:
            section, key = ENV_ALIASES[name]
        elif name.startswith(ENV_PREFIX) and "__" in name:
            section, _, key = name[len(ENV_PREFIX):].lower().partition("__")
            if section not in _SECTIONS:
                continue  # e.g. ORBCHAIN_TEST_PG_DSN is not configuration
        else:
            continue
        overrides.setdefault(section, {})[key] = value
    return overrides


# -- helpers for plugins' own blocks ([plugin.<name>]) --------------------------------------


@overload
def int_setting(block: Mapping[str, Any], prefix: str, name: str, default: int, *, minimum: int = 0) -> int: ...
@overload
def int_setting(block: Mapping[str, Any], prefix: str, name: str, default: None, *,
                minimum: int = 0) -> int | None: ...
def int_setting(block: Mapping[str, Any], prefix: str, name: str, default: int | None, *,
                minimum: int = 0) -> int | None:
    """An integer from a plugin's config block; a missing optional value stays None.

    With an integer default the result is always an integer (the overloads tell callers so).

    ``prefix`` is the block's dotted name (``plugin.evm.ethereum``); errors name ``prefix.name``.
    """
    key = f"{prefix}.{name}"
    value = block.get(name, default)
    if value is None and default is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"config key '{key}' must be an integer >= {minimum}, got {value!r}")
    return value


def seconds_setting(block: Mapping[str, Any], prefix: str, name: str, default: float, *,
                    maximum: float = float("inf")) -> float:  # float ok: a duration, not money
    """A positive duration in seconds (an interval or a timeout, never money)."""
    key = f"{prefix}.{name}"
    value = block.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < maximum:
        raise ConfigError(f"config key '{key}' must be a positive number of seconds, got {value!r}")
    return float(value)  # float ok: a duration, not money


def text_setting(block: Mapping[str, Any], prefix: str, name: str) -> str | None:
    """A non-empty string from a plugin's config block, None when absent; errors name ``prefix.name``."""
    value = block.get(name)
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"config key '{prefix}.{name}' must be a non-empty string")
    return value


def checked_block(config: "Config", plugin: str, known: Sequence[str]) -> dict[str, Any]:
    """A copy of ``[plugin.<plugin>]`` (empty when absent), every key in ``known``.

    A misspelt key stops the start instead of being ignored: ``ConfigError``
    ``unknown config key 'plugin.<plugin>.<key>' (known: a, b)`` names the
    first one, ``known`` listed in the order given.
    """
    block = dict(config.plugin_config(plugin))
    for name in block:
        if name not in known:
            raise ConfigError(f"unknown config key 'plugin.{plugin}.{name}' (known: {', '.join(known)})")
    return block


def default_config_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """``$ORBCHAIN_CONFIG`` or ``./orbchain.toml`` when it exists."""
    environ = os.environ if environ is None else environ
    if environ.get("ORBCHAIN_CONFIG"):
        return Path(environ["ORBCHAIN_CONFIG"])
    candidate = Path("orbchain.toml")
    return candidate if candidate.exists() else None


def load_config(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Read the TOML file (if any), apply environment overrides and validate."""
    environ = os.environ if environ is None else environ
    raw: dict[str, Any] = {}
    source = "<defaults>"
    if path is not None:
        path = Path(path)
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {path}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
        source = str(path)
    return _build(_merge(raw, _env_overrides(environ)), source)
