"""The ChangeNOW venue (plugins/changenow) against a local server speaking ChangeNOW API v2.

The stand-in judges what we send by ChangeNOW's published rules, not by our
code: the API key header, the currency/network pairs it lists, decimal
amounts above its minimum, a payout address of the target network's form,
a ``rateId`` it issued for the fixed-rate flow, refunds only of failed
exchanges. Its answers carry amounts as JSON numbers, as ChangeNOW's do.
Nothing here reaches the internet.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from dataclasses import replace
from decimal import Decimal

import pytest
from aiohttp import web

from orbchain.core.ledger import book as ledger
from orbchain.core.payouts.worker import process_payouts
from orbchain.plugins.changenow import ChangeNowVenue
from orbchain.plugins.swaps.engine import run_swaps
from orbchain.plugins.swaps.service import venue_account
from orbchain.plugins.swaps.venue_registry import venues_of
from orbchain.plugins.swaps.venues import (
    EXCHANGING, FINISHED, REFUNDED, WAITING, VenueQuote, VenueRefused, VenueUnavailable,
)

from .approvals_support import set_policy
from .support import api
from .test_payouts import BTC_DEST, EVM_DEST, advance_clock, fund, payout_env

API_KEY = "test-changenow-key"
RATES = {("btc", "btc", "eth", "eth"): Decimal("20"), ("xmr", "xmr", "btc", "btc"): Decimal("0.004")}
MIN_AMOUNT = {"btc": Decimal("0.0002"), "xmr": Decimal("0.05")}
ADDRESS_FORMS = {"eth": re.compile(r"^0x[0-9a-fA-F]{40}$"), "btc": re.compile(r"^(bc1|bcrt1|tb1)[0-9a-z]{20,80}$"),
                 "xmr": re.compile(r"^[458][1-9A-HJ-NP-Za-km-z]{94}$")}
# Where the stand-in takes each source coin in (ChangeNOW's payinAddress): an address of that coin's chain.
XMR_PAYIN = "43aeKax1ts4BoEbSyzKVbbDRmc8nsnpZLUpQBYvhUxs3KVrodnaFaBEQMDp69u4VaiEG3LSQXA6M61mXPrztCLuh7PFUAmd"
PAYIN = {"btc": BTC_DEST, "xmr": XMR_PAYIN}
SYMBOLS = {"btc": "BTC", "eth": "ETH", "xmr": "XMR"}
FEE = Decimal("0.995")


class ChangeNowStandIn:
    """ChangeNOW API v2's exchange endpoints, as its documentation describes them."""

    def __init__(self) -> None:
        self.exchanges: dict[str, dict] = {}
        self.rate_ids: dict[str, tuple] = {}
        self.created = 0
        self.fail_with: int | None = None
        self.slow = 0.0
        self.requests: list[tuple[str, str]] = []

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/v2/exchange/min-amount", self.min_amount)
        app.router.add_get("/v2/exchange/estimated-amount", self.estimated)
        app.router.add_post("/v2/exchange", self.create)
        app.router.add_get("/v2/exchange/by-id", self.by_id)
        app.router.add_post("/v2/exchange/refund", self.refund)
        return app

    @web.middleware
    async def _guard(self, request, handler):
        self.requests.append((request.method, request.path))
        if self.slow:
            await asyncio.sleep(self.slow)
        if self.fail_with:
            return web.json_response({"error": "internal", "message": "boom"}, status=self.fail_with)
        if request.headers.get("x-changenow-api-key") != API_KEY:
            return web.json_response({"error": "not_valid_api_key", "message": "Invalid api key"}, status=401)
        return await handler(request)

    @staticmethod
    def _error(code: str, message: str, status: int = 400) -> web.Response:
        return web.json_response({"error": code, "message": message}, status=status)

    @staticmethod
    def _pair(source) -> tuple | None:
        names = ("fromCurrency", "fromNetwork", "toCurrency", "toNetwork")
        pair = tuple(str(source.get(n, "")) for n in names)
        return pair if pair in RATES and source.get("flow") in ("standard", "fixed-rate") else None

    @staticmethod
    def _amount(text) -> Decimal | None:
        if not isinstance(text, str) or not re.fullmatch(r"\d+(\.\d+)?", text):
            return None  # ChangeNOW takes decimal amounts; we send strings
        return Decimal(text)

    async def min_amount(self, request):
        pair = self._pair(request.query)
        if pair is None:
            return self._error("pair_is_inactive", "Pair is inactive")
        return web.json_response(text=f'{{"minAmount": {MIN_AMOUNT[pair[0]]}}}')

    async def estimated(self, request):
        q = request.query
        pair, amount = self._pair(q), self._amount(q.get("fromAmount"))
        if pair is None or amount is None or q.get("type") != "direct":
            return self._error("bad_params", "fromCurrency, toCurrency, networks, fromAmount, flow, type required")
        if amount < MIN_AMOUNT[pair[0]]:
            return self._error("deposit_too_small", "Out of min amount")
        to_amount = (amount * RATES[pair] * FEE).quantize(Decimal("0.00000001"))
        rate_id = None
        if q.get("flow") == "fixed-rate" and q.get("useRateId") == "true":
            rate_id = secrets.token_hex(8)
            self.rate_ids[rate_id] = pair
        return web.json_response(text=(
            f'{{"fromCurrency": "{pair[0]}", "fromNetwork": "{pair[1]}", "toCurrency": "{pair[2]}",'
            f' "toNetwork": "{pair[3]}", "flow": "{q["flow"]}", "type": "direct", "fromAmount": {amount},'
            f' "toAmount": {to_amount}, "validUntil": "2030-01-01T00:10:00.000Z",'
            f' "rateId": {"null" if rate_id is None else chr(34) + rate_id + chr(34)}}}'))

    async def create(self, request):
        body = await request.json()
        pair, amount = self._pair(body), self._amount(body.get("fromAmount"))
        if pair is None or amount is None or body.get("type") != "direct":
            return self._error("bad_params", "invalid exchange parameters")
        if not ADDRESS_FORMS[pair[2]].match(str(body.get("address", ""))):
            return self._error("not_valid_address", "Invalid recipient address")
        if "refundAddress" in body and not ADDRESS_FORMS[pair[0]].match(str(body["refundAddress"])):
            return self._error("not_valid_refund_address", "Invalid refund address")
        if body["flow"] == "fixed-rate" and self.rate_ids.get(body.get("rateId")) != pair:
            return self._error("not_valid_rate_id", "rateId is required for fixed-rate")
        if amount < MIN_AMOUNT[pair[0]]:
            return self._error("deposit_too_small", "Out of min amount")
        self.created += 1
        exchange_id = secrets.token_hex(7)
        to_amount = (amount * RATES[pair] * FEE).quantize(Decimal("0.00000001"))
        self.exchanges[exchange_id] = {"pair": pair, "from": amount, "to": to_amount, "status": "waiting",
                                       "payin": PAYIN[pair[0]], "refund": body.get("refundAddress"),
                                       "address": body["address"]}
        return web.json_response(text=(
            f'{{"id": "{exchange_id}", "fromAmount": {amount}, "toAmount": {to_amount}, "flow": "{body["flow"]}",'
            f' "type": "direct", "payinAddress": "{PAYIN[pair[0]]}", "payoutAddress": "{body["address"]}",'
            f' "fromCurrency": "{pair[0]}", "toCurrency": "{pair[2]}"}}'))

    async def by_id(self, request):
        ex = self.exchanges.get(request.query.get("id", ""))
        if ex is None:
            return self._error("not_found", "Transaction not found", 404)
        ex_id = request.query["id"]
        amount_to = ex["to"] if ex["status"] == "finished" else "null"
        return web.json_response(text=(
            f'{{"id": "{request.query["id"]}", "status": "{ex["status"]}", "fromCurrency": "{ex["pair"][0]}",'
            f' "fromNetwork": "{ex["pair"][1]}", "toCurrency": "{ex["pair"][2]}", "toNetwork": "{ex["pair"][3]}",'
            f' "expectedAmountFrom": {ex["from"]}, "expectedAmountTo": {ex["to"]}, "amountTo": {amount_to},'
            f' "payinHash": {_json_text(ex.get("payin_hash") or ("in" + ex_id if ex["status"] != "waiting" else None))},'
            f' "payoutHash": {_json_text(ex.get("payout_hash") or ("out" + ex_id if ex["status"] == "finished" else None))},'
            f' "refundHash": {chr(34) + "rf" + request.query["id"] + chr(34) if ex["status"] == "refunded" else "null"}}}'))

    # -- what ChangeNOW does on the chains, simulated: the payer's deposit, the payout --------------

    def receive(self, exchange_id: str, payin_hash: str = "", status: str = "exchanging") -> None:
        """The payer's deposit reached the payinAddress (seen on the source chain, which is not ours)."""
        self.exchanges[exchange_id].update(status=status, payin_hash=payin_hash or "xmr" + exchange_id)

    async def pay_out(self, exchange_id: str, devnet, amount: Decimal | None = None) -> str:
        """Send the converted coin to the exchange's payout address on the devnet chain; the txid.

        ``amount`` below the promised ``toAmount`` is a short delivery.
        """
        ex = self.exchanges[exchange_id]
        sent = ex["to"] if amount is None else amount
        txid = await devnet.pay(SYMBOLS[ex["pair"][2]], ex["address"], str(sent))
        ex.update(status="finished", to=sent, payout_hash=txid)
        return txid

    async def refund(self, request):
        body = await request.json()
        ex = self.exchanges.get(body.get("id", ""))
        if ex is None:
            return self._error("not_found", "Transaction not found", 404)
        if ex["status"] != "failed" or not ADDRESS_FORMS[ex["pair"][0]].match(str(body.get("address", ""))):
            return self._error("refund_not_allowed", "Refund is not available for this exchange")
        ex.update(status="refunded", refunded_to=body["address"])
        return web.json_response({"result": True})


