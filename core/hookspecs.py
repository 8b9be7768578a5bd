"""Every hook a plugin can implement, in one place.

Plugins (the built-in chains and features as much as third-party packages)
implement these with ``@orbchain.core.plugins.hookimpl`` and register through
the ``orbchain`` entry-point group. Every hook receives ``gateway`` (the
:class:`orbchain.core.gateway.Gateway` context: config, database, registries)
plus what is specific to it; an implementation may accept only the arguments
it uses, so hooks can grow new arguments without breaking plugins.

Implementations of event hooks may be ``async def``: the core awaits any
awaitable they return. Collection hooks receive a registry and call its
``add`` method; registering a name twice fails at startup naming both plugins.

``docs/plugins.md`` documents each hook for third-party authors;
``tests/test_hookspecs.py`` fails when a hook here is missing from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import pluggy

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .gateway import Gateway
    from .pages import PayPageForm
    from .migrate import MigrationRegistry
    from .registries import ChainRegistry, CommandRegistry, CoinRegistry, JobRegistry, PriceSourceRegistry, RouteRegistry

hookspec = pluggy.HookspecMarker("orbchain")


# -----------------------------------------------------------------------------
# Startup: configuration and collection
# -----------------------------------------------------------------------------


@hookspec
def validate_config(gateway: "Gateway", config: Mapping[str, Any]) -> None:
    """Check this plugin's own config block before anything starts.

    Called once while the gateway is built, for every plugin. ``config`` is
    the whole ``[plugin.<name>]`` table mapping of the operator's file (use
    ``gateway.config.plugin_config("<name>")`` for your own block). Raise
    ``orbchain.core.config.ConfigError`` with a message naming the bad key;
    the process then refuses to start. Return nothing.
    """


@hookspec
def register_migrations(registry: "MigrationRegistry") -> None:
    """Add this plugin's schema migrations.

    Called when the gateway is built and by ``orbchain migrate``. Call
    ``registry.add(Migration(namespace, version, name, up))`` or
    ``registry.add_package(namespace, "your_pkg.migrations")`` for modules
    named ``m0001_<what>.py`` exposing ``up(dialect) -> list[str]``. Use your
    plugin name as the namespace. Return nothing.
    """


@hookspec
def register_coins(registry: "CoinRegistry", gateway: "Gateway") -> None:
    """Contribute coins (symbol, chain, decimals, confirmation floor, ...).

    Called once at startup. Call ``registry.add(Coin(...))`` for each coin
    this plugin serves. A symbol registered by two plugins fails startup.
    The coin table feeds ``/v1/common/currencies`` and every validation.
    """


@hookspec
def register_chains(registry: "ChainRegistry", gateway: "Gateway") -> None:
    """Contribute chain adapters.

    Called once at startup, after ``register_coins``. Call
    ``registry.add(adapter)`` with an object implementing
    ``orbchain.core.chains.ChainAdapter`` (``adapter.name`` is its unique
    chain name). Return nothing.
    """


@hookspec
def register_price_sources(registry: "PriceSourceRegistry", gateway: "Gateway") -> None:
    """Contribute USD price sources for ``/v1/common/prices``.

    Called once at startup. Call ``registry.add(source)`` with an object
    having ``name`` and ``async fetch(symbols) -> dict[str, Decimal]``. The
    source chosen by ``[plugin.prices] source`` is used; the core caches
    answers for 60 seconds and reports a coin that fails as 0.
    """


@hookspec
def register_routes(registry: "RouteRegistry", gateway: "Gateway") -> None:
    """Contribute HTTP routes.

    Called while the aiohttp application is built (its router freezes
    afterwards). Call ``registry.add(routes)`` with an
    ``aiohttp.web.RouteTableDef``. Two plugins adding the same method and
    path fail startup. Handlers find the gateway at
    ``request.app[orbchain.web.keys.GATEWAY]``.
    """


@hookspec
def register_jobs(registry: "JobRegistry", gateway: "Gateway") -> None:
    """Contribute periodic jobs to the scheduler.

    Called once at startup. Call ``registry.add(name, coroutine_function,
    seconds=N)``; the function is called as ``await func(gateway)``. With
    PostgreSQL each job runs in one process at a time (advisory lock keyed
    by the job name), so several ``orbchain serve`` processes can share a
    database.
    """


@hookspec
def register_commands(registry: "CommandRegistry") -> None:
    """Contribute ``orbchain`` CLI sub-commands.

    Called when the CLI builds its parser. Call ``registry.add(name, help,
    configure)``; ``configure(parser)`` adds arguments to the sub-command's
    ``argparse`` parser and sets ``parser.set_defaults(func=...)`` where
    ``func(args, gateway) -> int`` runs it with a built (not yet connected)
    gateway and returns the exit code. A name already taken fails.
    """


# -----------------------------------------------------------------------------
# Lifecycle
# -----------------------------------------------------------------------------


@hookspec
def gateway_started(gateway: "Gateway") -> None:
    """The database is connected and migrated; the server is about to serve.

    May be async. Open long-lived resources here (close them in
    ``gateway_stopping``). Return nothing.
    """


@hookspec
def gateway_stopping(gateway: "Gateway") -> None:
    """The server is shutting down; the database is still connected.

    May be async. Return nothing.
    """


# -----------------------------------------------------------------------------
# Hosted pages
# -----------------------------------------------------------------------------


@hookspec
def pay_page_forms(gateway: "Gateway", payment: Mapping[str, Any]) -> "list[PayPageForm] | None":
    """Forms to show on the hosted payment page of an open payment.

    Called for every render of ``/pay/<track_id>`` while the payment is
    Waiting or Paying. ``payment`` is the public payment view (track_id,
    pay_currency, pay_amount, address, status ...). Return a list of
    ``orbchain.core.pages.PayPageForm`` (each posts to a route your plugin
    registered) or None. Results of all plugins are shown, in plugin order.
    The devnet uses it for its development "Pay with devnet" button.
    """


# -----------------------------------------------------------------------------
# Payments and money events (feature plugins react to these)
# -----------------------------------------------------------------------------


@hookspec
def deposit_credited(gateway: "Gateway", deposit: Mapping[str, Any]) -> None:
    """A deposit reached its confirmation threshold and was credited.

    Called after the crediting transaction committed. ``deposit`` is the
    deposit record (merchant_id, coin, amount in base units, tx_hash, ...).
    May be async. Must be idempotent: re-scans may call it again for the
    same deposit after a crash. Return nothing.
    """


@hookspec
def payment_paid(gateway: "Gateway", payment: Mapping[str, Any]) -> None:
    """A payment reached Paid.

    Called after the transaction that marked it Paid committed. May be
    async. Must be idempotent. Return nothing.
    """


@hookspec
def payout_finished(gateway: "Gateway", payout: Mapping[str, Any]) -> None:
    """A payout reached a final state (Confirmed or Failed).

    Called after the final state committed; ``payout["status"]`` tells
    which. May be async. Must be idempotent. Return nothing.
    """


@hookspec
def ledger_posted(gateway: "Gateway", transaction: Mapping[str, Any]) -> None:
    """A ledger transaction was committed.

    ``transaction`` has id, kind, reference and postings (account, coin,
    amount in base units). Called after commit; may be async. Useful for
    auditing and analytics plugins. Return nothing.
    """
