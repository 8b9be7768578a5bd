"""Operator configuration: one TOML file plus ``ORBCHAIN_*`` environment overrides.

Everything is validated when the process starts, so a typo in a key or a
wrong type stops the gateway with a message naming the key instead of
surfacing later as a confusing runtime error.

Environment overrides use ``ORBCHAIN_<SECTION>__<KEY>`` (double underscore
between section and key), ``ORBCHAIN_PLUGIN__<NAME>__<KEY>`` for a plugin's
block (deeper blocks add ``__<KEY>`` levels), plus a few short aliases
operators expect: ``ORBCHAIN_HOST``, ``ORBCHAIN_PORT``,
``ORBCHAIN_DATABASE_URL``, ``ORBCHAIN_DATABASE_DIRECT_URL``, ``ORBCHAIN_ALLOW_PRIVATE_URLS`` and
``ORBCHAIN_MAINTENANCE``. Any other ``ORBCHAIN_`` variable, except the few
read elsewhere (``NON_CONFIG_VARIABLES``), stops the start naming it, like
an unknown key in the file: a typo never leaves a setting silently unset.
"""

from __future__ import annotations

import os
import re
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
    "ORBCHAIN_DATABASE_DIRECT_URL": ("database", "direct_url"),
    "ORBCHAIN_DATABASE_READ_URL": ("database", "read_url"),
    "ORBCHAIN_ALLOW_PRIVATE_URLS": ("webhooks", "allow_private_urls"),
}
# ``ORBCHAIN_`` variables that are not configuration, each read where it is named: the config file's path
# (``default_config_path``), the test suite's databases (orbchain/testing/databases.py: the PostgreSQL DSN
# and the SQLite-only opt-in), its number of processes (scripts/run_tests.py), the payout worker's crash
# hook for tests (core/payouts/worker.py), the node tools' folder (scripts/ensure_node_tools.sh) and how long
# scripts/ensure_debian_package.sh waits for another apt's lock, and the seed file's passphrase and the new one
# `secrets change-passphrase` seals it under (core/keys/seed_file.py, core/cli/seed_encrypt.py: never config
# keys, so never in the file beside the seed).
NON_CONFIG_VARIABLES = frozenset({"ORBCHAIN_CONFIG", "ORBCHAIN_TEST_PG_DSN", "ORBCHAIN_TEST_SQLITE_ONLY",
                                  "ORBCHAIN_TEST_MIGRATE_EACH",
                                  "ORBCHAIN_TEST_WORKERS",
                                  "ORBCHAIN_FAULT", "ORBCHAIN_NODE_TOOLS", "ORBCHAIN_APT_LOCK_SECONDS",
                                  "ORBCHAIN_SEED_FILE_PASSPHRASE", "ORBCHAIN_SEED_FILE_NEW_PASSPHRASE"})
PLUGIN_SECTION = "plugin"
ENVIRONMENTS = ("development", "production")
LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
MAX_DRAIN_SECONDS = 3600
# Outbox rows are what refuses a re-announced event as a duplicate: kept at least this long (core/events/retention.py).
MIN_WEBHOOK_RETENTION_DAYS = 7
MIN_PAYMENT_RETENTION_DAYS = 30
MAX_CONNECTION_SECONDS = 3600


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
    # The bounded pool for CPU-heavy work (core/infra/cpu_pool.py): threads, and jobs that may wait for one.
    cpu_workers: int = 2
    cpu_queue: int = 64
    # On SIGTERM/SIGINT: how long requests and job runs in flight may take to finish before they are
    # cancelled (docs/operations.md, "Stopping"); fits the systemd unit's TimeoutStopSec.
    drain_seconds: int = 25
    # Connections (web/connection_guard.py, docs/operations.md "Connections"): a request's head must arrive
    # within header_timeout_seconds of the connection (or of its first byte on a kept-alive one), its body
    # within body_timeout_seconds of the head, else 408 and the connection closes; an idle kept-alive
    # connection closes after keepalive_seconds (longer than nginx's 60 s upstream keep-alive).
    header_timeout_seconds: int = 20
    body_timeout_seconds: int = 60
    keepalive_seconds: int = 75
    # Connections from one IPv4 address or IPv6 /64 that have not yet sent a request; past it new ones are
    # closed at once (0: no cap). Not applied behind a proxy (trust_forwarded_for): every peer is the proxy.
    max_pending_connections_per_ip: int = 32


