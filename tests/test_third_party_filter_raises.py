"""A third-party ``filter_credit_postings`` that raises is named in the log once per deposit, not at every scan.

The deposit stays PENDING and every scan retries its credit; before this the
same unattributed traceback ("crediting deposit ... failed") filled the log
once a scan, as refused postings once did (tests/test_credit_refusal_log.py).
"""

from __future__ import annotations

import logging

from orbchain.core.contract.plugins import get_plugin_manager, hookimpl

from .support import Devnet, api, signup
from .test_credit_refusal_log import LOGGER, PassesThrough, _paid


class RaisesOnCredit:
    """A bug whose message differs from deposit to deposit (it names the reference)."""

    PLUGIN_NAME = "raises_on_credit"

    @hookimpl
    async def filter_credit_postings(self, credit):
        raise KeyError(f"no share for {credit.reference}")


def _errors(caplog) -> list[logging.LogRecord]:
    """What the crediting path logged at WARNING and above (a refusal, or an unattributed failure)."""
    return [r for r in caplog.records if r.levelno >= logging.WARNING and r.name in (LOGGER, "orbchain.core.watching.deposits")]


async def test_a_raising_filter_is_logged_once_per_plugin_and_deposit(make_client, make_config, caplog):
    caplog.set_level(logging.DEBUG)
    client = await make_client(make_config(scheduler={"enabled": False}),
                               get_plugin_manager([PassesThrough(), RaisesOnCredit()]))
    merchant, devnet = await signup(client), Devnet(client)
    first = await _paid(client, merchant, devnet, 9)  # 6 confirmations, then three more scans retrying the credit
    second = await _paid(client, merchant, devnet, 8)
    assert [p["transactions"][0]["status"] for p in (first, second)] == ["PENDING", "PENDING"]

    errors = _errors(caplog)
    assert len(errors) == 2, [r.getMessage() for r in errors]  # two deposits, a dozen retries: one line each
    for record in errors:
        message = record.getMessage()
        assert record.name == LOGGER and record.levelno == logging.ERROR
        assert message.startswith("plugin raises_on_credit: credit deposit:"), message
        assert "filter_credit_postings raised KeyError" in message and "passes_through" not in message
        assert "logged once per plugin and deposit" in message
        assert record.exc_info and isinstance(record.exc_info[1], KeyError)  # the traceback, once
    assert len({r.getMessage().split("; deposit ")[1] for r in errors}) == 2  # one per deposit
    repeats = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.DEBUG]
    assert len(repeats) >= 10 and all("raises_on_credit" in r.getMessage() for r in repeats)
    assert not [r for r in caplog.records if "crediting deposit" in r.getMessage()]


class RaisesForOneMerchant:
    """Fails one merchant's credits only: the others are credited, the held one once the plugin is fixed."""

    PLUGIN_NAME = "picky"

    def __init__(self) -> None:
        self.refused: set[str] = set()

    @hookimpl
    def filter_credit_postings(self, credit):
        if credit.merchant_id in self.refused:
            raise RuntimeError("not this one")
        return None


async def test_the_other_deposits_are_credited(make_client, make_config, caplog):
    picky = RaisesForOneMerchant()
    client = await make_client(make_config(scheduler={"enabled": False}), get_plugin_manager([picky]))
    refused, accepted, devnet = await signup(client, "a@example.com"), await signup(client, "b@example.com"), \
        Devnet(client)
    picky.refused.add(refused.merchant_id)
    held = await _paid(client, refused, devnet, 7)
    paid = await _paid(client, accepted, devnet, 7)
    assert held["transactions"][0]["status"] == "PENDING" and paid["status"] == "Paid"
    [record] = _errors(caplog)
    assert record.getMessage().startswith("plugin picky: credit deposit:")

    picky.refused.clear()  # the plugin is fixed: the next scan credits the held deposit
    await devnet.mine(1)
    _, body = await api(client, "GET", f"/v1/payment/{held['track_id']}", refused.merchant_key)
    assert body["data"]["status"] == "Paid"
