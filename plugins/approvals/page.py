"""The Approvals page (``/app/approvals``): payouts awaiting approval, and the account's policy.

Served by the dashboard (signed in, CSRF checked, ``payout:approve``
needed: owners and admins by default). Approve asks for a TOTP code;
Reject needs none (it only gives the money back). The policy form needs
``team:manage`` too (owners and admins). A refused form comes back with
its error and what was typed.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardRedirect, DashboardView, Forbidden, Principal, ValidationError
from . import holds, policy as policies
from .views import held_view

PAGE_PATH = "/app/approvals"
SCOPE = "payout:approve"
MANAGE = "team:manage"
# What each form did, said on the page it comes back to (a bare "Saved." said nothing about money).
NOTICES = {
    "approved": "Approved: it is sent now, and its requester sees it as sending.",
    "rejected": "Rejected: nothing was sent and the money is back in the balance.",
    "policy-saved": "Approval policy saved: it applies to payouts and transfers made from now on.",
    "policy-off": "Approval policy turned off: new payouts and transfers are no longer held.",
}


def _who(principal: Principal | None) -> str:
    return principal.requester if principal is not None else "holder"


def _may_manage(principal: Principal | None) -> bool:
    return principal is None or principal.has_scope(MANAGE)


async def render(gateway: Any, merchant_id: str, query: Mapping[str, str], principal: Principal | None = None,
                 **shown: Any) -> DashboardView:
    policy = await policies.load(gateway, merchant_id)
    held = [await held_view(gateway, merchant_id, row) for row in await holds.awaiting(gateway, merchant_id)]
    return DashboardView("approvals/approvals.html", {
        "held": held, "me": _who(principal), "policy_on": policy is not None,
        "policy_values": policies.form_values(gateway, policy), "coins": policies.payable_coins(gateway),
        "may_manage": _may_manage(principal), "max_expiry": policies.MAX_EXPIRY_HOURS,
        "own_2fa": await holds.has_own_2fa(gateway, _acting(merchant_id, principal)), **shown})


def _acting(merchant_id: str, principal: Principal | None) -> Principal:
    """Who uses the page: the member, or the holder (the dashboard passes None for the holder)."""
    return principal if principal is not None else Principal(merchant_id=merchant_id, via="jwt")


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any],
                 principal: Principal | None = None) -> DashboardRedirect:
    action = form.get("action")
    if action == "approve":
        await holds.approve(gateway, _acting(merchant_id, principal), form.get("id"), form.get("totp_code"))
        done = "approved"
    elif action == "reject":
        await holds.reject(gateway, merchant_id, form.get("id"), _who(principal))
        done = "rejected"
    elif action in ("policy", "policy-off"):
        if not _may_manage(principal):
            raise Forbidden(f"access denied: your role lacks scope {MANAGE}", code="missing_scope",
                            detail={"scope": MANAGE})
        if action == "policy":
            await policies.save(gateway, merchant_id, policies.parse(gateway, form))
            done = "policy-saved"
        else:
            await policies.remove(gateway, merchant_id)
            done = "policy-off"
    else:
        raise ValidationError({"action": "unknown action"})
    return DashboardRedirect(f"{PAGE_PATH}?notice={done}")