@dataclass(frozen=True)
class DatabaseConfig:
    url: str = ""
    # PostgreSQL behind a transaction pooler (PgBouncer pool_mode = transaction): PostgreSQL itself (or a
    # session pool) for what needs a session: LISTEN/NOTIFY and advisory locks (core/infra/pg_sessions.py).
    direct_url: str = ""
    # Optional: a standby for reports and analytics only (``Gateway.reports_db``); every money decision reads
    # ``url`` (docs/operations.md, "Failover").
    read_url: str = ""


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
    # Webhook requests in flight at once, across endpoints (one at a time per endpoint).
    concurrency: int = 32
    # Days a delivery attempt, and a finished (sent, failed, skipped) outbox row, is kept
    # (core/events/retention.py); 0 keeps them forever. At least a week: an event re-announced within it is
    # still refused as a duplicate by its outbox row.
    retention_days: int = 90


@dataclass(frozen=True)
class PaymentsConfig:
    # Days after its expiry that a merchant's own API payment left Expired or Cancelled with no deposit is
    # kept (core/payments/pruning.py). 0, the default, keeps it forever: the SPEC lets a merchant look up any
    # payment by id, so deleting one is a change of contract the operator opts into. At least 30 days.
    unpaid_retention_days: int = 0


@dataclass(frozen=True)
class RateLimitConfig:
    enabled: bool = True
    read_per_minute: int = 300
    write_per_minute: int = 60
    auth_per_minute: int = 10
    public_page_per_minute: int = 60
    # A payer's own payment page and its live stream (GET /pay/{id}, /pay/{id}/events), per IP: reads, so
    # not in the 60/min bucket /tip and /subscribe share (SPEC 8 lists only those two).
    pay_page_per_minute: int = 300
    # Public routes whose answer costs real CPU even when cached work is skipped (GET /tgapp/qr), per IP.
    cpu_per_minute: int = 30
    # Failed authentications (bad key, token or IP allowlist) per client IP.
    auth_failures_per_minute: int = 20


@dataclass(frozen=True)
class LiveConfig:
    """Live pages' event streams (``GET /pay/{id}/events``, ``/app/payments/{id}/events``, web/live.py): bounds
    and heartbeat."""

    max_streams: int = 2000  # open in all of this server's processes (``serve --workers N``: each gets 1/N); then 503
    max_streams_per_ip: int = 8  # public streams from one IPv4 address or IPv6 /64 in one process; past it 429
    max_streams_per_merchant: int = 16  # dashboard streams of one merchant in one process; past it 429
    max_dashboard_streams_per_ip: int = 32  # dashboard streams from one address, any merchants; past it 429
    max_page_share_percent: int = 10  # streams of one payment, as a share of this process's budget; past it 429
    # Open files each process keeps out of the streams' reach beyond those open once it serves: requests,
    # database, node and webhook connections (web/stream_budget.py); a process serves at most
    # its open-file limit minus both, whatever max_streams says.
    reserved_files: int = 256
    heartbeat_seconds: int = 15  # a comment line this often keeps proxies from closing an idle stream


@dataclass(frozen=True)
class PluginsConfig:
    blocked: tuple[str, ...] = ()


