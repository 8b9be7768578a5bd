"""The aiohttp application factory.

``create_app(config, plugin_manager)`` builds the gateway context, routes
(core route modules plus every plugin's ``register_routes``) and the
resources opened and closed in ``app.cleanup_ctx``: database (migrated),
secrets, outbound HTTP session, services, scheduler, plugin lifecycle.
``web.run_app`` is only called by the CLI.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import AsyncIterator

import aiohttp_jinja2
import jinja2
import pluggy
from aiohttp import web

from ..core.accounts.auth import LEGACY_SCOPES
from ..core.infra.config import Config, ConfigError
from ..core.gateway import Gateway
from ..core.startup import build_gateway
from ..core.infra.migrate import migrate, pending
from . import i18n
from ..core.infra.netguard import HTTP_SESSION, PRIVATE_URLS_IN_PRODUCTION, outbound_session
from ..core.accounts.coordination import coordination
from ..core.contract.registries import RouteRegistry, StartupError
from ..core.keys.secrets import check_signing_role, load_secrets
from ..core.payouts.remote_signing import check_remote_capable
from ..core.watching.push import PushStreams
from ..scheduler.runner import JobScheduler
from .auth import AUTH_ATTR, EVERYONE, authenticate_request
from .key_requests import KEY_REQUEST_LISTENERS, key_request_listeners
from .keys import GATEWAY
from .live import end_streams, state_budget
from .middlewares import middlewares
from .ops_listener import ops_listener_ctx
from .routes import core_route_tables, plugin_static
from .server import server_header
from ..core.types.services import ServiceKey

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parent / "templates"
MAX_BODY_BYTES = 1024 * 1024


async def database_ctx(app: web.Application) -> AsyncIterator[None]:
    gateway = app[GATEWAY]
    await gateway.db.connect()
    if gateway.reports_db is not gateway.db:
        await gateway.reports_db.connect()
    try:
        todo = await pending(gateway.db, gateway.migrations)
        if todo and not gateway.config.is_development:
            names = ", ".join(f"{m.namespace}:{m.version:04d}" for m in todo)
            raise ConfigError(f"{len(todo)} pending migration(s) ({names}): run `orbchain migrate` first")
        if todo:
            await migrate(gateway.db, gateway.migrations)
        yield
    finally:
        if gateway.reports_db is not gateway.db:
            await gateway.reports_db.disconnect()
        await gateway.db.disconnect()


async def services_ctx(app: web.Application) -> AsyncIterator[None]:
    gateway = app[GATEWAY]
    if gateway.secrets is None:
        gateway.secrets = load_secrets(gateway.config)
    check_signing_role(gateway.config, gateway.secrets)
    if gateway.config.signer.url:
        check_remote_capable(gateway)
    webhooks = gateway.config.webhooks
    if webhooks.allow_private_urls and not gateway.config.is_development:
        log.warning(PRIVATE_URLS_IN_PRODUCTION)
    async with coordination(gateway), outbound_session(allow_private=webhooks.allow_private_urls,
                                                       timeout_seconds=webhooks.timeout_seconds) as http:
        gateway.services[HTTP_SESSION] = http
        yield
        gateway.services.pop(HTTP_SESSION, None)
        gateway.cpu.shutdown()


async def chains_ctx(app: web.Application) -> AsyncIterator[None]:
    """Chain adapters open connections lazily; each is closed once at shutdown (after the jobs
    and ``gateway_stopping``, before the database)."""
    yield
    await app[GATEWAY].close_chains()


async def lifecycle_ctx(app: web.Application) -> AsyncIterator[None]:
    gateway = app[GATEWAY]
    await gateway.hooks.gateway_started()
    yield
    await gateway.hooks.gateway_stopping()
    await gateway.held_events.close()


SCHEDULER = ServiceKey("scheduler", JobScheduler)
PUSH = ServiceKey("push", PushStreams)  # the chains' push streams, unless ``scheduler.push`` is off


async def scheduler_ctx(app: web.Application) -> AsyncIterator[None]:
    """APScheduler must start inside the running loop, hence a cleanup context; with it the chains' push
    streams (core/watching/push.py), which wake its scans, unless ``scheduler.push`` is off.

    Both stop before anything they use closes: at ``on_shutdown``
    (``drain_jobs``) when the app stops serving, else here.
    """
    gateway = app[GATEWAY]
    if not gateway.config.scheduler.enabled:
        yield
        return
    scheduler = JobScheduler(gateway)
    scheduler.start()
    gateway.services[SCHEDULER] = scheduler
    if gateway.config.scheduler.push:
        gateway.services[PUSH] = push = PushStreams(gateway)
        push.start()
    try:
        yield
    finally:
        await drain_jobs(app)  # again after on_shutdown: nothing left to do


async def budget_streams(app: web.Application) -> None:
    """``on_startup``, after every cleanup context opened what it holds: the live streams' budget from the
    open-file limit and the files now open (web/stream_budget.py), stated in the log."""
    state_budget(app[GATEWAY])


async def close_streams(app: web.Application) -> None:
    """``on_shutdown``: live pages' event streams end (web/live.py); the browsers reconnect elsewhere."""
    await end_streams(app[GATEWAY])


