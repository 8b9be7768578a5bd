"""Built-in feature plugin ``teams``: several people on one merchant account, each with a role (issue 36).

The account holder invites members by e-mail; a membership starts only once
the invited person proved the address (issue 42): the join link mailed to
it, where they choose a password, or an identity provider vouching for that
address (``decide_proven_address``). The inviter only ever sees the
invitation's page, which joins nobody. A member signs in on the dashboard's
sign-in page to the same account. A member's session is a dashboard JWT
naming the member (``sign_in_member``, the ``mbr`` claim); on every request
the core asks this plugin who the member is now (``decide_member``): their
role's scopes, which the dashboard and the JSON API both enforce (403
naming the missing scope). Removing a member ends their sessions at once.
See docs/teams.md.
"""

from __future__ import annotations

from pathlib import Path

from ...api import hookimpl
from . import accept, joining, member_routes, members, openapi, own_2fa, page
from .settings import PLUGIN_NAME, settings_of
from ...api import Gateway, Member, MemberLogin, ProvenAddress
from ...api.hooks import AssetRegistry, DashboardRegistry, MigrationRegistry, OperationRegistry, RouteRegistry

MIGRATIONS_PACKAGE = "orbchain.plugins.teams.migrations"


@hookimpl
def check_config(gateway: Gateway) -> None:
    settings_of(gateway)


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_routes(registry: RouteRegistry) -> None:
    registry.add(accept.routes)
    registry.add(own_2fa.routes)
    registry.add(member_routes.routes)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    openapi.register(registry)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("settings-nav", "Team", page.PAGE_PATH, order=20, render=page.render, submit=page.submit,
                 scope=page.SCOPE, group="Team")
    registry.add("header-nav", "Team", page.PAGE_PATH, order=85, scope=page.SCOPE, group="Account")


@hookimpl
async def decide_member(gateway: Gateway, merchant_id: str, member_id: str) -> Member | None:
    return await members.member(gateway, merchant_id, member_id)


@hookimpl
async def decide_member_login(gateway: Gateway, email: str) -> MemberLogin | None:
    return await members.login(gateway, email)


@hookimpl
async def decide_proven_address(gateway: Gateway, purpose: str, reference: str,
                                address: ProvenAddress) -> Member | None:
    if purpose != joining.PURPOSE:
        return None
    return await joining.join_with_proof(gateway, reference, address)