def _json_text(value: str | None) -> str:
    return "null" if value is None else f'"{value}"'


@pytest.fixture
async def stand_in(aiohttp_server):
    server = ChangeNowStandIn()
    running = await aiohttp_server(server.app())
    server.url = str(running.make_url("")).rstrip("/")
    return server


def sections(stand_in, **changenow):
    return {"plugin": {"changenow": {"api_key": API_KEY, "base_url": stand_in.url, "timeout_seconds": 2,
                                     **changenow},
                       "swaps": {"venue": "changenow", "payout_addresses": {"ETH": EVM_DEST},
                                 "refund_addresses": {"BTC": BTC_DEST}},
                       "devnet_venue": {"enabled": False}}}


@pytest.fixture
async def env(make_client, make_config, stand_in):
    client, merchant, devnet = await payout_env(make_client, make_config, **sections(stand_in))
    return client, merchant, devnet, venues_of(devnet.gateway)["changenow"], stand_in


async def test_registered_through_register_swap_venues_only_with_an_api_key(make_client, make_config):
    client, _, devnet = await payout_env(make_client, make_config)
    assert "changenow" not in venues_of(devnet.gateway).names()


async def test_quote_reads_amounts_exactly(env):
    _, _, _, venue, server = env
    quote = await venue.quote("BTC", "ETH", 500_000)
    assert quote.to_amount == 99_500_000_000_000_000  # 0.005 * 20 * 0.995 ETH in wei
    assert quote.min_from_amount == 20_000 and quote.floating is True and quote.rate_id is None
    assert quote.valid_until == 1893456600
    with pytest.raises(VenueRefused):
        await venue.quote("BTC", "ETH", 10_000)  # below ChangeNOW's minimum
    assert not venue.supports("BTC", "XMR") and venue.supports("XMR", "BTC")


