"""The Approvals page (plugins/approvals): the policy form and Approve/Reject, no JavaScript, on both databases.

Hostile input comes back as errors beside the fields with what was typed; a form without its CSRF
token changes nothing; roles without ``payout:approve`` are refused the page; approving asks for the
account's TOTP code and a wrong one leaves the payout held.
"""

from __future__ import annotations

import html

from orbchain.web.keys import GATEWAY

from .approvals_support import PASSWORD, add_member, enable_totp, member_totp, next_code, set_policy
from .dashboard_support import Visitor
from .test_payouts import BTC_DEST, create, fund, payout_env, payout_row

PAGE = "/app/approvals"


async def signed_in(client, email, password=PASSWORD, code=None) -> Visitor:
    client.session.cookie_jar.clear()
    visitor = Visitor(client)
    await visitor.sign_in(email, password, code)
    return visitor


async def test_policy_form_refuses_hostile_input_and_keeps_it(make_client, make_config):
    client, merchant, _ = await payout_env(make_client, make_config)
    holder = await signed_in(client, "merchant@example.com", "s3cret-pass")
    page = await holder.get(PAGE)
    assert "No policy: every payout is sent without approval." in page and 'id="policy-form"' in page
    hostile = {"action": "policy", "threshold_BTC": "<script>alert(1)</script>", "threshold_LTC": "-5",
               "expiry_hours": "9999", "member_daily_usd": "1.001", "key_daily_usd": "1e9"}
    await holder.submit(PAGE, hostile, expect=400)
    page = holder.page
    assert 'id="error-threshold_BTC"' in page and 'id="error-threshold_LTC"' in page
    assert 'id="error-expiry_hours"' in page and 'id="error-member_daily_usd"' in page
    assert "<script>alert(1)</script>" not in page and html.escape("<script>alert(1)</script>") in page
    assert 'value="9999"' in page and 'value="1.001"' in page  # what was typed, kept
    for hours in ("²", "9" * 5000, "٣"):  # int() raises on the first two, accepts the last: all refused, no 500
        await holder.submit(PAGE, {"action": "policy", "threshold_BTC": "100", "expiry_hours": hours}, expect=400)
        assert 'id="error-expiry_hours"' in holder.page
    gateway = client.app[GATEWAY]
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM approval_policies") == 0
    await holder.submit(PAGE, {"action": "policy", "threshold_BTC": "100"}, token="forged", expect=403)
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM approval_policies") == 0
    await holder.get(PAGE)
    await holder.submit(PAGE, {"action": "policy", "threshold_BTC": "100", "expiry_hours": "12",
                               "key_daily_usd": "1000.5"})
    page = await holder.get(PAGE)
    assert "The policy is on." in page and 'value="100.00"' in page and 'value="1000.50"' in page
    await holder.submit(PAGE, {"action": "policy-off"})
    assert "No policy" in await holder.get(PAGE)


async def test_roles_without_the_approve_scope_are_refused(make_client, make_config):
    client, merchant, _ = await payout_env(make_client, make_config)
    gateway = client.app[GATEWAY]
    for role in ("viewer", "finance", "developer"):
        await add_member(client, gateway, merchant.merchant_id, f"{role}@example.com", role=role)
        member = await signed_in(client, f"{role}@example.com")
        await member.get(PAGE, expect=403)
        assert "payout:approve" in member.page
        assert f'href="{PAGE}"' not in await member.get("/app")


