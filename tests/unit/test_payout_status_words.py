"""The payouts list says a status in words (issue 32 item 4): Sending, Confirmed, Failed with why."""

from __future__ import annotations

from orbchain.plugins.dashboard.payout_review import status_words


def test_statuses_read_as_words_and_a_failure_says_why():
    assert status_words("CONFIRMING", None) == "Sending"
    assert status_words("CONFIRMED", None) == "Confirmed"
    assert status_words("FAILED", "dropped").startswith("Failed: the transaction was dropped by the network;")
    rejected = status_words("FAILED", "broadcast_rejected: fee too low")
    assert rejected.startswith("Failed: the network refused the transaction (fee too low);")
    assert status_words("FAILED", "no_route").startswith("Failed: no_route;")  # an adapter's own reason, kept
    assert "back in your balance" in status_words("FAILED", None)
