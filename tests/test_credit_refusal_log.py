"""A refused credit names the plugin that broke the rule, once per plugin and reason, not at every scan.

The deposit stays PENDING and every scan retries it, so before this the
same unattributed error (with its traceback) filled the log once a scan.
"""

from __future__ import annotations

import logging

from orbchain.core.ledger import book as ledger
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl

from .support import Devnet, api, signup

LOGGER = "orbchain.core.ledger.credit_postings"


class PassesThrough:
    """Returns the lines it was given as a new list: a plugin that shapes without breaking anything."""

    PLUGIN_NAME = "passes_through"

    @hookimpl
    def filter_credit_postings(self, postings):
        return list(postings)


class MintsOneUnit:
    """Pays the merchant one base unit from nowhere: the postings no longer sum to zero."""

    PLUGIN_NAME = "mints_one_unit"

    @hookimpl
    def filter_credit_postings(self, credit, postings):
        return [*postings, ledger.Posting(ledger.merchant_available(credit.merchant_id), credit.coin, 1)]


class AnswersNonsense:
    """Answers ``decide_credit_status`` with something that is neither None nor CONFIRMED."""

    PLUGIN_NAME = "answers_nonsense"

    @hookimpl
    def decide_credit_status(self):
        return "HELD"


async def _shop(make_client, make_config, *plugins):
    client = await make_client(make_config(scheduler={"enabled": False}), get_plugin_manager(list(plugins)))
    return client, await signup(client), Devnet(client)


async def _paid(client, merchant, devnet, blocks: int) -> dict:
    """A BTC payment paid on the devnet and mined ``blocks`` blocks (one scan per block); its view."""
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.001"})
    assert status == 200, body
    payment = body["data"]
    await devnet.pay("BTC", payment["address"], payment["pay_amount"])
    for _ in range(blocks):
        await devnet.mine(1)
    return (await api(client, "GET", f"/v1/payment/{payment['track_id']}", merchant.merchant_key))[1]["data"]


def _refusals(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]


async def test_a_refused_posting_names_its_plugin_once_across_scans_and_deposits(make_client, make_config, caplog):
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    client, merchant, devnet = await _shop(make_client, make_config, PassesThrough(), MintsOneUnit())
    first = await _paid(client, merchant, devnet, 9)  # 6 confirmations, then three more scans retrying the credit
    second = await _paid(client, merchant, devnet, 7)
    assert [p["transactions"][0]["status"] for p in (first, second)] == ["PENDING", "PENDING"]

    [record] = _refusals(caplog)  # nine retries of two deposits: one line
    message = record.getMessage()
    assert record.levelno == logging.ERROR
    assert message.startswith("plugin mints_one_unit: credit deposit:") and "postings do not sum to zero" in message
    assert "passes_through" not in message  # it changed the list, but broke nothing
    assert "stays PENDING and is retried at every scan" in message
    repeats = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.DEBUG]
    assert len(repeats) >= 10 and all("mints_one_unit" in r.getMessage() for r in repeats)  # still there with -v
    assert not [r for r in caplog.records if "crediting deposit" in r.getMessage()]  # no traceback per scan


async def test_a_bad_credit_status_answer_names_its_plugin(make_client, make_config, caplog):
    client, merchant, devnet = await _shop(make_client, make_config, AnswersNonsense())
    view = await _paid(client, merchant, devnet, 8)
    assert view["transactions"][0]["status"] == "PENDING"
    [record] = _refusals(caplog)
    assert record.getMessage().startswith("plugin answers_nonsense: credit deposit:")
    assert "decide_credit_status must answer None or 'CONFIRMED' ('HELD')" in record.getMessage()
