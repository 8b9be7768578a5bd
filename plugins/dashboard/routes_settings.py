"""Settings (webhook and its secret, coins, confirmations, customer static mode, legacy keys), 2FA, API keys,
webhook logs with redelivery, and a test event to the webhook URL.

Secrets the core creates (an API key, a webhook secret, a TOTP secret) are
shown once, in the 200 answer to the form that created them, never in a URL.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from aiohttp import web

from ...api import (
    EVERYONE, FIAT_CURRENCIES, ApiError, Field, GATEWAY, ValidationError, brand_choices,
    describe_person, form_integer, pagination, qr_svg, validate,
)
from ...api.merchant import (
    KEY_TYPES, ScopedKeyRequest, account_view, change_key_brand, create_fields, create_scoped_key, delivery_log,
    disable_totp, enable_totp, list_api_keys, may_rotate, may_rotate_legacy, normalize_totp_code,
    redeliverable_events, require_merchant, revoke_scoped_key, rotate_legacy_key, rotate_scoped_key, send_test_event,
    servable_coins,
    set_accepted_coins, set_confirmations, set_customer_static_mode, set_display_name, set_webhook, start_totp_setup,
    disable_member_totp, enable_member_totp, recovery_codes_left, renew_recovery_codes, start_member_totp_setup,
)
from .routes_payments import pager, principal
from .form_errors import error_context
from .payment_defaults import choose_currency, chosen_currency, preselected
from .session import Session
from .views import can, error_text, nav_entries, render, see_other, signed_in
from .webhook_resend import send_again

# What a team member needs for each settings form (the account holder needs nothing).
SECTION_SCOPES = {"webhook": "webhook:manage", "rotate-key": "key:manage"}


def _settings_scope(request: web.Request) -> str:
    return SECTION_SCOPES.get(request.match_info["section"], "settings:manage")

routes = web.RouteTableDef()

MAX_KEY_DAYS = 3650  # a key made on this page expires within ten years
PRIVATE_REFUSED = "private or internal address"  # core/infra/netguard.py's words for a refused private URL


def private_url_help(gateway: Any, errors: Any) -> str | None:
    """Which help to show beside a webhook URL refused for being private: how to allow one ("development",
    where ``ORBCHAIN_ALLOW_PRIVATE_URLS`` is for) or why not ("production"); None for any other error."""
    if PRIVATE_REFUSED not in str((errors or {}).get("webhook_url", "")):
        return None
    return "development" if gateway.config.is_development else "production"


# The settings page's sections in order (issue 49 item 9): anchor -> heading. A ``settings-nav`` entry is listed in
# the section its ``group`` names, else under "More settings".
SECTIONS = (("business", "Business"), ("payments", "Payments"), ("webhooks", "Webhooks"), ("security", "Security"),
            ("team", "Team"))
# Each form's section (the anchor the browser returns to after saving it).
FORM_SECTIONS = {"profile": "business", "default-currency": "payments", "coins": "payments",
                 "confirmations": "payments", "static-mode": "payments", "webhook": "webhooks",
                 "rotate-key": "security"}


async def _settings_page(request: web.Request, session: Session, *, status: int = 200, **context: Any) -> web.Response:
    gateway = request.app[GATEWAY]
    row = await require_merchant(gateway.db, session.merchant_id)
    account = account_view(gateway, row)
    issuer = principal(session).key_issuer()
    servable = servable_coins(gateway, row)
    chosen = await chosen_currency(gateway, session.merchant_id)
    titles = {title for _, title in SECTIONS}
    section_tabs: dict[str, list[Any]] = {}
    for tab in nav_entries(gateway, "settings-nav", session):
        section_tabs.setdefault(tab.group if tab.group in titles else "", []).append(tab)
    saved = request.query.get("saved", "")
    return render(request, session, "dashboard/settings.html", {
        "account": account, "display_name": row["display_name"] or "", "coins": list(gateway.coins.names()),
        "coins_servable": servable, "fiats": FIAT_CURRENCIES, "chosen_currency": chosen,
        "default_currency": preselected(chosen, servable) if chosen else None,
        "confirmations_text": ", ".join(f"{coin} {n}" for coin, n in account["confirmations"].items()),
        "webhook_unsigned": bool(row["webhook_url"]) and not row["webhook_secret"],
        "key_types": {name: kind for name, kind in KEY_TYPES.items() if may_rotate_legacy(gateway, issuer, kind)},
        "sections": SECTIONS, "section_tabs": section_tabs, "saved": saved if saved in FORM_SECTIONS else None,
        "typed": {}, "form_section": None, **context}, status=status)


@routes.get("/app/settings")
@signed_in(scope="settings:manage")
async def settings(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    return await _settings_page(request, session)


def _confirmations(form: Any, coins: Any) -> dict[str, int]:
    """The confirmations form's numbers by coin; every refused one named by its field (``conf_<COIN>``)."""
    thresholds: dict[str, int] = {}
    errors: dict[str, str] = {}
    for name, value in form.items():
        if not (name.startswith("conf_") and isinstance(value, str)):
            continue
        coin = name[len("conf_"):].upper()
        if coin not in coins:
            errors[name] = "not a coin of this gateway"
        elif value.strip():
            try:
                thresholds[coin] = form_integer(value, name, minimum=0)  # the core checks the coin's floor
            except ValidationError as exc:
                errors[name] = "; ".join(str(why) for why in (exc.detail or {}).values()) or exc.message
    if errors:
        raise ValidationError(errors)
    return thresholds