async def drain_jobs(app: web.Application) -> None:
    """``on_shutdown``: the push streams close; job runs in flight finish until the stop's deadline, alongside
    the requests."""
    services = app[GATEWAY].services
    push = services.get(PUSH)
    if push is not None:
        await push.stop()
    scheduler = services.get(SCHEDULER)
    if scheduler is not None:
        await scheduler.drain()


def collect_routes(gateway: Gateway) -> RouteRegistry:
    registry = RouteRegistry()
    for table in core_route_tables():
        registry.add(table)
    if any(assets.static is not None for assets in gateway.assets):
        registry.add(plugin_static.routes)
        if plugin_static.OPERATION.key not in gateway.api_operations:
            gateway.api_operations.add(plugin_static.OPERATION)
    gateway.hooks.register_routes(registry=registry)
    _check_scopes(gateway, registry)
    return registry


def _check_scopes(gateway: Gateway, registry: RouteRegistry) -> None:
    """A route requiring a scope nobody registered could never be called with a scoped key."""
    known = {EVERYONE, *gateway.scopes.all_names(), *(s for scopes in LEGACY_SCOPES.values() for s in scopes)}
    for table in registry.tables():
        for route in table:
            if not isinstance(route, web.RouteDef):
                continue  # a static folder: no handler, no scope
            spec = getattr(route.handler, AUTH_ATTR, None)
            if spec is not None and spec.scope is not None and spec.scope not in known:
                raise StartupError(f"route {route.method} {route.path} requires scope {spec.scope!r}, which no"
                                   " plugin registered (register_scopes)")


def template_loader(gateway: Gateway) -> jinja2.BaseLoader:
    """The core's templates by bare name, each plugin's as ``"<plugin>/<file>"``."""
    plugins = {a.name: jinja2.FileSystemLoader(str(a.templates)) for a in gateway.assets if a.templates}
    return jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(TEMPLATES)), jinja2.PrefixLoader(plugins)])


def create_app(
    config: Config,
    plugin_manager: pluggy.PluginManager | None = None,
    *,
    gateway: Gateway | None = None,
) -> web.Application:
    gateway = gateway or build_gateway(config, plugin_manager)
    app = web.Application(middlewares=middlewares(authenticate_request), client_max_size=MAX_BODY_BYTES)
    app[GATEWAY] = gateway
    app[KEY_REQUEST_LISTENERS] = key_request_listeners(gateway)
    for table in collect_routes(gateway).tables():
        app.router.add_routes(table)
    # Templates ship inside the packages and never change under a running
    # process: compile each once and skip the per-render stat of its file.
    env = aiohttp_jinja2.setup(app, loader=template_loader(gateway), autoescape=True, auto_reload=False)
    i18n.install(env)  # payer pages in the payer's language (web/i18n.py)
    app.on_response_prepare.append(server_header)  # no version banner (web/server.py)
    app.cleanup_ctx.extend([database_ctx, services_ctx, chains_ctx, lifecycle_ctx, scheduler_ctx, ops_listener_ctx])
    app.on_startup.append(budget_streams)
    app.on_shutdown.extend([close_streams, drain_jobs])
    return app