@dataclass(frozen=True)
class SchedulerConfig:
    enabled: bool = True
    # Follow chain nodes' notification streams (Capability.PUSH) to scan at once; off: polling only.
    push: bool = True


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
class CustodyConfig:
    """``orbchain custody check`` and its job: the books proven against what the nodes hold (docs/operations.md)."""

    # Seconds between ``custody.check`` job runs; 0 turns the job off.
    check_seconds: int = 900
    # A shortfall of a coin makes its payouts wait (not fail) until a clean check.
    pause_payouts: bool = False
    # The operator's watch-only cold storage, "<chain>:<address>" each (counted as held, never spent).
    cold: tuple[str, ...] = ()
    # Per coin, ``[custody.hot_wallet.<COIN>]``: ``floor`` and ``ceiling`` in the coin's unit (decimal strings),
    # ``cold`` the address the excess above the ceiling is swept to (core/custody/hot_wallet.py).
    hot_wallet: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def cold_addresses(self, chain: str) -> tuple[str, ...]:
        return tuple(entry.partition(":")[2] for entry in self.cold if entry.partition(":")[0] == chain)


@dataclass(frozen=True)
class ReadinessConfig:
    """``/ready``: when a chain counts as synced, and how long a node may take to answer."""

    max_lag_blocks: int = 6
    node_timeout_seconds: int = 3


@dataclass(frozen=True)
class SigningConfig:
    """The signer's spending policy (core/payouts/signing_policy.py, docs/payouts.md "The signer's policy").

    Each entry is ``"<COIN>=<amount>"`` in the coin's own unit; a coin not named has no such
    cap. Allow-lists are ``"<COIN>=<address>"`` (every merchant) and ``"<merchant_id>:<COIN>=<address>"``
    (one merchant): a coin named in either list may be paid only to the addresses listed for it.
    """

    max_per_payout: tuple[str, ...] = ()
    max_per_hour: tuple[str, ...] = ()  # all payouts of the coin signed in the last 3600 s, this one included
    max_per_day: tuple[str, ...] = ()  # the same over the last 86400 s
    max_per_merchant_day: tuple[str, ...] = ()  # one merchant's payouts of the coin over the last 86400 s
    allowed_destinations: tuple[str, ...] = ()
    merchant_allowed_destinations: tuple[str, ...] = ()


@dataclass(frozen=True)
class OperatorConfig:
    """The operator's own webhook (core/events/operator.py, docs/operations.md "Operator notifications"): payouts
    held by the signing policy, sweeps to cold, custody shortfalls and recoveries, nodes refused. Signed like a
    merchant's (header ``HMAC``: HMAC-SHA512 of the body) with ``webhook_secret`` (or the file it is read from)."""

    webhook_url: str = ""
    webhook_secret: str = ""
    webhook_secret_file: str = ""