def _conf_fields(exc: ApiError, coins: Any) -> ApiError:
    """The core's complaint about a coin's confirmations (``{"BTC": ...}``) named by that coin's field."""
    detail = exc.detail if isinstance(exc.detail, dict) else None
    if not detail:
        return exc
    return ValidationError({f"conf_{k}" if k in coins else k: v for k, v in detail.items()})


@routes.post("/app/settings/{section}")
@signed_in(scope=_settings_scope)
async def save_settings(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """One handler per settings form, each calling the core function behind its ``PUT /dashboard/settings/*``.

    Saved: back to the form's section, which says what it saved. Refused: the page again (4xx), the error
    beside the field, what was typed kept in that form, and nothing changed."""
    gateway, merchant_id = request.app[GATEWAY], session.merchant_id
    section = request.match_info["section"]
    if section not in FORM_SECTIONS:
        raise web.HTTPNotFound()
    shown: dict[str, Any] = {}
    coins = set(gateway.coins.names())
    try:
        if section == "webhook":
            clean = validate({"webhook_url": form.get("webhook_url", "").strip()},
                             [Field("webhook_url", "url", required=True, max_len=500)])
            result = await set_webhook(gateway, merchant_id, clean["webhook_url"],
                                       form.get("rotate_secret") == "1")
            if result.get("webhook_secret"):
                shown = {"title": "Webhook secret", "name": "webhook_secret", "value": result["webhook_secret"]}
        elif section == "coins":
            chosen_coins = [c.upper() for c in form.getall("accepted_coins", []) if isinstance(c, str)]
            if not chosen_coins:
                raise ValidationError({"accepted_coins": "choose at least one coin"})
            if any(c not in coins for c in chosen_coins):
                raise ValidationError({"accepted_coins": "choose coins from the list"})
            await set_accepted_coins(gateway, merchant_id, chosen_coins)
        elif section == "confirmations":
            try:
                await set_confirmations(gateway, merchant_id, _confirmations(form, coins))
            except ApiError as exc:
                raise _conf_fields(exc, coins) from exc
        elif section == "profile":
            await set_display_name(gateway, merchant_id, form.get("display_name"))
        elif section == "default-currency":
            merchant = await require_merchant(gateway.db, merchant_id)
            await choose_currency(gateway, merchant_id, form.get("default_currency"),
                                  servable_coins(gateway, merchant))
        elif section == "static-mode":
            await set_customer_static_mode(gateway, merchant_id, form.get("enabled") == "1")
        else:  # rotate-key
            key_type = form.get("key_type")
            if key_type not in KEY_TYPES:
                raise ValidationError({"key_type": "choose a key"})
            new_key = await rotate_legacy_key(gateway, merchant_id, KEY_TYPES[key_type],
                                              issuer=principal(session).key_issuer())
            shown = {"title": "New API key", "name": f"{KEY_TYPES[key_type]}_api_key", "value": new_key}
    except ApiError as exc:
        if section == "webhook":  # its one field: the error beside it, the typed URL and choice kept
            typed = {"webhook_url": form.get("webhook_url", ""), "rotate_secret": form.get("rotate_secret") == "1"}
            context = error_context(exc)
            return await _settings_page(request, session, webhook_form=typed, status=exc.status,
                                        private_url_help=private_url_help(gateway, context.get("errors")), **context)
        if section == "profile":
            return await _settings_page(request, session, profile_form={"display_name": form.get("display_name", "")},
                                        status=exc.status, **error_context(exc))
        if section == "rotate-key":
            return await _rotation_page(request, session, status=exc.status, **error_context(exc))
        typed = {name: value for name, value in form.items() if isinstance(value, str) and name != "csrf_token"}
        typed["accepted_coins"] = [c for c in form.getall("accepted_coins", []) if isinstance(c, str)]
        return await _settings_page(request, session, status=exc.status, typed=typed, form_section=section,
                                    **error_context(exc))
    if section == "rotate-key":
        return await _rotation_page(request, session, secret=shown)
    if shown:
        return await _settings_page(request, session, secret=shown, saved=section)
    raise web.HTTPSeeOther(f"/app/settings?saved={section}#{FORM_SECTIONS[section]}")


async def _rotation_page(request: web.Request, session: Session, **context: Any) -> web.Response:
    """The answer to an account key's rotation: the settings page, or the keys page for a member who manages keys
    but may not read the settings (their role lacks ``settings:manage``)."""
    if can(session, "settings:manage"):
        return await _settings_page(request, session, **context)
    return await _keys_page(request, session, **context)


# -- two-factor ------------------------------------------------------------------------------------


@routes.get("/app/security")
@signed_in(scope=EVERYONE)
async def security(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    return await _security_page(request, session)


async def _security_page(request: web.Request, session: Session, *, status: int = 200,
                         **context: Any) -> web.Response:
    """The page, with how many of the person's recovery codes are left while their 2FA is on."""
    own = _OwnTotp(request, session)
    left = await recovery_codes_left(own.gateway, session.merchant_id, own.member) if session.totp_enabled else None
    return render(request, session, "dashboard/security.html", {"codes_left": left, **context}, status=status)


class _OwnTotp:
    """The signed-in person's own second factor: the holder's (``account:credentials``) or a member's."""

    def __init__(self, request: web.Request, session: Session) -> None:
        self.gateway, self.session = request.app[GATEWAY], session
        self.member = session.principal.member_id if session.is_member and session.principal else None

    async def setup(self) -> tuple[str, str]:
        if self.member is None:
            return await start_totp_setup(self.gateway, self.session.merchant_id)
        return await start_member_totp_setup(self.gateway, self.session.merchant_id, self.member, self.session.email)

    async def enable(self, code: str) -> list[str]:
        if self.member is None:
            return await enable_totp(self.gateway, self.session.merchant_id, code)
        return await enable_member_totp(self.gateway, self.session.merchant_id, self.member, self.session.email,
                                        code)

    async def disable(self, code: str) -> None:
        if self.member is None:
            await disable_totp(self.gateway, self.session.merchant_id, code)
        else:
            await disable_member_totp(self.gateway, self.session.merchant_id, self.member, self.session.email, code)

    async def renew_codes(self, code: str) -> list[str]:
        return await renew_recovery_codes(self.gateway, self.session.merchant_id, self.member, code)


@routes.post("/app/security/{action}")
@signed_in(scope=EVERYONE)
async def totp(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """setup (secret and a server-rendered QR), verify (turns 2FA on and shows the recovery codes once),
    recovery-codes (a new set, shown once), disable (needs a code): of whoever is signed in (a team member's
    own second factor, never the holder's)."""
    own = _OwnTotp(request, session)
    action = request.match_info["action"]
    if action not in ("setup", "verify", "disable", "recovery-codes"):
        raise web.HTTPNotFound()
    try:
        if action == "setup":
            secret, url = await own.setup()
            return render(request, session, "dashboard/security.html",
                          {"setup": {"secret": secret, "qr": await qr_svg(own.gateway.cpu, url, scale=5, cache=False)}})
        code = normalize_totp_code(form.get("code"))
        if code is None:
            raise ValidationError({"code": "must be a 6-digit code"})
        if action == "disable":
            await own.disable(code)
            raise see_other("/app/security", "totp-disabled")
        codes = await own.enable(code) if action == "verify" else await own.renew_codes(code)
    except ApiError as exc:
        return await _security_page(request, session, error=error_text(exc), status=exc.status)
    # Shown in this answer only (never in a URL); the session still says 2FA is off right after verify.
    return await _security_page(request, replace(session, totp_enabled=True), recovery_codes=codes)


# -- API keys ----------------------------------------------------------------------------------------


async def _keys_page(request: web.Request, session: Session, *, status: int = 200, branding: str | None = None,
                     **context: Any) -> web.Response:
    """The keys, who issued each, and the forms: only the scopes the signed-in person holds can be given,
    only keys whose scopes they hold can be rotated or re-branded (the core refuses the rest anyway);
    ``branding``: a key id whose brand form replaces the new-key form."""
    gateway = request.app[GATEWAY]
    listed = await list_api_keys(gateway.db, session.merchant_id)
    brands = await brand_choices(gateway, session.merchant_id)  # the picker, and each key's brand by name
    issuer = principal(session).key_issuer()
    people = {person: await describe_person(gateway, session.merchant_id, person)
              for person in {key["issued_by"] for key in listed["keys"]}}
    rotatable = {key["id"] for key in listed["keys"] if may_rotate(gateway, issuer, key)}
    if branding is not None:  # ?brand=<key id>: its brand form, for a live scoped key its scopes' holder may change
        context["branding"] = next((key for key in listed["keys"] if key["id"] == branding and key["id"] in rotatable
                                    and not key["is_legacy"] and not key["revoked_at"]), None)
        if context["branding"] is None:
            context["error"], status = "No such key in this account that you may change.", 404
    return render(request, session, "dashboard/keys.html", {
        "keys": listed["keys"], "scopes": [s for s in gateway.scopes if not s.members_only], "values": {},
        "brands": brands, "brand_names": {b.brand_id: b.name for b in brands},
        "not_held": set(issuer.lacking(gateway.scopes.names())), "people": people, "rotatable": rotatable,
        "key_actions": gateway.dashboard.entries("key-actions"), **context}, status=status)


@routes.get("/app/keys")
@signed_in(scope="key:manage")
async def keys(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    return await _keys_page(request, session, branding=request.query.get("brand"))


async def _change_brand(request: web.Request, session: Session, form: Any, key_id: str) -> web.StreamResponse:
    """A key's brand changed (or cleared: "") from its brand form; refused, the form again with why."""
    gateway = request.app[GATEWAY]
    brand_id = form.get("brand_id", "").strip() or None
    try:
        await change_key_brand(gateway, session.merchant_id, key_id, brand_id, issuer=principal(session).key_issuer())
    except ApiError as exc:
        return await _keys_page(request, session, branding=key_id, values={"brand_id": brand_id or ""},
                                status=exc.status, **error_context(exc))
    raise see_other("/app/keys", "key-brand-changed")


def _lines(value: Any) -> list[str]:
    """A textarea or comma list as items (allowlists)."""
    if not isinstance(value, str):
        return []
    return [item.strip() for item in value.replace(",", "\n").splitlines() if item.strip()]


@routes.post("/app/keys")
@signed_in(scope="key:manage")
async def create_key(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    body: dict[str, Any] = {"label": form.get("label", "").strip(), "scopes": form.getall("scopes", []),
                            "coin_allowlist": _lines(form.get("coin_allowlist")),
                            "ip_allowlist": _lines(form.get("ip_allowlist"))}
    for name in ("webhook_url", "rate_limit_rpm", "expires_in_days", "brand_id"):
        value = form.get(name, "").strip()
        if value:
            body[name] = value
    try:
        days = body.pop("expires_in_days", None)
        if days is not None:
            body["expires_at"] = gateway.now() + form_integer(days, "expires_in_days", minimum=1,
                                                              maximum=MAX_KEY_DAYS) * 86400
        if "rate_limit_rpm" in body:
            body["rate_limit_rpm"] = form_integer(body["rate_limit_rpm"], "rate_limit_rpm")
        clean = validate(body, create_fields(gateway.scopes.names()))
        result = await create_scoped_key(gateway, session.merchant_id, ScopedKeyRequest(**clean),
                                         issuer=principal(session).key_issuer())
    except ApiError as exc:
        return await _keys_page(request, session, error=error_text(exc), values=body, status=exc.status)
    return await _keys_page(request, session, created=result)


@routes.post("/app/keys/{key_id}/{action}")
@signed_in(scope="key:manage")
async def change_key(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    gateway, key_id = request.app[GATEWAY], request.match_info["key_id"]
    action = request.match_info["action"]
    if action not in ("revoke", "rotate", "brand"):
        raise web.HTTPNotFound()
    if action == "brand":
        return await _change_brand(request, session, form, key_id)
    try:
        if action == "revoke":
            await revoke_scoped_key(gateway, session.merchant_id, key_id)
            raise see_other("/app/keys", "key-revoked")
        result = await rotate_scoped_key(gateway, session.merchant_id, key_id, issuer=principal(session).key_issuer())
    except ApiError as exc:
        if exc.status == 404:
            raise
        return await _keys_page(request, session, error=error_text(exc), status=exc.status)
    return await _keys_page(request, session, rotated=result)


# -- webhook logs ----------------------------------------------------------------------------------


@routes.get("/app/webhooks")
@signed_in(scope="webhook:manage")
async def webhook_logs(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    return await _webhooks_page(request, session)


async def _webhooks_page(request: web.Request, session: Session, *, error: str | None = None,
                         status: int = 200) -> web.Response:
    gateway = request.app[GATEWAY]
    limit, offset = pagination(request.query, default_limit=50, max_limit=200)
    logs, total = await delivery_log(gateway, session.merchant_id, limit=limit, offset=offset)
    again = await redeliverable_events(gateway, session.merchant_id, [log["event_id"] for log in logs])
    return render(request, session, "dashboard/webhooks.html", {
        "logs": logs, "redeliverable": again, "page": pager(total, limit, offset, {}), "error": error},
        status=status)


@routes.post("/app/settings/webhook/test")
@signed_in(scope="webhook:manage")
async def webhook_test(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """"Send test event": a signed ``webhook.test`` through the outbox, then the log where its attempts show."""
    gateway = request.app[GATEWAY]
    try:
        await send_test_event(gateway, session.merchant_id)
    except ApiError as exc:  # no URL yet, or the limit of a few a minute
        return await _settings_page(request, session, error=error_text(exc), status=exc.status)
    raise see_other("/app/webhooks", "test-event-queued")


@routes.post("/app/webhooks/{event_id}/redeliver")
@signed_in(scope="webhook:manage")
async def redeliver_event(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """"Send again" in the delivery log: the payment page's rule (``webhook_resend.py``); past the account's
    bound, the log again with why (429)."""
    return await send_again(request, session.merchant_id, request.match_info["event_id"], back="/app/webhooks",
                            refused=lambda error, status: _webhooks_page(request, session, error=error, status=status))
