"""Payouts on the dashboard are reviewed, then confirmed once (issue 32 item 4), on SQLite and PostgreSQL.

A browser without JavaScript (``tests/dashboard_support.py``): the form posts to
its review, the review's sealed token to the confirm. What is paid is counted in
the payouts table and the merchant's balance, never read off the page alone.
"""

from __future__ import annotations

from aiohttp import FormData

from orbchain.api.merchant import merchant_balances
from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor, csrf_of, paid_invoice, review_token

BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
OTHER_DEST = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


async def _state(client, merchant_id: str) -> tuple[int, int]:
    """(payouts, available BTC base units) of the merchant."""
    gateway = client.app[GATEWAY]
    count = await gateway.db.fetch_val("SELECT COUNT(*) FROM payouts WHERE merchant_id = :m", {"m": merchant_id})
    return int(count), (await merchant_balances(gateway.db, merchant_id)).get("BTC", 0)


async def _merchant(client, email: str) -> str:
    return await client.app[GATEWAY].db.fetch_val("SELECT id FROM merchants WHERE email = :e", {"e": email})


async def test_a_payout_is_reviewed_then_paid_exactly_once(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    visitor = Visitor(client)
    await visitor.sign_up("review@example.com")
    await paid_invoice(client, visitor)
    merchant_id = await _merchant(client, "review@example.com")
    page = await visitor.get("/app/payouts")
    assert 'id="payout-balances"' in page and "0.0099" in page and "Paid by the gateway" in page
    before = await _state(client, merchant_id)

    # More than the balance: refused at review, beside the amount, input kept, nothing written.
    form = {"currency": "BTC", "address": BTC_DEST, "amount": "5", "idempotency_key": "review-1"}
    await visitor.submit("/app/payouts", form, expect=400)
    assert 'id="error-amount"' in visitor.page and "available balance of 0.0099 BTC" in visitor.page, \
        visitor.page[visitor.page.find("<main"):][:1500]
    assert 'aria-invalid="true" aria-describedby="error-amount"' in visitor.page and 'value="5"' in visitor.page
    assert await _state(client, merchant_id) == before

    # The review shows what will move; it moves nothing.
    await visitor.submit("/app/payouts", {**form, "amount": "0.002", "description": "rent"}, expect=200)
    review = visitor.page
    for shown in (BTC_DEST, "0.002 BTC", "Leaves your balance", "0.0099 BTC", "0.0079 after", "Minimum payout",
                  "Network fee", "devnet"):
        assert shown in review, shown
    token = review_token(review)
    assert await _state(client, merchant_id) == before

    # Back/Edit: the form again with what was typed.
    await visitor.submit("/app/payouts/confirm", {"action": "edit", "currency": "BTC", "address": BTC_DEST,
                                                  "amount": "0.002", "description": "rent",
                                                  "idempotency_key": "review-1"}, expect=200)
    assert 'id="payout-form"' in visitor.page and 'value="0.002"' in visitor.page and 'value="review-1"' in visitor.page

    # CSRF on both posts: refused, nothing changes.
    await visitor.submit("/app/payouts", form, token="forged", expect=403)
    await visitor.submit("/app/payouts/confirm", {"review_token": token, "action": "confirm"}, token="forged",
                         expect=403)
    assert await _state(client, merchant_id) == before

    # A tampered review (another amount, another address, another session's token) is refused.
    body, _, mac = token.partition(".")
    for forged in (f"{body[:-2]}AA.{mac}", f"{body}.{mac[:-2]}AA", "", "x.y"):
        await visitor.submit("/app/payouts/confirm", {"review_token": forged, "action": "confirm",
                                                      "address": OTHER_DEST, "amount": "0.009"},
                             token=csrf_of(review), expect=400)
        assert "This review was changed" in visitor.page and "Nothing was sent" in visitor.page
    assert await _state(client, merchant_id) == before

    # Confirm pays; the same confirm again (a double submit, a replay) is refused and pays nothing more.
    await visitor.submit("/app/payouts/confirm", {"review_token": token, "action": "confirm", "amount": "0.009"},
                         token=csrf_of(review))
    paid = await _state(client, merchant_id)
    assert paid == (before[0] + 1, before[1] - 200_000)
    row = await client.app[GATEWAY].db.fetch_one("SELECT destination, amount, description FROM payouts"
                                                 " WHERE merchant_id = :m", {"m": merchant_id})
    assert (row["destination"], int(row["amount"]), row["description"]) == (BTC_DEST, 200_000, "rent")
    await visitor.submit("/app/payouts/confirm", {"review_token": token, "action": "confirm"},
                         token=csrf_of(review), expect=409)
    assert "already confirmed" in visitor.page and "nothing more was sent" in visitor.page
    assert await _state(client, merchant_id) == paid
    assert ">Sending<" in await visitor.get("/app/payouts")
    # Home's recent payouts say it in the same words, never the API's raw status.
    home = await visitor.get("/app")
    assert 'id="payouts-table"' in home and '<td class="payout-status" data-label="Status">Sending</td>' in home
    assert "CONFIRMING" not in home and BTC_DEST in home

    # Two reviews of what the balance covers once: the second confirm is refused beside the amount.
    reviews = []
    for key in ("review-2", "review-3"):
        await visitor.submit("/app/payouts", {**form, "amount": "0.007", "idempotency_key": key}, expect=200)
        reviews.append(visitor.page)
    for review, status in zip(reviews, (303, 400)):
        await visitor.submit("/app/payouts/confirm", {"review_token": review_token(review), "action": "confirm"},
                             token=csrf_of(review), expect=status)
    assert 'id="error-amount"' in visitor.page and "available balance of 0.0009 BTC" in visitor.page
    assert await _state(client, merchant_id) == (paid[0] + 1, paid[1] - 700_000)


async def test_a_batch_is_reviewed_row_by_row_then_paid_once(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    visitor = Visitor(client)
    await visitor.sign_up("batch@example.com")
    await paid_invoice(client, visitor)
    merchant_id = await _merchant(client, "batch@example.com")
    await visitor.get("/app/payouts")
    before = await _state(client, merchant_id)
    rows = (f"currency,address,amount,external_id\nBTC,{BTC_DEST},0.004,b-1\nBTC,bc1qnope,0.001,b-2\n"
            f"BTC,{OTHER_DEST},0.005,b-3\nBTC,{BTC_DEST},0.001,b-4\n")
    await visitor.submit("/app/payouts/batch", {"rows": rows}, expect=403, token="forged")
    await visitor.get("/app/payouts")
    data = FormData()
    data.add_field("csrf_token", csrf_of(visitor.page))
    data.add_field("rows", rows)
    response = await client.post("/app/payouts/batch", data=data, allow_redirects=False)
    visitor.page = review = await response.text()
    assert response.status == 200, review[:500]
    # The balance is drawn down row by row: 0.0099 - 0.004 - 0.005 leaves 0.0009, so row 4 (0.001) is refused
    # for the balance, beside row 2 refused for its address; rows 1 and 3 will be paid.
    assert "2 will be paid, 2 refused" in review
    assert "Invalid destination address" in review and "available balance of 0.0009 BTC" in review
    assert "0.009" in review and "0.0099" in review  # the total leaving and what is available
    assert await _state(client, merchant_id) == before

    # Back/Edit keeps the rows.
    await visitor.submit("/app/payouts/batch/confirm", {"action": "edit", "rows": rows}, expect=200)
    assert "b-3" in visitor.page and 'id="batch-form"' in visitor.page

    token = review_token(review)
    await visitor.submit("/app/payouts/batch/confirm", {"review_token": token, "action": "confirm"},
                         token="forged", expect=403)
    await visitor.submit("/app/payouts/batch/confirm", {"review_token": token[:-3] + "AAA", "action": "confirm"},
                         token=csrf_of(review), expect=400)
    assert await _state(client, merchant_id) == before
    await visitor.submit("/app/payouts/batch/confirm", {"review_token": token, "action": "confirm"},
                         token=csrf_of(review), expect=200)
    assert "2 rows: 2 created, 0 already paid, 0 failed" in visitor.page
    paid = await _state(client, merchant_id)
    assert paid == (before[0] + 2, before[1] - 900_000)
    await visitor.submit("/app/payouts/batch/confirm", {"review_token": token, "action": "confirm"},
                         token=csrf_of(review), expect=409)
    assert "already confirmed" in visitor.page
    assert await _state(client, merchant_id) == paid
