"""The payment detail's pieces without a server: explorer links (config checked, ids never trusted), the locked
rate as money, and the timeline's order and words (issue 49 item 7)."""

from __future__ import annotations

import pytest

from orbchain.api import ConfigError
from orbchain.core.events.outbox import event_id_for
from orbchain.core.payments.history import payment_event_keys
from orbchain.plugins.dashboard.amounts import rate_text
from orbchain.plugins.dashboard.explorers import explorer_link, parse_explorer_urls
from orbchain.plugins.dashboard.payment_timeline import attempt_result, rounds, timeline
from orbchain.plugins.dashboard.settings import parse_settings

URLS = {"bitcoin": "https://mempool.space/tx/{txid}", "USDT_ERC20": "https://etherscan.io/tx/{txid}#eventlog"}
BTC_TX = "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"


def test_explorer_urls_are_checked_when_the_config_is_read():
    assert parse_settings({}).explorer_urls == {}
    assert parse_settings({"explorer_urls": URLS}).explorer_urls == URLS
    for bad in ("https://x.example/tx/", "https://x.example/{txid}/{txid}", "javascript:alert('{txid}')",
                "ftp://x.example/{txid}", "https:///tx/{txid}", "https://{txid}.example/", "//x.example/{txid}",
                "https://x.example/{txid}?a={other}", 5):
        with pytest.raises(ConfigError, match="explorer_urls"):
            parse_explorer_urls({"bitcoin": bad})
    for bad_table in ([URLS["bitcoin"]], {"": URLS["bitcoin"]}, {"bit coin": URLS["bitcoin"]}):
        with pytest.raises(ConfigError, match="explorer_urls"):
            parse_explorer_urls(bad_table)


def test_a_link_needs_a_configured_explorer_and_an_id_a_chain_would_mint():
    assert explorer_link(URLS, coin="BTC", chain="bitcoin", txid=BTC_TX) == f"https://mempool.space/tx/{BTC_TX}"
    token_tx = "0x" + "ab" * 32
    assert explorer_link(URLS, coin="USDT_ERC20", chain="ethereum", txid=token_tx) == (
        f"https://etherscan.io/tx/{token_tx}#eventlog")  # the coin's own entry, its chain has none
    assert explorer_link(URLS, coin="LTC", chain="litecoin", txid=BTC_TX) is None  # none configured: no link
    for hostile in ('"><script>alert(1)</script>', "abc/../../admin", "x" * 129, "short", None, 12345678,
                    "javascript:alert(1)", f"{BTC_TX}?next=https://evil.example"):
        assert explorer_link(URLS, coin="BTC", chain="bitcoin", txid=hostile) is None, hostile


def test_a_locked_rate_reads_as_money():
    assert rate_text("BTC", "60000", "USD") == "1 BTC = 60,000.00 USD"
    assert rate_text("ETH", "3123.456", "EUR") == "1 ETH = 3,123.46 EUR"
    assert rate_text("DOGE", "0.0812", "USD") == "1 DOGE = 0.0812 USD"  # a minor unit would hide the price
    assert rate_text("BTC", "9000000", "JPY") == "1 BTC = 9,000,000 JPY"
    assert rate_text("BTC", None, None) == "" and rate_text("BTC", "nope", "USD") == ""


def test_the_webhook_keys_of_a_payment_are_the_producers_keys():
    payment = {"track_id": "T1", "paid_count": 2, "reverted_count": 1}
    keys = payment_event_keys(payment, [{"id": "d1", "credit_count": 1}], [{"track_id": "R1"}])
    assert set(keys) == {"payment.paying:T1", "payment.expired:T1", "payment.paid:T1:1", "payment.paid:T1:2",
                         "payment.reverted:T1:1", "deposit.credited:d1:1", "deposit.reversed:d1:1",
                         "payout.confirmed:R1", "payout.failed:R1"}
    assert len({event_id_for(k) for k in keys}) == len(keys)


def test_the_timeline_is_in_the_order_things_happened():
    payment = {"created_at": 100, "amount": "0.01", "currency": "BTC", "paid_at": 160, "status": "Paid"}
    history = {
        "deposits": [{"amount": "0.01", "coin": "BTC", "seen_at": 120, "credited_at": 160, "fee": "0.0001",
                      "net": "0.0099", "confirmations": 6}],
        "refunds": [{"amount": "0.001", "coin": "BTC", "status": "Confirmed", "created_at": 200, "finished_at": 260}],
        "closed_at": None,
        "webhooks": [{"event_type": "payment.paid", "status": "failed", "created_at": 160,
                      "attempts": [{"attempt": 1, "status_code": 503, "success": False, "error": None}]}],
    }
    entries = timeline(payment, history)
    assert [e.title for e in entries] == ["Payment created", "Deposit seen", "Deposit credited", "Paid",
                                          "Webhook payment.paid", "Refund requested", "Refund confirmed"]
    assert entries[4].detail == "Gave up after every retry"
    assert attempt_result(entries[4].attempts[0]) == "HTTP 503 (refused)"
    assert attempt_result({"status_code": None, "success": False, "error": "connection refused"}) == (
        "connection refused")


def test_a_round_sent_again_is_marked_where_attempt_one_comes_again():
    attempts = [{"attempt": 1}, {"attempt": 2}, {"attempt": 1}, {"attempt": 1}]
    assert [a["again"] for a in rounds(attempts)] == [False, False, True, True]
    assert rounds([]) == []
