"""Sign-in with an identity provider (SPEC 4.7, 5.3), a feature plugin.

``GET /dashboard/auth/google`` sends the browser to an OpenID Connect
provider (Google by default; any provider through ``discovery_url``) with
the authorization-code flow, PKCE S256, state and nonce; the callback
verifies the ID token, finds the sign-in its identity is linked to or
creates an account (``identities.py``: never by e-mail alone) and
redirects to ``/app#google-auth=<payload>``,
a payload that lands only in the browser that started the sign-in, once
(``landings.py``; the dashboard redeems it through the ``oidc_landing``
service).
Configured with ``[plugin.oidc] client_id``/``client_secret``
(docs/oidc.md); without them the routes answer 503 ``not_configured``.
A signed-in person links their own identity
(``POST /dashboard/auth/google/link`` or Settings -> Sign-in,
``linking.py``), which then signs in as them; a member with 2FA gives
their code after the provider (``second_step.py``). It also proves
addresses for other plugins (``decide_address_prover``, ``proofs.py``): an
invited person joins a team by signing in here as the invited address.
It uses only the public plugin contract and core services, as a
third-party package would.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ...api import EVERYONE, AddressProver, Gateway, hookimpl
from . import landings, member_page, openapi, proofs, second_step
from .config import provider_of, settings_of
from .routes import routes, start_proof
from .settings import PLUGIN_NAME
from ...api.hooks import AssetRegistry, DashboardRegistry, MigrationRegistry, OperationRegistry, RouteRegistry

MIGRATIONS_PACKAGE = "orbchain.plugins.oidc.migrations"

__all__ = ["PLUGIN_NAME"]


@hookimpl
def check_config(gateway: Gateway) -> None:
    settings_of(gateway)


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_routes(registry: RouteRegistry) -> None:
    registry.add(routes)
    registry.add(second_step.routes)


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("settings-nav", "Sign-in", member_page.PAGE_PATH, order=35, render=member_page.render,
                 submit=member_page.submit, scope=EVERYONE, group="Security")


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    openapi.register(registry)


@hookimpl
def gateway_started(gateway: Gateway) -> None:
    landings.offer(gateway, settings_of(gateway))


@hookimpl
def decide_address_prover(gateway: Gateway) -> AddressProver | None:
    if provider_of(gateway) is None:
        return None
    return AddressProver(proofs.LABEL, functools.partial(start_proof, gateway))
