"""Public endpoints (SPEC 4.1) on both databases."""

from __future__ import annotations

import base64
from decimal import Decimal

from nacl.signing import VerifyKey

# SPEC 2.7, in its order.
SPEC_SYMBOLS = ["BTC", "LTC", "DOGE", "ETH", "USDT_ERC20", "USDC_ERC20", "SHIB", "DAI", "BNB", "USDT_BEP20",
                "USDC_BEP20", "POL", "USDT_POL", "USDC_POL", "TRX", "USDT_TRC20", "USDC_TRC20", "SOL", "XMR", "BTC_LN"]


async def test_health_is_a_bare_object(client):
    response = await client.get("/health")
    assert response.status == 200
    assert await response.json() == {"ok": True}
    assert (await response.text()).endswith("}\n")  # one line, as curl and shell scripts expect (issue 49)


async def test_currencies_list_the_whole_coin_table(client):
    response = await client.get("/v1/common/currencies")
    body = await response.json()
    assert response.status == 200
    assert body["status"] == 200 and body["version"] == "2.0.0" and body["error"] is None
    symbols = [row["symbol"] for row in body["data"]]
    assert symbols == SPEC_SYMBOLS
    btc = body["data"][0]
    assert btc == {"symbol": "BTC", "name": "Bitcoin", "network": "bitcoin", "decimals": 8,
                   "confirmations": 2, "min_payout": "0.0001", "note": None}
    trx = next(row for row in body["data"] if row["symbol"] == "TRX")
    assert trx["confirmations"] == 3 and trx["decimals"] == 6
    # Every row has SPEC 2.6's types: an integer and a decimal string (issue 42 item 9: XMR and BTC_LN had null).
    rows = {row["symbol"]: row for row in body["data"]}
    for symbol, row in rows.items():
        assert type(row["confirmations"]) is int and row["confirmations"] >= 0, symbol
        assert isinstance(row["min_payout"], str) and Decimal(row["min_payout"]) >= 0, symbol
        assert (row["note"] is None) == (symbol not in ("XMR", "BTC_LN")), symbol
    # Where SPEC 2.7 lists none, the row says what its numbers mean for a coin not paid out on chain.
    xmr, lightning = rows["XMR"], rows["BTC_LN"]
    assert (xmr["confirmations"], xmr["min_payout"], xmr["decimals"]) == (10, "0", 12)
    assert "never paid out" in xmr["note"] and "10 confirmations" in xmr["note"]
    assert (lightning["confirmations"], lightning["min_payout"], lightning["decimals"]) == (0, "0.00000001", 8)
    assert "BOLT11 invoice is paid" in lightning["note"] and "one satoshi" in lightning["note"]


async def test_prices_are_exact_numbers_from_the_static_source(client):
    response = await client.get("/v1/common/prices")
    text = await response.text()
    assert '"SHIB":0.00002' in text
    body = await response.json(loads=lambda t: __import__("json").loads(t, parse_float=Decimal))
    assert body["data"]["BTC"] == 60000
    assert set(body["data"]) == set(SPEC_SYMBOLS)


async def test_receipt_public_key_is_ephemeral_when_generated(client):
    body = await (await client.get("/v1/common/receipt-public-key")).json()
    data = body["data"]
    assert data["algorithm"] == "Ed25519" and data["ephemeral"] is True
    raw = base64.b64decode(data["public_key"])
    VerifyKey(raw)  # a valid Ed25519 key
    pem_der = base64.b64decode("".join(data["public_key_pem"].strip().splitlines()[1:-1]))
    assert pem_der.endswith(raw) and len(pem_der) == 44


async def test_configured_receipt_key_is_not_ephemeral(make_config, make_client):
    from nacl.signing import SigningKey

    key = SigningKey.generate()
    cfg = make_config(secrets={"receipt_signing_key": base64.b64encode(bytes(key)).decode()})
    client = await make_client(cfg)
    data = (await (await client.get("/v1/common/receipt-public-key")).json())["data"]
    assert data["ephemeral"] is False
    assert base64.b64decode(data["public_key"]) == bytes(key.verify_key)


async def test_unknown_path_answers_the_envelope(client):
    response = await client.get("/v1/nope")
    assert response.status == 404
    body = await response.json()
    assert body == {"data": None, "message": "not found", "error": {"type": "not_found", "message": "not found"},
                    "status": 404, "version": "2.0.0"}


def test_coin_table_text_is_rendered_once_and_again_when_a_coin_changes():
    import dataclasses
    import json

    from orbchain.chains.bitcoin.coins import COINS
    from orbchain.web.routes.public import CoinTableText

    btc = COINS[0]
    table = CoinTableText()
    first = table.text([btc])
    assert table.text([btc]) is first  # nothing changed: the same text, not rendered again
    renamed = dataclasses.replace(btc, name="Bitcoin (test)")
    assert json.loads(table.text([renamed]))["data"][0]["name"] == "Bitcoin (test)"
    assert len(json.loads(table.text([renamed, btc]))["data"]) == 2
