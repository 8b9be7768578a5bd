"""The Team page (``/app/team``): members and their roles, invitations, custom roles.

Served by the dashboard (signed in, CSRF checked, ``team:manage`` needed:
owners and admins); each form posts here with an ``action``. A refused form
comes back with its error and what was typed (the dashboard's plugin-page
rules). An invitation's join link goes to the invited mailbox only
(``mail.py``); the page shows the inviter the invitation's page link only,
which joins nobody (``invites.py``), and says when this server has no way
for an invited person to prove their address. Removing a member asks what becomes of the API keys they
issued: revoked (the default) or kept.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardView, Principal, ValidationError, keys_issued_by, member_person
from ...api.merchant import get_merchant
from . import invites, mail, members, policy, roles
from .settings import settings_of

PAGE_PATH = "/app/team"
SCOPE = "team:manage"


async def _holder_email(gateway: Any, merchant_id: str) -> str:
    row = await get_merchant(gateway.db, merchant_id)
    return row["email"] if row is not None else ""


async def render(gateway: Any, merchant_id: str, query: Mapping[str, str], principal: Principal | None = None,
                 **shown: Any) -> DashboardView:
    holder = await _holder_email(gateway, merchant_id)
    custom = await roles.custom_roles(gateway, merchant_id)
    prover = await invites.address_prover(gateway)
    listed = await members.listing(gateway, merchant_id, holder)
    return DashboardView("teams/team.html", {
        "can_mail": mail.can_mail(gateway), "smtp": bool(settings_of(gateway).smtp_host),
        "prover": prover.label if prover is not None else None,
        "members": listed,
        "member_keys": {m["id"]: len(await keys_issued_by(gateway, merchant_id, member_person(m["id"])))
                        for m in listed if not m["holder"]},
        "invites": await invites.pending(gateway, merchant_id),
        "role_names": [*roles.BUILT_IN, *sorted(custom)],
        "custom_roles": sorted(custom.items()),
        "built_in": {name: sorted(roles.built_in_scopes(gateway, name)) for name in roles.BUILT_IN},
        "scopes": [(scope.name, scope.description) for scope in gateway.scopes if scope.name != roles.HOLDER_SCOPE],
        "acting_role": await members.acting_role(gateway, principal),
        "require_2fa": await policy.requires_2fa(gateway, merchant_id), **shown})


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any],
                 principal: Principal | None = None) -> DashboardView | None:
    action = form.get("action")
    if action == "invite":
        invitation = await invites.create(gateway, merchant_id, form, principal)
        delivery = (await invites.send_join_link(gateway, merchant_id, invitation.id, principal))[1] \
            if mail.can_mail(gateway) else None
        page_link = invitation.page_link if await invites.address_prover(gateway) is not None else None
        return await render(gateway, merchant_id, {}, principal, invited=invitation.email, delivery=delivery,
                            page_link=page_link)
    if action == "send-invite-again":
        email, delivery = await invites.send_join_link(gateway, merchant_id, form.get("invite_id"), principal)
        return await render(gateway, merchant_id, {}, principal, invited=email, resent=True, delivery=delivery)
    if action == "role":
        await members.change_role(gateway, merchant_id, form.get("member_id"), form.get("role"), principal)
    elif action == "remove":
        await members.remove(gateway, merchant_id, form.get("member_id"), principal, form.get("api_keys"))
    elif action == "cancel-invite":
        await invites.cancel(gateway, merchant_id, form.get("invite_id"))
    elif action == "require-2fa":
        await members.require_owner(gateway, principal)
        await policy.set_require_2fa(gateway, merchant_id, form.get("require_2fa") == "on")
    elif action == "custom-role":
        scopes = form.getall("scopes", []) if hasattr(form, "getall") else form.get("scopes", [])
        await roles.create_custom_role(gateway, merchant_id, form.get("name"), scopes)
    else:
        raise ValidationError({"action": "unknown action"})
    return None
