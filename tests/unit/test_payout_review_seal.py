"""The sealed review of a dashboard payout: bound to its kind, merchant, session and lifetime (issue 32 item 4)."""

from __future__ import annotations

import pytest

from orbchain.api import InvalidRequest
from orbchain.plugins.dashboard.review_seal import REVIEW_SECONDS, seal, unseal
from orbchain.plugins.dashboard.session import Session


class _Secrets:
    jwt_secret = b"k" * 32


class _Gateway:
    def __init__(self) -> None:
        self.time = 1_000_000

    def now(self) -> int:
        return self.time

    def require_secrets(self) -> _Secrets:
        return _Secrets()


def _session(merchant: str = "m_1", csrf: str = "csrf-a") -> Session:
    return Session(merchant_id=merchant, email="a@example.com", csrf=csrf, totp_enabled=False, refresh=False,
                   expires_at=0)


def test_the_payload_comes_back_only_to_its_session_kind_and_merchant_in_time():
    gateway = _Gateway()
    payload = {"currency": "BTC", "address": "bc1q...", "amount": "0.002", "idempotency_key": "k1"}
    token = seal(gateway, _session(), "payout", payload)
    assert unseal(gateway, _session(), "payout", token) == payload
    refused = [
        lambda: unseal(gateway, _session(csrf="csrf-b"), "payout", token),  # another browser session
        lambda: unseal(gateway, _session(merchant="m_2"), "payout", token),  # another account, same session
        lambda: unseal(gateway, _session(), "payout-batch", token),  # a single review posted as a batch
        lambda: unseal(gateway, _session(), "payout", token.replace(".", "x.", 1)),  # the body altered
        lambda: unseal(gateway, _session(), "payout", None),
    ]
    for attempt in refused:
        with pytest.raises(InvalidRequest) as caught:
            attempt()
        assert caught.value.code == "review_invalid"
    gateway.time += REVIEW_SECONDS + 1
    with pytest.raises(InvalidRequest):
        unseal(gateway, _session(), "payout", token)