async def test_fixed_rate_flow_sends_the_rate_id_back(make_client, make_config, stand_in):
    _, _, devnet = await payout_env(make_client, make_config, **sections(stand_in, flow="fixed-rate"))
    venue = venues_of(devnet.gateway)["changenow"]
    quote = await venue.quote("BTC", "ETH", 500_000)
    assert quote.rate_id in stand_in.rate_ids and quote.floating is False
    order = await venue.create_swap("swp_fixed", quote, payout_address=EVM_DEST, refund_address=BTC_DEST)
    assert order.deposit_address == BTC_DEST and stand_in.created == 1


async def test_create_is_idempotent_by_swap_id_and_status_follows(env):
    _, _, _, venue, server = env
    quote = await venue.quote("BTC", "ETH", 500_000)
    first = await venue.create_swap("swp_1", quote, payout_address=EVM_DEST, refund_address=BTC_DEST)
    again = await venue.create_swap("swp_1", quote, payout_address=EVM_DEST, refund_address=BTC_DEST)
    assert first == again and server.created == 1
    assert first.deposit_amount == 500_000 and first.to_amount == 99_500_000_000_000_000 and not first.funded
    assert (await venue.status("swp_1", first.venue_ref)).state == WAITING
    server.exchanges[first.venue_ref]["status"] = "exchanging"
    status = await venue.status("swp_1", first.venue_ref)
    assert status.state == EXCHANGING and status.payin_hash == "in" + first.venue_ref
    server.exchanges[first.venue_ref]["status"] = "finished"
    status = await venue.status("swp_1", first.venue_ref)
    assert status.state == FINISHED and status.actual_to_amount == 99_500_000_000_000_000
    assert status.payout_hash == "out" + first.venue_ref


async def test_refund_of_a_failed_exchange(env):
    _, _, _, venue, server = env
    quote = await venue.quote("BTC", "ETH", 500_000)
    order = await venue.create_swap("swp_2", quote, payout_address=EVM_DEST, refund_address=BTC_DEST)
    server.exchanges[order.venue_ref]["status"] = "failed"
    status = await venue.refund("swp_2", order.venue_ref, BTC_DEST)
    assert status.state == REFUNDED and status.refund_hash == "rf" + order.venue_ref
    assert (await venue.refund("swp_2", order.venue_ref, BTC_DEST)).state == REFUNDED  # asked once
    assert server.requests.count(("POST", "/v2/exchange/refund")) == 1


