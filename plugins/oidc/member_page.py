"""The dashboard's "Sign-in" settings tab: a team member links their own identity-provider account.

The browser twin of ``POST /dashboard/auth/google/link``: the dashboard's
session is an HttpOnly cookie a page script cannot turn into a bearer
token, so a member links from this form. Its ``submit`` starts the same
marked sign-in and answers a :class:`DashboardRedirect` to the provider,
carrying the login and browser cookies the callback checks. The account
holder's identity links by its verified e-mail when signing in, so the
page only says so. Any member may use it, whatever their role (their own
sign-in, like their own 2FA).
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardRedirect, DashboardView, Principal
from . import members
from .config import provider_of
from .routes import started

PAGE_PATH = "/app/sign-in-methods"
TEMPLATE = "oidc/member_link.html"


async def _linked(gateway: Any, merchant_id: str, member_id: str) -> bool:
    return bool(await gateway.db.fetch_val(
        "SELECT 1 FROM oidc_identities WHERE merchant_id = :m AND member_id = :u LIMIT 1",
        {"m": merchant_id, "u": member_id}))


async def render(gateway: Any, merchant_id: str, query: Mapping[str, Any], principal: Principal) -> DashboardView:
    member_id = principal.member_id
    return DashboardView(TEMPLATE, {
        "configured": provider_of(gateway) is not None, "is_member": member_id is not None,
        "linked": member_id is not None and await _linked(gateway, merchant_id, member_id),
    })


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any], principal: Principal) -> DashboardRedirect:
    """Off to the provider; back at the callback, the identity is the member's (routes.callback)."""
    url, set_cookies = await started(gateway, members.link_for(principal))
    return DashboardRedirect(url, set_cookies)