async def test_a_member_approves_on_the_page_with_the_code(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    gateway = client.app[GATEWAY]
    await fund(client, merchant, devnet, amount="0.02")
    await set_policy(gateway, merchant.merchant_id, threshold_BTC="100")
    tracks = [(await create(client, merchant, amount="0.005"))[1]["data"]["track_id"] for _ in range(2)]
    await add_member(client, gateway, merchant.merchant_id, "admin@example.com")
    admin = await signed_in(client, "admin@example.com")
    secret = await member_totp(gateway, merchant.merchant_id, "admin@example.com")  # after signing in without it
    page = await admin.get(PAGE)
    assert f'id="held-{tracks[0]}"' in page and "key " in page  # requested by the API key
    assert (await admin.get("/app/payouts")).count("Awaiting approval") == 2
    await admin.get(PAGE)
    await admin.submit(PAGE, {"action": "approve", "id": tracks[0], "totp_code": "000000"}, expect=401)
    assert "two-factor code" in admin.page and (await payout_row(gateway, tracks[0]))["stage"] == "held"
    await admin.submit(PAGE, {"action": "approve", "id": "<b>nope</b>", "totp_code": "1"}, expect=404)
    assert "<b>nope</b>" not in admin.page
    await admin.get(PAGE)
    await admin.submit(PAGE, {"action": "approve", "id": tracks[0], "totp_code": next_code(gateway, secret)})
    assert (await payout_row(gateway, tracks[0]))["stage"] == "queued"
    await admin.get(PAGE)
    await admin.submit(PAGE, {"action": "reject", "id": tracks[1]})
    row = await payout_row(gateway, tracks[1])
    assert row["status"] == "Failed" and row["failure_reason"] == "rejected"
    assert "Nothing is waiting." in await admin.get(PAGE)
    assert "Failed: rejected by an approver" in await admin.get("/app/payouts")
    activity = await admin.get("/app/activity")
    assert "Approved payout" in activity and "Rejected payout" in activity and "member admin@example.com" in activity


async def test_a_held_payout_says_so_at_review_on_confirm_and_when_approved(make_client, make_config):
    """Issue 49 item 5: the review did not say the payout would be held, the result said "Payout created." and
    the approver's confirmation said "Saved."."""
    client, merchant, devnet = await payout_env(make_client, make_config)
    gateway = client.app[GATEWAY]
    await fund(client, merchant, devnet, amount="0.02")
    await set_policy(gateway, merchant.merchant_id, threshold_BTC="100")
    holder = await signed_in(client, "merchant@example.com", "s3cret-pass")
    await holder.get("/app/payouts")
    await holder.submit("/app/payouts", {"currency": "BTC", "address": BTC_DEST, "amount": "0.005"}, expect=200)
    review = holder.page
    assert 'id="review-hold"' in review and "it is worth more than 100.00 USD" in review
    assert "approved by a second person" in review and "Confirm and send for approval" in review
    confirmed = await holder.submit("/app/payouts/confirm", {"action": "confirm",
                                                              "review_token": _field(review, "review_token")})
    assert confirmed.headers["Location"] == "/app/payouts?notice=payout-held"
    page = await holder.get(confirmed.headers["Location"])
    assert "Payout created and held: nothing is sent until a second person approves it" in page
    assert "Awaiting approval by a second person" in page
    await holder.get("/app/payouts")
    await holder.submit("/app/payouts", {"currency": "BTC", "address": BTC_DEST, "amount": "0.001"}, expect=200)
    assert 'id="review-hold"' not in holder.page  # worth less than the threshold: nothing said
    await add_member(client, gateway, merchant.merchant_id, "admin@example.com")
    admin = await signed_in(client, "admin@example.com")
    secret = await member_totp(gateway, merchant.merchant_id, "admin@example.com")
    track = (await gateway.db.fetch_one("SELECT track_id FROM payouts WHERE stage = 'held'"))["track_id"]
    await admin.get(PAGE)
    approved = await admin.submit(PAGE, {"action": "approve", "id": track, "totp_code": next_code(gateway, secret)})
    assert approved.headers["Location"] == f"{PAGE}?notice=approved"
    assert "Approved: it is sent now" in await admin.get(approved.headers["Location"])
    assert "Approved: it is sent now" not in await admin.get(f"{PAGE}?notice=<b>x</b>")  # only the page's own words


def _field(page: str, name: str) -> str:
    import re
    return re.search(rf'name="{name}" value="([^"]*)"', page).group(1)


async def test_an_approver_without_2fa_is_told_how_to_set_it_up(make_client, make_config):
    """The page says, in words and with a link to the Security page, that approving needs the approver's *own*
    2FA (the holder's being on does not count for a member); Home prompts the member too. Once set up, the
    Approve form is there and the prompts are gone."""
    client, merchant, devnet = await payout_env(make_client, make_config)
    gateway = client.app[GATEWAY]
    await fund(client, merchant, devnet, amount="0.02")
    await set_policy(gateway, merchant.merchant_id, threshold_BTC="100")
    track = (await create(client, merchant, amount="0.005"))[1]["data"]["track_id"]
    secret = await enable_totp(client, gateway, merchant.jwt)  # the holder's 2FA: not the member's
    await add_member(client, gateway, merchant.merchant_id, "admin@example.com")
    admin = await signed_in(client, "admin@example.com")
    page = await admin.get(PAGE)
    notice = page[page.index('id="approvals-totp"'):]
    assert "needs your own two-factor authentication" in notice and 'href="/app/security"' in notice
    assert f'id="approve-{track}"' not in page and "set up your two-factor authentication</a> first" in page
    assert 'id="home-2fa-prompt"' in await admin.get("/app") and "turn on your own two-factor" in admin.page
    await admin.get(PAGE)
    await admin.submit(PAGE, {"action": "approve", "id": track, "totp_code": "123456"}, expect=403)
    assert "Security page" in admin.page and (await payout_row(gateway, track))["stage"] == "held"
    await member_totp(gateway, merchant.merchant_id, "admin@example.com")
    page = await admin.get(PAGE)
    assert 'id="approvals-totp"' not in page and f'id="approve-{track}"' in page
    assert 'id="home-2fa-prompt"' not in await admin.get("/app")
    holder = await signed_in(client, "merchant@example.com", "s3cret-pass", next_code(gateway, secret))
    assert 'id="approvals-totp"' not in await holder.get(PAGE)  # the holder's own 2FA is on
