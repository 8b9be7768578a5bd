"""Core services for hosted pages: branding, and the checks and widget of an anonymous visitor's form.

Why its own module: every hosted page (the core's ``/pay``, a payment link's prompt, a tip page)
asks the same hooks the same forgiving way.

Records, never rows: plugins reach these through ``orbchain.api`` (docs/plugins.md, "Core services").
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Mapping

from ..accounts.merchants import merchant_for_payments
from ..types.errors import NotFound
from ..types.pages import BrandChoice, PageBranding, SignInWidget
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)


async def check_public_form(gateway: "Gateway", form: str, body: Mapping[str, Any], client_ip: str) -> None:
    """Ask every plugin whether an anonymous visitor's ``form`` may go on (hook ``check_public_form``).

    Raises what a plugin raised (403 ``captcha_failed`` from the captcha plugin); returns when all allow.
    Call it before anything is written.
    """
    await gateway.hooks.check_public_form(form=form, body=body, client_ip=client_ip)


async def screen_sign_in(gateway: "Gateway", action: str, body: Mapping[str, Any], client_ip: str) -> bool:
    """Ask every plugin whether a dashboard sign-up or sign-in may go on, before any account work.

    Raises what a ``check_sign_in`` implementation raised (403
    ``captcha_failed``). Then, for a sign-in (``action`` "login"), True when a
    plugin says this request passed its human challenge
    (``decide_sign_in_challenge``): pass that on to the password check as
    ``challenged``. False otherwise.
    """
    await gateway.hooks.check_sign_in(action=action, body=body, client_ip=client_ip)
    if action != "login":
        return False
    return await gateway.hooks.decide_sign_in_challenge(action=action, body=body, client_ip=client_ip) is True


async def form_widget(gateway: "Gateway") -> SignInWidget | None:
    """The captcha widget a browser form must show (hook ``decide_sign_in_widget``), or None; a plugin answer
    that is not a ``SignInWidget`` is ignored."""
    widget = await gateway.hooks.decide_sign_in_widget()
    return widget if isinstance(widget, SignInWidget) else None


async def page_branding_for(gateway: "Gateway", merchant_id: str, brand_id: str | None = None,
                            payment: Mapping[str, Any] | None = None) -> PageBranding | None:
    """The branding of a hosted page (the ``decide_page_branding`` hook), or None for the plain page.

    Any page asks this: the core's ``/pay`` page and every plugin page (a
    payment link's prompt, a tip page). Branding is cosmetic, so it never
    breaks a page: a plugin that raises or answers something other than a
    ``PageBranding`` is logged and the page renders unbranded. Apply the
    answer with ``orbchain.web.pages.branded`` (template context and CSP).
    """
    try:
        result = await gateway.hooks.decide_page_branding(merchant_id=merchant_id, brand_id=brand_id, payment=payment)
    except Exception as exc:  # an outage is logged once by the database's outage, not per page view
        if not gateway.db_outage.absorb(exc, "a hosted page's branding"):
            log.exception("decide_page_branding failed for merchant %s, brand %s", merchant_id, brand_id)
        return None
    if result is not None and not isinstance(result, PageBranding):
        log.error("decide_page_branding returned %s, not a PageBranding; page left unbranded", type(result).__name__)
        return None
    if result is None or result.name is None:
        name = await display_name(gateway, merchant_id)
        if name:
            return PageBranding(name=name) if result is None else replace(result, name=name)
    return result


async def display_name(gateway: "Gateway", merchant_id: str) -> str | None:
    """The merchant's own name from Settings (the per-process merchant cache, so no query per page view)."""
    try:
        row = await merchant_for_payments(gateway, merchant_id)
    except NotFound:
        return None
    return row.get("display_name")


async def brand_choices(gateway: "Gateway", merchant_id: str) -> list[BrandChoice]:
    """The brands a dashboard form offers (``decide_brand_choices``); empty without a brands plugin, and then
    the form shows no picker. Answers that are not a ``BrandChoice`` are left out."""
    answer = await gateway.hooks.decide_brand_choices(merchant_id=merchant_id)
    return [choice for choice in answer or () if isinstance(choice, BrandChoice)]
