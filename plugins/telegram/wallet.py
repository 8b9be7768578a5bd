"""What the mini-app does with the money, without HTTP (SPEC 4.13).

Reads go through the core's documented services; money moves only through
the core's payout pipeline (``request_payout``), its internal
transfer (``orbchain.api.merchant.send_transfer``) and the swaps plugin's service
(``plugins/swaps/service.py``, ``totp_always``): the mini-app adds no
ledger movement of its own. Payouts and swaps always need a TOTP code
(SPEC 5.4): an account without 2FA gets 403 ``totp_setup_required``, a
wrong or missing code 401 ``totp_invalid``. Codes sent here count against
the mini-app's own TOTP lockout (channel ``miniapp``), never the dashboard's.
2FA can be set up here only once the chat has been linked for the
configured cooling-off time (``mfa_cooling_off_seconds``); turning it on
here is announced to the dashboard.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Mapping

from ...api import (
    AmountError, ApiError, Forbidden, InsufficientBalance, InvalidRequest, NotConfigured, Unauthorized,
    ValidationError, available_balance, body_idempotency_key, pay_events_path, payout_amount, payout_destination,
    plugin_loaded, receive_address, request_payout,
)
from ...api import PRICES
from ...api.merchant import (
    DASHBOARD, INVOICE, TransferRequest, balances_of, enable_totp, is_account_id, list_payments, normalize_totp_code,
    require_merchant, send_transfer, start_totp_setup, verify_totp,
)
from . import store
from .linking import MINIAPP
from .settings import settings_of

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

RECENT_PAYMENTS = 10  # SPEC 4.13: the 10 most recent payments
# Open invoices whose status the list follows live (the newest first): below the hosted stream's per-IP bound
# (live.max_streams_per_ip, default 8), so a merchant's phone never crowds out a payer's page on the same network.
LIVE_PAYMENTS = 4
OPEN = ("Waiting", "Paying")
MAX_DESTINATION = 128  # SPEC 8: payout address max 128
IDEMPOTENCY_NAMESPACE = "tgapp"
# Mini-app payout error codes (SPEC 7) for what the core names otherwise.
_TRANSFER_CODES = {"self_transfer_forbidden": "self_transfer"}


async def balances(gateway: "Gateway", merchant_id: str) -> dict[str, Any]:
    return {"balances": await balances_of(gateway, merchant_id)}


async def recent_payments(gateway: "Gateway", merchant_id: str) -> dict[str, Any]:
    listed = await list_payments(gateway, merchant_id, limit=RECENT_PAYMENTS, offset=0, sort_order="desc")
    payments, live = [], 0
    for row in listed["payments"]:
        events_url = None
        if row["type"] == INVOICE and row["status"] in OPEN and live < LIVE_PAYMENTS:
            events_url, live = pay_events_path(row["track_id"]), live + 1
        payments.append({**row, "events_url": events_url})
    return {"payments": payments}


def network_label(gateway: "Gateway", symbol: str) -> str:
    """How the mini-app names where to send a coin: its chain, plus "token" for a token on it."""
    coin = gateway.coins.require(symbol)
    chain = coin.chain.replace("_", " ").title()
    return f"{chain} ({coin.name} token)" if coin.contract else chain


async def receive(gateway: "Gateway", merchant_id: str, symbol: str) -> dict[str, Any]:
    """The standing address (SPEC 4.13); 400 missing_coin, coin_not_accepted, xmr_receive_unsupported."""
    found = await receive_address(gateway, merchant_id, symbol)
    return {"coin": found.coin, "address": found.address, "network_label": network_label(gateway, found.coin)}


async def prices(gateway: "Gateway") -> dict[str, Any]:
    """Coin -> {usd, change_24h}: usd a decimal string ("0" unknown); change_24h null (no source reports it)."""
    service = gateway.services.get(PRICES)
    table: Mapping[str, Decimal] = await service.prices() if service is not None else {}
    return {coin.symbol: {"usd": format(table.get(coin.symbol, Decimal(0)), "f"), "change_24h": None}
            for coin in gateway.coins}


# -- two-factor -------------------------------------------------------------------------------


async def mfa_status(gateway: "Gateway", merchant_id: str) -> dict[str, Any]:
    merchant = await require_merchant(gateway.db, merchant_id)
    return {"totpEnabled": bool(merchant["totp_enabled"])}


async def require_cooled_off(gateway: "Gateway", merchant_id: str) -> None:
    """403 ``mfa_cooling_off`` (naming when it ends) while the chat was linked less than the cooling-off ago.

    Whoever holds a freshly linked chat (linked by mistake, or by a tricked
    account holder) must not be able to give the account a second factor
    of their own and send its balance away at once.
    """
    link = await store.link_of(gateway, merchant_id)
    wait = settings_of(gateway).mfa_cooling_off_seconds
    if link is None or not wait:
        return
    available_at = int(link["linked_at"]) + wait
    if gateway.now() < available_at:
        when = datetime.fromtimestamp(available_at, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
        raise Forbidden(f"two-factor authentication can be set up from the mini-app from {when}, "
                        f"{_duration(wait)} after this chat was linked; to use it sooner, set it up on the "
                        "dashboard", code="mfa_cooling_off", detail={"available_at": available_at})


def _duration(seconds: int) -> str:
    unit, size = next((u, n) for u, n in (("hour", 3600), ("minute", 60), ("second", 1)) if seconds % n == 0)
    count = seconds // size
    return f"{count} {unit}" + ("" if count == 1 else "s")


async def mfa_setup(gateway: "Gateway", merchant_id: str) -> dict[str, Any]:
    await require_cooled_off(gateway, merchant_id)
    secret, url = await start_totp_setup(gateway, merchant_id)
    return {"secret": secret, "otpauth": url}


async def mfa_verify(gateway: "Gateway", merchant_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
    code = normalize_totp_code(body.get("code"))
    if code is None:
        raise ValidationError({"code": "must be a 6-digit code"})
    await require_cooled_off(gateway, merchant_id)
    codes = await enable_totp(gateway, merchant_id, code, via=MINIAPP)
    return {"ok": True, "totpEnabled": True, "recovery_codes": codes}  # shown once, as on the dashboard


async def require_totp_setup(gateway: "Gateway", merchant_id: str) -> None:
    """403 ``totp_setup_required`` for an account without 2FA: the mini-app never moves money without it."""
    merchant = await require_merchant(gateway.db, merchant_id)
    if not merchant["enabled"]:
        raise Forbidden("account disabled", code="merchant_disabled")
    if not merchant["totp_enabled"]:
        raise Forbidden("two-factor authentication must be set up first", code="totp_setup_required")


def _invalid_totp() -> Unauthorized:
    return Unauthorized("invalid TOTP code", code="totp_invalid")


# -- payout -----------------------------------------------------------------------------------


def _text(body: Mapping[str, Any], name: str, limit: int) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ValidationError({name: "is required"})
    if len(value.strip()) > limit:
        raise ValidationError({name: f"must be at most {limit} characters"})
    return value.strip()


def _coin(gateway: "Gateway", symbol: str) -> Any:
    coin = gateway.coins.get(symbol.upper())
    if coin is None or not coin.payable:
        raise InvalidRequest(f"{symbol.upper()} cannot be sent from the mini-app", code="coin_not_supported")
    return coin


async def payout(gateway: "Gateway", merchant_id: str, body: Mapping[str, Any], *,
                 request_id: str | None = None) -> dict[str, Any]:
    """POST /tgapp/payout: an account id is an internal transfer, anything else an on-chain payout.

    ``request_id`` goes with the money: the webhooks this request causes carry it (SPEC 6.1).
    """
    coin = _coin(gateway, _text(body, "currency", 20))
    destination = _text(body, "destination", MAX_DESTINATION)
    amount = body.get("amount")
    if amount is None or isinstance(amount, (bool, float)):
        raise ValidationError({"amount": "is required: a decimal string"})
    key = body_idempotency_key(body)
    await require_totp_setup(gateway, merchant_id)
    if is_account_id(destination):
        return await _transfer(gateway, merchant_id, coin, destination, amount, body.get("totp_code"), key,
                               request_id)
    return await _onchain(gateway, merchant_id, coin, destination, amount, body.get("totp_code"), key, request_id)


async def _transfer(gateway: "Gateway", merchant_id: str, coin: Any, destination: str, amount: Any,
                    code: Any, key: str | None, request_id: str | None) -> dict[str, Any]:
    try:
        units = coin.to_units(amount)
    except AmountError as exc:
        raise ValidationError({"amount": str(exc)}) from None
    if units <= 0:
        raise ValidationError({"amount": "must be greater than 0"})
    request = TransferRequest(to_account_id=destination, coin=coin.symbol, amount=units,
                              idempotency_key=f"{IDEMPOTENCY_NAMESPACE}:{key}" if key else None,
                              totp_code=code, source=DASHBOARD, key_has_webhook=False,
                              request_id=request_id, totp_channel=MINIAPP)
    try:
        result = await send_transfer(gateway, merchant_id, request)
    except Unauthorized:
        raise _invalid_totp() from None
    except ApiError as exc:
        if exc.code in _TRANSFER_CODES:
            raise InvalidRequest(exc.message, code=_TRANSFER_CODES[exc.code]) from None
        raise
    row = result.row
    return {"kind": "transfer", "track_id": row["id"], "status": "CONFIRMED", "coin": coin.symbol,
            "amount": coin.format(units), "destination": destination}


async def _onchain(gateway: "Gateway", merchant_id: str, coin: Any, destination: str, amount: Any,
                   code: Any, key: str | None, request_id: str | None) -> dict[str, Any]:
    target = payout_destination(gateway, coin.symbol, destination)
    units = payout_amount(gateway, coin.symbol, amount)
    if await available_balance(gateway, merchant_id, coin.symbol) < units:
        raise InsufficientBalance()  # an early answer that spends no TOTP code; the ledger decides again
    if not await verify_totp(gateway.db, merchant_id, code, now=gateway.now(), channel=MINIAPP):
        raise _invalid_totp()
    record = await request_payout(
        gateway, merchant_id, coin=coin.symbol, destination=target, amount=units,
        idempotency_key=f"{IDEMPOTENCY_NAMESPACE}:{key or secrets.token_hex(16)}", request_id=request_id)
    return {"kind": "payout", "track_id": record.track_id, "status": record.status.upper(), "coin": coin.symbol,
            "amount": coin.format(record.amount), "destination": target}


# -- swaps ------------------------------------------------------------------------------------


def _swaps(gateway: "Gateway") -> Any:
    """The swaps plugin's service, or 503 when that plugin is not loaded here."""
    if not plugin_loaded(gateway, "swaps"):
        raise NotConfigured("not configured", code="swaps_not_configured")
    from ..swaps import service

    return service


async def swap_quote(gateway: "Gateway", body: Mapping[str, Any]) -> dict[str, Any]:
    return await _swaps(gateway).quote(gateway, body)


SWAP_FIELDS = ("swap_id", "from_coin", "from_amount", "to_coin", "to_amount_quoted", "status")


async def swap(gateway: "Gateway", merchant_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """POST /tgapp/swap: the swaps service with TOTP always; SPEC 4.13's fields (and ``idempotent`` on a replay)."""
    service = _swaps(gateway)
    service.parse_request(gateway, body)  # a bad body is a 400 before anything about 2FA
    await require_totp_setup(gateway, merchant_id)
    view = await service.commit(gateway, merchant_id, body, totp_always=True, totp_channel=MINIAPP)
    shaped = {name: view[name] for name in SWAP_FIELDS}
    if view.get("idempotent"):
        shaped["idempotent"] = True
    return shaped


async def default_settlement_coin(gateway: "Gateway", merchant_id: str) -> str | None:
    """The account's default settlement coin (the swaps plugin keeps it), None without that plugin."""
    if not plugin_loaded(gateway, "swaps"):
        return None
    from ..swaps import settle

    return await settle.default_settlement_coin(gateway, merchant_id)