@dataclass(frozen=True)
class SignerConfig:
    """Where payouts are signed (core/custody/signer.py, docs/operations.md "Custody: a signer on its own host").

    ``url`` (serve): the ``orbchain signer`` to ask, ``unix:///path`` or ``http://host:port``; empty signs in
    this process, which production must confirm with ``in_process = true``. ``listen`` (the signer): where it
    answers, default ``unix://<data_dir>/signer.sock``. ``key_file``: the channel key both sides hold
    (``orbchain secrets signer-key``); a request older or newer than ``max_skew_seconds`` is refused.
    ``database_url`` (the signer, PostgreSQL): its own least-privilege role's DSN (``orbchain custody
    signer-role``), used by ``orbchain signer`` instead of ``[database]``'s URLs.
    """

    url: str = ""
    in_process: bool = False
    key_file: str = ""
    listen: str = ""
    max_skew_seconds: int = 30
    database_url: str = ""


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
    payments: PaymentsConfig = field(default_factory=PaymentsConfig)
    rate_limits: RateLimitConfig = field(default_factory=RateLimitConfig)
    live: LiveConfig = field(default_factory=LiveConfig)
    plugins: PluginsConfig = field(default_factory=PluginsConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    custody: CustodyConfig = field(default_factory=CustodyConfig)
    readiness: ReadinessConfig = field(default_factory=ReadinessConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    signing: SigningConfig = field(default_factory=SigningConfig)
    signer: SignerConfig = field(default_factory=SignerConfig)
    operator: OperatorConfig = field(default_factory=OperatorConfig)
    # Per-plugin blocks, ``[plugin.<name>]``: validated by each plugin at startup.
    plugin: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str = "<defaults>"
    # Dotted key -> the environment variable that set it, so an error about the key can name the variable.
    env_sources: Mapping[str, str] = field(default_factory=dict)

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
        return _build(_merge(_as_raw(self), sections), self.source, self.env_sources)


_SECTIONS = {f.name: f.type for f in fields(Config) if f.name not in ("plugin", "source", "env_sources")}


def _section_class(name: str) -> type:
    return {
        "server": ServerConfig,
        "database": DatabaseConfig,
        "secrets": SecretsConfig,
        "fees": FeesConfig,
        "webhooks": WebhooksConfig,
        "payments": PaymentsConfig,
        "rate_limits": RateLimitConfig,
        "live": LiveConfig,
        "plugins": PluginsConfig,
        "scheduler": SchedulerConfig,
        "metrics": MetricsConfig,
        "custody": CustodyConfig,
        "readiness": ReadinessConfig,
        "logging": LoggingConfig,
        "signing": SigningConfig,
        "signer": SignerConfig,
        "operator": OperatorConfig,
    }[name]


HOT_WALLET_KEYS = ("floor", "ceiling", "cold")


def _coerce_tables(key: str, value: Any) -> dict[str, dict[str, str]]:
    """``[<key>.<NAME>]`` tables of text values (amounts as strings: money is never a float)."""
    if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
        raise ConfigError(f"config key {key!r} must hold tables like [{key}.<COIN>]")
    tables: dict[str, dict[str, str]] = {}
    for name, table in value.items():
        for entry, text in table.items():
            if entry not in HOT_WALLET_KEYS:
                raise ConfigError(f"unknown config key '{key}.{name}.{entry}' (known: {', '.join(HOT_WALLET_KEYS)})")
            if isinstance(text, bool) or not isinstance(text, (str, int)):
                raise ConfigError(f"config key '{key}.{name}.{entry}' must be a string such as \"1.5\", got {text!r}")
        tables[str(name)] = {entry: str(text) for entry, text in table.items()}
    return tables


def _coerce(key: str, value: Any, default: Any) -> Any:
    """Coerce ``value`` to the type of ``default``; environment values arrive as text."""
    if isinstance(default, Mapping):
        return _coerce_tables(key, value)
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


def _build(raw: Mapping[str, Any], source: str, env_sources: Mapping[str, str] | None = None) -> Config:
    sections: dict[str, Any] = {}
    for name, values in raw.items():
        if name == PLUGIN_SECTION:
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
    config = Config(**sections, source=source, env_sources=dict(env_sources or {}))
    _check_values(config)
    return config


def _check_values(config: Config) -> None:
    if config.server.environment not in ENVIRONMENTS:
        raise ConfigError(f"config key 'server.environment' must be one of {', '.join(ENVIRONMENTS)}")
    if not 0 < config.server.port < 65536:
        raise ConfigError("config key 'server.port' must be between 1 and 65535")
    if not 0 <= config.server.drain_seconds <= MAX_DRAIN_SECONDS:
        raise ConfigError(f"config key 'server.drain_seconds' must be between 0 and {MAX_DRAIN_SECONDS}")
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
    if not 1 <= config.webhooks.concurrency <= 1000:
        raise ConfigError("config key 'webhooks.concurrency' must be between 1 and 1000")
    if config.webhooks.retention_days != 0 and config.webhooks.retention_days < MIN_WEBHOOK_RETENTION_DAYS:
        raise ConfigError(f"config key 'webhooks.retention_days' must be 0 (keep forever) or at least"
                          f" {MIN_WEBHOOK_RETENTION_DAYS}")
    payment_days = config.payments.unpaid_retention_days
    if payment_days != 0 and payment_days < MIN_PAYMENT_RETENTION_DAYS:
        raise ConfigError(f"config key 'payments.unpaid_retention_days' must be 0 (keep forever) or at least"
                          f" {MIN_PAYMENT_RETENTION_DAYS}")
    if config.logging.format not in LOG_FORMATS:
        raise ConfigError(f"config key 'logging.format' must be one of {', '.join(LOG_FORMATS)}")
    if config.logging.level.upper() not in LOG_LEVELS:
        raise ConfigError(f"config key 'logging.level' must be one of {', '.join(LOG_LEVELS)}")
    if config.metrics.listen and not _is_host_port(config.metrics.listen):
        raise ConfigError("config key 'metrics.listen' must look like 127.0.0.1:9100")
    if config.metrics.ledger_check_seconds < 0 or config.readiness.max_lag_blocks < 0:
        raise ConfigError("config keys 'metrics.ledger_check_seconds' and 'readiness.max_lag_blocks' must be >= 0")
    if config.custody.check_seconds < 0:
        raise ConfigError("config key 'custody.check_seconds' must be >= 0")
    for entry in config.custody.cold:
        chain, _, address = entry.partition(":")
        if not chain or not address:
            raise ConfigError(f"config key 'custody.cold' entries look like \"litecoin:<address>\", not {entry!r}")
    live = config.live
    if min(live.max_streams, live.max_streams_per_ip, live.max_streams_per_merchant,
           live.max_dashboard_streams_per_ip, live.reserved_files) < 0 or not 1 <= live.heartbeat_seconds <= 300:
        raise ConfigError("config keys 'live.max_streams', 'live.max_streams_per_ip',"
                          " 'live.max_streams_per_merchant', 'live.max_dashboard_streams_per_ip' and"
                          " 'live.reserved_files' must be >= 0 and 'live.heartbeat_seconds' between 1 and 300")
    if not 1 <= live.max_page_share_percent <= 100:
        raise ConfigError("config key 'live.max_page_share_percent' must be between 1 and 100")
    _check_connection_keys(config.server)
    _check_signing_keys(config.signing)
    _check_signer_keys(config.signer)
    operator = config.operator
    if operator.webhook_url and not operator.webhook_url.startswith(("http://", "https://")):
        raise ConfigError("config key 'operator.webhook_url' must be an http:// or https:// URL")
    if operator.webhook_url and not (operator.webhook_secret or operator.webhook_secret_file):
        raise ConfigError("config key 'operator.webhook_url' needs 'operator.webhook_secret' (or"
                          " 'operator.webhook_secret_file'): an operator webhook is always signed")
    if config.readiness.node_timeout_seconds < 1:
        raise ConfigError("config key 'readiness.node_timeout_seconds' must be at least 1")
    url = config.database_url
    if not (url.startswith("sqlite") or url.startswith("postgres")):
        raise ConfigError("config key 'database.url' must be an sqlite+aiosqlite:// or postgresql:// URL")
    if config.database.direct_url and not (url.startswith("postgres") and config.database.direct_url.startswith(
            "postgres")):
        raise ConfigError("config key 'database.direct_url' must be a postgresql:// URL, next to a PostgreSQL"
                          " 'database.url' (the pooler's)")
    if config.database.read_url and not (url.startswith("postgres") and config.database.read_url.startswith(
            "postgres")):
        raise ConfigError("config key 'database.read_url' must be a postgresql:// URL (a standby), next to a"
                          " PostgreSQL 'database.url'")


def _check_connection_keys(server: ServerConfig) -> None:
    for key in ("header_timeout_seconds", "body_timeout_seconds", "keepalive_seconds"):
        if not 1 <= getattr(server, key) <= MAX_CONNECTION_SECONDS:
            raise ConfigError(f"config key 'server.{key}' must be between 1 and {MAX_CONNECTION_SECONDS}")
    if server.max_pending_connections_per_ip < 0:
        raise ConfigError("config key 'server.max_pending_connections_per_ip' must be >= 0 (0: no cap)")


def _check_signer_keys(signer: SignerConfig) -> None:
    for key in ("url", "listen"):
        value = getattr(signer, key)
        if value and not (value.startswith("unix:///") or re.match(r"^http://[^/:]+:\d+/?$", value)):
            raise ConfigError(f"config key 'signer.{key}' must look like unix:///run/orbchain/signer.sock or"
                              f" http://10.0.0.5:8700, got {value!r}")
    if signer.url and signer.in_process:
        raise ConfigError("config keys 'signer.url' and 'signer.in_process' exclude each other: sign here or there")
    if not 1 <= signer.max_skew_seconds <= 300:
        raise ConfigError("config key 'signer.max_skew_seconds' must be between 1 and 300")
    if signer.database_url and not signer.database_url.startswith("postgresql"):
        raise ConfigError("config key 'signer.database_url' must be a postgresql:// URL (the signer's own role);"
                          " on SQLite the signer runs inside serve")


_SIGNING_AMOUNT = re.compile(r"^[A-Za-z0-9_.-]+=\d+(\.\d+)?$")
_SIGNING_ADDRESS = re.compile(r"^([A-Za-z0-9_-]+:)?[A-Za-z0-9_.-]+=\S+$")


def _check_signing_keys(signing: SigningConfig) -> None:
    """The shape of every ``signing`` entry; coins, amounts and addresses are judged against the chains at start."""
    for key in ("max_per_payout", "max_per_hour", "max_per_day", "max_per_merchant_day"):
        for entry in getattr(signing, key):
            if not _SIGNING_AMOUNT.match(entry):
                raise ConfigError(f"config key 'signing.{key}' entries look like \"<COIN>=<amount>\", got {entry!r}")
    for key in ("allowed_destinations", "merchant_allowed_destinations"):
        for entry in getattr(signing, key):
            scoped = entry.split("=", 1)[0].count(":") == 1
            if not _SIGNING_ADDRESS.match(entry) or scoped != (key == "merchant_allowed_destinations"):
                shape = "<merchant_id>:<COIN>=<address>" if scoped or key.startswith("merchant") else "<COIN>=<address>"
                raise ConfigError(f"config key 'signing.{key}' entries look like \"{shape}\", got {entry!r}")


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


def env_key(name: str) -> tuple[str, ...] | None:
    """The config key an ``ORBCHAIN_`` variable sets (``("server", "port")``, ``("plugin", "telegram",
    "bot_token")``), None for one that is no configuration; ``ConfigError`` naming it when it matches no key.

    A plugin's keys are judged by the plugin itself when it validates its block.
    """
    if name in ENV_ALIASES:
        return ENV_ALIASES[name]
    if name in NON_CONFIG_VARIABLES or not name.startswith(ENV_PREFIX):
        return None
    parts = tuple(name[len(ENV_PREFIX):].lower().split("__"))
    if len(parts) >= 3 and parts[0] == PLUGIN_SECTION and all(parts):
        return parts
    if len(parts) == 2 and parts[0] in _SECTIONS:
        known = [f.name for f in fields(_section_class(parts[0]))]
        if parts[1] in known:
            return parts
        raise ConfigError(f"unknown environment variable {name}: no config key '{parts[0]}.{parts[1]}'"
                          f" (known: {', '.join(known)})")
    raise ConfigError(
        f"unknown environment variable {name}: it matches no config key (use ORBCHAIN_<SECTION>__<KEY> with a"
        f" section of {', '.join(sorted(_SECTIONS))}, ORBCHAIN_PLUGIN__<NAME>__<KEY>, or an alias:"
        f" {', '.join(sorted(ENV_ALIASES))})")


# Text shaped like a TOML boolean, decimal number, array, inline table or quoted string; anything else
# (a token, a URL, a hex-looking secret) stays text.
_LITERAL = re.compile(r"(true|false|[+-]?\d+(\.\d+)?|\[.*\]|\{.*\}|\".*\"|'.*')", re.DOTALL)


def env_value(text: str) -> Any:
    """A plugin setting from the environment: a TOML literal when it is shaped like one, else the text.

    Sections know their keys' types and convert text themselves (``_coerce``);
    a plugin's block is checked by the plugin, so ``5``, ``true`` and
    ``["a", "b"]`` arrive as TOML would give them and a secret stays text.
    Quote a value to force text: ``'"12345"'``.
    """
    stripped = text.strip()
    if _LITERAL.fullmatch(stripped):
        try:
            return tomllib.loads(f"v = {stripped}")["v"]
        except tomllib.TOMLDecodeError:
            pass
    return text


def _env_overrides(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """(the overrides, dotted key -> variable) of every ``ORBCHAIN_`` variable; unknown ones raise."""
    overrides: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, value in sorted(environ.items()):
        key = env_key(name)
        if key is None:
            continue
        if key[0] == PLUGIN_SECTION:
            table = overrides.setdefault(PLUGIN_SECTION, {})
            for part in key[1:-1]:
                if not isinstance(table.get(part), dict):
                    table[part] = {}
                table = table[part]
            table[key[-1]] = env_value(value)
        else:
            overrides.setdefault(key[0], {})[key[1]] = value
        sources[".".join(key)] = name
    return overrides, sources


def _deep_merge(base: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base) if isinstance(base, Mapping) else {}
    for key, value in extra.items():
        merged[key] = _deep_merge(merged.get(key), value) if isinstance(value, Mapping) else value
    return merged


_DOTTED_KEY = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+")


def naming_variable(error: ConfigError, env_sources: Mapping[str, str]) -> ConfigError:
    """``error``, plus the environment variable that set the key it names (when one did).

    A plugin's validation names keys (``plugin.captcha.secret``); an operator
    who set it as ``ORBCHAIN_PLUGIN__CAPTCHA__SECRET`` is told so. Searched in
    order: the key itself or a key inside the block named, then a key beside
    the one named (a block the variable created lacks a required key).
    """
    message = str(error)
    named = _DOTTED_KEY.findall(message)
    for key, variable in env_sources.items():
        if any(key == n or key.startswith(n + ".") for n in named):
            return ConfigError(f"{message} (set by environment variable {variable})")
    for key, variable in env_sources.items():
        if any(n.count(".") >= 2 and key.startswith(n.rpartition(".")[0] + ".") for n in named):
            return ConfigError(f"{message} (in a block set by environment variable {variable})")
    return error


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
    overrides, sources = _env_overrides(environ)
    plugin_overrides = overrides.pop(PLUGIN_SECTION, None)
    merged = _merge(raw, overrides)
    if plugin_overrides:
        merged[PLUGIN_SECTION] = _deep_merge(merged.get(PLUGIN_SECTION), plugin_overrides)
    try:
        return _build(merged, source, sources)
    except ConfigError as exc:
        raise naming_variable(exc, sources) from None


def tip_age_setting(block: Mapping[str, Any], prefix: str, default: int) -> int:
    """``node_max_tip_age_seconds``: how old a node's newest block may be; 0 turns the check off.

    Per chain and network because block times differ; the chain passes its own default
    (0 on regtest and development chains, whose blocks are mined on demand).
    """
    from ..types.node_identity import TIP_AGE_KEY  # the key the refusal message names too

    return int_setting(block, prefix, TIP_AGE_KEY, default, minimum=0)
