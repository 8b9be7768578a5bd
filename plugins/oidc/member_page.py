"""The dashboard's "Sign-in" settings tab: a person links their own identity-provider account.

The browser twin of ``POST /dashboard/auth/google/link``: the dashboard's
session is an HttpOnly cookie a page script cannot turn into a bearer
token, so people link from this form. Its ``submit`` starts the same
marked sign-in and answers a :class:`DashboardRedirect` to the provider,
carrying the login and browser cookies the callback checks. Any member may
use it, whatever their role (their own sign-in, like their own 2FA); the
account holder confirms with their password (or a code with 2FA on) first,
since an identity linked to them signs in with every power of the account.
An identity-provider sign-in never links by e-mail (``identities.py``), so
this is how a password account starts signing in through the provider.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardRedirect, DashboardView, Principal
from . import linking
from .config import provider_of
from .routes import started

PAGE_PATH = "/app/sign-in-methods"
TEMPLATE = "oidc/member_link.html"


async def _linked(gateway: Any, merchant_id: str, member_id: str | None) -> bool:
    if member_id is None:
        return bool(await gateway.db.fetch_val(
            "SELECT 1 FROM oidc_identities WHERE merchant_id = :m AND member_id IS NULL LIMIT 1", {"m": merchant_id}))
    return bool(await gateway.db.fetch_val(
        "SELECT 1 FROM oidc_identities WHERE merchant_id = :m AND member_id = :u LIMIT 1",
        {"m": merchant_id, "u": member_id}))


async def render(gateway: Any, merchant_id: str, query: Mapping[str, Any], principal: Principal) -> DashboardView:
    return DashboardView(TEMPLATE, {
        "configured": provider_of(gateway) is not None, "is_member": principal.member_id is not None,
        "linked": await _linked(gateway, merchant_id, principal.member_id),
    })


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any], principal: Principal) -> DashboardRedirect:
    """Off to the provider; back at the callback, the identity is the signed-in person's (routes.callback)."""
    url, set_cookies = await started(gateway, await linking.target_for(gateway, principal, form))
    return DashboardRedirect(url, set_cookies)
