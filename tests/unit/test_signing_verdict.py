"""The signer's verdict (core/payouts/signing_policy.py) on facts alone: the caps the devnet tests do not reach."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from orbchain.core.infra.config import SigningConfig
from orbchain.core.payouts import signing_policy as sp

RESERVED = sp.Reservation("m_1", "COIN", "chain", 100, binding_ok=True)
FACTS = sp.SigningFacts(payout_id="po_1", merchant_id="m_1", coin="COIN", chain="chain", amount=100,
                        destination="dest-a", reservation=RESERVED, reservation_released=False,
                        approval_objection=None, operator_released=False, coin_last_hour=0, coin_last_day=0,
                        merchant_last_day=0)


def policy(**signing) -> sp.SigningPolicy:
    return sp.policy_from_config(SigningConfig(**signing), lambda coin, amount: int(amount * 100),
                                 lambda coin, address: address.lower())


@pytest.mark.parametrize("signing, facts, reason", [
    ({}, {}, None),
    ({"max_per_day": ("COIN=5",)}, {"coin_last_day": 401}, sp.OVER_DAILY_CAP),
    ({"max_per_day": ("COIN=5",)}, {"coin_last_day": 400}, None),
    ({"max_per_merchant_day": ("COIN=2",)}, {"merchant_last_day": 101}, sp.OVER_MERCHANT_DAILY_CAP),
    ({"merchant_allowed_destinations": ("m_1:COIN=DEST-B",)}, {}, sp.DESTINATION_NOT_ALLOWED),
    ({"merchant_allowed_destinations": ("m_2:COIN=DEST-B",)}, {}, None),  # another merchant's list
    ({"allowed_destinations": ("COIN=DEST-A",)}, {}, None),  # compared in canonical form
    ({"max_per_payout": ("COIN=0.5",)}, {"operator_released": True}, None),
    ({}, {"reservation": replace(RESERVED, amount=99)}, sp.RESERVATION_MISMATCH),
    ({}, {"reservation": replace(RESERVED, binding_ok=False)}, sp.BINDING_MISMATCH),
    ({}, {"reservation": replace(RESERVED, binding_ok=False), "operator_released": True}, None),
    ({}, {"reservation_released": True, "operator_released": True}, sp.RESERVATION_RELEASED),
])
def test_verdict(signing, facts, reason):
    assert sp.judge(replace(FACTS, **facts), policy(**signing)) == reason


def test_a_bad_entry_names_itself():
    with pytest.raises(ValueError, match="signing.max_per_hour.*COIN=x"):
        sp.policy_from_config(SigningConfig(max_per_hour=("COIN=x",)),
                              lambda coin, amount: int(Decimal(amount)), lambda coin, address: address)


@pytest.mark.parametrize("signing, windows, extra_fee, reason", [
    ({}, (0, 0, 0), 10**9, None),  # no caps: any bump
    ({"max_per_hour": ("COIN=5",)}, (490, 490, 490), 10, None),  # exactly at the cap
    ({"max_per_hour": ("COIN=5",)}, (490, 490, 490), 11, sp.OVER_HOURLY_CAP),
    ({"max_per_day": ("COIN=5",)}, (0, 495, 0), 6, sp.OVER_DAILY_CAP),
    ({"max_per_merchant_day": ("COIN=2",)}, (0, 0, 195), 6, sp.OVER_MERCHANT_DAILY_CAP),
    ({"max_per_payout": ("COIN=0.01",)}, (0, 0, 0), 50, None),  # the per-payout cap is about the amount only
])
def test_a_bumps_extra_fee_is_judged_against_the_windows_only(signing, windows, extra_fee, reason):
    assert sp.judge_fee_bump(policy(**signing), "COIN", extra_fee, *windows) == reason


@pytest.mark.parametrize("signing, windows, amount, per_spend, reason", [
    ({}, (0, 0), 10**9, True, None),  # no caps: any top-up
    ({"max_per_payout": ("COIN=0.5",)}, (0, 0), 51, True, sp.OVER_PAYOUT_CAP),  # a top-up is one spend of the coin
    ({"max_per_payout": ("COIN=0.5",)}, (0, 0), 50, True, None),
    ({"max_per_payout": ("COIN=0.5",)}, (0, 0), 51, False, None),  # a re-signing's extra fee: windows only
    ({"max_per_hour": ("COIN=5",)}, (490, 490), 10, True, None),  # exactly at the cap
    ({"max_per_hour": ("COIN=5",)}, (490, 490), 11, False, sp.OVER_HOURLY_CAP),
    ({"max_per_day": ("COIN=5",)}, (0, 495), 6, True, sp.OVER_DAILY_CAP),
    ({"max_per_merchant_day": ("COIN=0.01",)}, (0, 0), 50, True, None),  # no merchant's: the platform pays
])
def test_a_hot_wallet_spend_is_capped_like_a_payout_of_its_coin(signing, windows, amount, per_spend, reason):
    assert sp.judge_hot_wallet_spend(policy(**signing), "COIN", amount, *windows, per_spend=per_spend) == reason