async def test_errors_map_to_unavailable_or_refused(env):
    _, _, _, venue, server = env
    quote = VenueQuote("changenow", "BTC", "ETH", 500_000, 1, 0, 0)
    with pytest.raises(VenueRefused):
        await venue.create_swap("swp_3", quote, payout_address="not-an-address", refund_address=None)
    server.fail_with = 500
    with pytest.raises(VenueUnavailable):
        await venue.quote("BTC", "ETH", 500_000)
    server.fail_with = 429
    with pytest.raises(VenueUnavailable):
        await venue.quote("BTC", "ETH", 500_000)
    server.fail_with, server.slow = None, 3  # longer than timeout_seconds
    with pytest.raises(VenueUnavailable):
        await venue.quote("BTC", "ETH", 500_000)
    server.slow = 0
    wrong_key = ChangeNowVenue(replace(venue.settings, api_key="wrong"), venue.coins, venue.db, venue.clock)
    with pytest.raises(VenueRefused):
        await wrong_key.quote("BTC", "ETH", 500_000)
    await wrong_key.close()


async def test_a_balance_swap_through_changenow_pays_in_through_the_payout_pipeline(env):
    client, merchant, devnet, venue, server = env
    gateway = devnet.gateway
    await fund(client, merchant, devnet)  # 0.0099 BTC
    status, body = await api(client, "POST", "/dashboard/swap", merchant.jwt,
                             json={"from_coin": "BTC", "to_coin": "ETH", "amount": "0.005"})
    assert status == 200 and body["data"]["venue"] == "changenow", body
    swap_id = body["data"]["swap_id"]
    await run_swaps(gateway)
    [exchange_id] = list(server.exchanges)
    status, body = await api(client, "GET", f"/dashboard/swap/{swap_id}", merchant.jwt)
    assert body["data"]["status"] == "PENDING"
    status, payouts = await api(client, "GET", "/dashboard/payouts", merchant.jwt)
    [payin] = payouts["data"]["payouts"]
    assert (payin["destination"], payin["amount"]) == (BTC_DEST, "0.005")
    advance_clock(gateway, 5)
    await process_payouts(gateway)
    server.exchanges[exchange_id]["status"] = "finished"
    advance_clock(gateway, 60)
    await run_swaps(gateway)
    status, body = await api(client, "GET", f"/dashboard/swap/{swap_id}", merchant.jwt)
    assert body["data"]["status"] == "CONFIRMED" and body["data"]["actual_to_amount"] == "0.0995", body
    assert body["data"]["payout_hash"] == "out" + exchange_id
    status, body = await api(client, "GET", "/dashboard/balances", merchant.jwt)
    held = {b["coin"]: b["amount"] for b in body["data"]["balances"] if Decimal(b["amount"])}
    assert held == {"BTC": "0.0049", "ETH": "0.0995"}
    assert await ledger.balance(gateway.db, venue_account("changenow"), "BTC") == 0
    assert (await ledger.check_ledger(gateway.db)).ok


async def test_a_swap_deposit_is_never_held_by_the_approval_policy(env):
    """A swap's deposit is one leg of an exchange whose venue order expires: an approval hold would leave the
    order to expire (and, refunded by the venue, credit the merchant while the reserve still waited). Under a
    policy that holds every BTC payout, the deposit goes out and the swap confirms; an ordinary payout of the
    same size is still held."""
    client, merchant, devnet, venue, server = env
    gateway = devnet.gateway
    await fund(client, merchant, devnet)  # 0.0099 BTC
    await set_policy(gateway, merchant.merchant_id, threshold_BTC="0")
    status, body = await api(client, "POST", "/dashboard/swap", merchant.jwt,
                             json={"from_coin": "BTC", "to_coin": "ETH", "amount": "0.005"})
    assert status == 200, body
    swap_id = body["data"]["swap_id"]
    await run_swaps(gateway)
    [exchange_id] = list(server.exchanges)
    [payin] = (await api(client, "GET", "/dashboard/payouts", merchant.jwt))[1]["data"]["payouts"]
    assert "awaiting_approval" not in payin
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM approval_holds") == 0
    advance_clock(gateway, 5)
    await process_payouts(gateway)
    assert await gateway.db.fetch_val("SELECT stage FROM payouts WHERE description LIKE 'swap %'") == "broadcast"
    server.exchanges[exchange_id]["status"] = "finished"
    advance_clock(gateway, 60)
    await run_swaps(gateway)
    status, body = await api(client, "GET", f"/dashboard/swap/{swap_id}", merchant.jwt)
    assert body["data"]["status"] == "CONFIRMED", body
    status, body = await api(client, "POST", "/v1/payout", merchant.payout_key,
                             json={"currency": "BTC", "address": BTC_DEST, "amount": "0.004"})
    assert status == 200 and body["data"]["awaiting_approval"] is True  # the policy itself is on
    assert (await ledger.check_ledger(gateway.db)).ok
