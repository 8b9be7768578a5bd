"""Deposits from a constructed mainnet-format ``getblock <hash> 2`` answer.

The answer is served as text by a local JSON-RPC server, so the adapter reads
it exactly as it would read a node: through ``NodeRpc`` (``parse_float=Decimal``)
into ``Transfer`` rows. It mixes the documented output shapes: Bitcoin Core 22+
``scriptPubKey.address``, older nodes' ``addresses`` lists, the coinbase's
witness commitment (``nulldata``), bare multisig, a non-standard script and
Litecoin's MWEB outputs.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from aiohttp import web

from orbchain.chains.bitcoin.adapter import BitcoinAdapter
from orbchain.chains.bitcoin.blocks import output_address
from orbchain.chains.bitcoin.rpc import NodeRpc, coin_units
from orbchain.chains.bitcoin.settings import COIN_SPECS, CoinSettings
from orbchain.core.types.chains import ChainUnavailable, Transfer

BLOCK_HASH = "00000000000000000002a7c4c1e48d76c5a37902165a270156b7a8d72728a054"
PARENT_HASH = "00000000000000000000ef9f1e1e5d41e3a9a0a0c3b1c7e7f0b8f0e8b8d6c4a2"
COINBASE_TXID = "b75ca3106ed100521aa50e3ec267a06431c6319538898b25e9b4c5d2f6a7b8c1"
PAYMENT_TXID = "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"
TAPROOT_TXID = "f4184fc596403b9d638783cf57adfe4c75c605f6356fbc91338530e9831e9e16"

# Numbers are written the way the node writes them (8 decimals, no quotes).
GETBLOCK_2 = """{"result": {
  "hash": "%(hash)s", "confirmations": 3, "height": 800000, "version": 536870912, "time": 1690168629,
  "previousblockhash": "%(parent)s", "nTx": 3,
  "tx": [
    {"txid": "%(coinbase)s", "hash": "%(coinbase)s", "version": 2,
     "vin": [{"coinbase": "0300350c0120", "sequence": 4294967295}],
     "vout": [
       {"value": 6.37863482, "n": 0, "scriptPubKey": {"asm": "0 e8df018c7e326cc253faac7e46cdc51e68542c42",
        "hex": "0014e8df018c7e326cc253faac7e46cdc51e68542c42", "type": "witness_v0_keyhash",
        "address": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"}},
       {"value": 0.00000000, "n": 1, "scriptPubKey": {"asm": "OP_RETURN aa21a9ed",
        "hex": "6a24aa21a9ed", "type": "nulldata"}}
     ]},
    {"txid": "%(payment)s", "hash": "%(payment)s", "version": 1,
     "vin": [{"txid": "%(coinbase)s", "vout": 0, "scriptSig": {"asm": "", "hex": ""}, "sequence": 4294967295}],
     "vout": [
       {"value": 0.00012345, "n": 0, "scriptPubKey": {"asm": "OP_DUP OP_HASH160 62e907b15cbf27d5425399ebf6f0fb50ebb88f18 OP_EQUALVERIFY OP_CHECKSIG",
        "hex": "76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac", "reqSigs": 1, "type": "pubkeyhash",
        "addresses": ["1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"]}},
       {"value": 0.30000000, "n": 1, "scriptPubKey": {"asm": "OP_HASH160 e9c3dd0c07aac76179ebc76a6c78d4d67c6c160a OP_EQUAL",
        "hex": "a914e9c3dd0c07aac76179ebc76a6c78d4d67c6c160a87", "type": "scripthash",
        "address": "3P14159f73E4gFr7JterCCQh9QjiTjiZrG"}},
       {"value": 1.00000000, "n": 2, "scriptPubKey": {"asm": "1 02aa 03bb 2 OP_CHECKMULTISIG", "hex": "5121",
        "reqSigs": 1, "type": "multisig", "addresses": ["1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2",
        "1CounterpartyXXXXXXXXXXXXXXXUWLpVr"]}},
       {"value": 0.50000000, "n": 3, "scriptPubKey": {"asm": "OP_TRUE", "hex": "51", "type": "nonstandard"}},
       {"value": 20999999.97690000, "n": 4, "scriptPubKey": {"asm": "0 751e76e8199196d454941c45d1b3a323f1433bd6",
        "hex": "0014751e76e8199196d454941c45d1b3a323f1433bd6", "type": "witness_v0_keyhash",
        "address": "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"}}
     ]},
    {"txid": "%(taproot)s", "hash": "%(taproot)s", "version": 2, "vin": [],
     "vout": [
       {"value": 0.00000546, "n": 0, "scriptPubKey": {"asm": "1 a37c3903c8d0db6512e2b40b0dffa05e5a3ab73603ce8c9c4b7771e5412328f9",
        "hex": "5120a37c3903c8d0db6512e2b40b0dffa05e5a3ab73603ce8c9c4b7771e5412328f9", "type": "witness_v1_taproot",
        "address": "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297"}},
       {"ismweb": true, "value": 2.50000000, "n": 1, "scriptPubKey": {}}
     ]}
  ]}, "error": null, "id": 1}""" % {"hash": BLOCK_HASH, "parent": PARENT_HASH, "coinbase": COINBASE_TXID,
                                   "payment": PAYMENT_TXID, "taproot": TAPROOT_TXID}


def settings() -> CoinSettings:
    return CoinSettings(COIN_SPECS["BTC"], "http://127.0.0.1:1", "u", "p", None, "mainnet", 10, 1, 30.0, None, 5.0,
                        3600)


@pytest.fixture
async def node(aiohttp_server):
    """A JSON-RPC endpoint answering getblockhash and getblock from the fixture text."""
    calls: list[tuple[str, list]] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        calls.append((body["method"], body["params"]))
        if body["method"] == "getblockhash":
            return web.json_response({"result": BLOCK_HASH, "error": None, "id": body["id"]})
        if body["method"] == "getblock" and body["params"] == [BLOCK_HASH, 2]:
            return web.Response(text=GETBLOCK_2, content_type="application/json")
        return web.json_response({"result": None, "error": {"code": -32601, "message": "Method not found"},
                                  "id": body["id"]}, status=404)

    app = web.Application()
    app.router.add_post("/", handle)
    server = await aiohttp_server(app)
    return str(server.make_url("/")), calls


async def test_block_extracts_exactly_the_listed_outputs_in_satoshis(node):
    url, calls = node
    adapter = BitcoinAdapter(gateway=None, settings=settings(), rpc=NodeRpc(url, user="u", password="p"))
    try:
        block = await adapter.block(800000)
    finally:
        await adapter.close()
    assert calls == [("getblockhash", [800000]), ("getblock", [BLOCK_HASH, 2])]
    assert (block.height, block.hash, block.parent_hash, block.timestamp) == (800000, BLOCK_HASH, PARENT_HASH,
                                                                              1690168629)
    SPENT = (f"{COINBASE_TXID}:0",)
    assert list(block.transfers) == [
        Transfer(COINBASE_TXID, 0, "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "BTC", 637_863_482),
        # Each output of a transaction carries the inputs it spends (issue 46: a payer's double-spend is
        # seen by them); a coinbase spends none.
        Transfer(PAYMENT_TXID, 0, "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "BTC", 12_345, SPENT),
        Transfer(PAYMENT_TXID, 1, "3P14159f73E4gFr7JterCCQh9QjiTjiZrG", "BTC", 30_000_000, SPENT),
        Transfer(PAYMENT_TXID, 4, "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "BTC", 2_099_999_997_690_000, SPENT),
        Transfer(TAPROOT_TXID, 0, "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297", "BTC", 546),
    ]
    assert all(type(t.amount) is int for t in block.transfers)


async def test_unknown_method_and_unreachable_node_are_clear_errors(node):
    url, _ = node
    rpc = NodeRpc(url, user="u", password="p", label="Bitcoin Core (BTC)")
    from orbchain.chains.bitcoin.rpc import RpcError

    with pytest.raises(RpcError, match="getnothing: node error -32601: Method not found"):
        await rpc.call("getnothing")
    await rpc.close()
    dead = NodeRpc("http://127.0.0.1:9", user="u", password="p", timeout=2, label="Bitcoin Core (BTC)")
    with pytest.raises(ChainUnavailable, match="Bitcoin Core \\(BTC\\): cannot reach"):
        await dead.call("getblockcount")
    await dead.close()


def test_amounts_are_exact_and_never_float():
    assert coin_units(Decimal("20999999.97690000")) == 2_099_999_997_690_000
    assert coin_units(Decimal("0E-8")) == 0
    assert coin_units(json.loads("0.1", parse_float=Decimal)) == 10_000_000
    with pytest.raises(TypeError):
        coin_units(0.1)
    with pytest.raises(ChainUnavailable):
        coin_units(Decimal("0.000000001"))


def test_outputs_without_one_address_are_skipped():
    assert output_address({"scriptPubKey": {"type": "nulldata"}}) is None
    assert output_address({"scriptPubKey": {"type": "multisig", "addresses": ["a", "b"]}}) is None
    assert output_address({"ismweb": True, "scriptPubKey": {"address": "ltcmweb1..."}}) is None
    assert output_address({"scriptPubKey": {"addresses": ["D8vFz4p1L37jdg47HXKtSHA5uYLYxbGgPD"]}}) == \
        "D8vFz4p1L37jdg47HXKtSHA5uYLYxbGgPD"


@pytest.fixture
async def legacy_node(aiohttp_server):
    """A node whose getblock takes only a boolean (Dogecoin Core 1.14) and which has -txindex."""
    full = json.loads(GETBLOCK_2, parse_float=str)["result"]
    by_txid = {tx["txid"]: tx for tx in full["tx"]}
    verbose = {**full, "tx": list(by_txid)}
    calls: list[str] = []

    def answer(call: dict) -> dict:
        method, params = call["method"], call["params"]
        calls.append(f"{method} {params[1] if len(params) > 1 else ''}".strip())
        if method == "getblockhash":
            return {"result": BLOCK_HASH, "error": None, "id": call["id"]}
        if method == "getblock" and params[1] is True:
            return {"result": verbose, "error": None, "id": call["id"]}
        if method == "getblock":
            return {"result": None, "error": {"code": -1, "message": "JSON value is not a boolean as expected"},
                    "id": call["id"]}
        if method == "getrawtransaction":
            return {"result": by_txid[params[0]], "error": None, "id": call["id"]}
        return {"result": None, "error": {"code": -32601, "message": "Method not found"}, "id": call["id"]}

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        # Amounts go back out as the node writes them: bare decimal numbers.
        answers = [answer(c) for c in body] if isinstance(body, list) else answer(body)
        text = json.dumps(answers)
        for tx in full["tx"]:
            for out in tx["vout"]:
                text = text.replace(f'"value": "{out["value"]}"', f'"value": {out["value"]}')
        return web.Response(text=text, content_type="application/json")

    app = web.Application()
    app.router.add_post("/", handle)
    server = await aiohttp_server(app)
    return str(server.make_url("/")), calls


async def test_nodes_without_getblock_verbosity_2_are_read_through_getrawtransaction(node, legacy_node):
    modern_url, _ = node
    legacy_url, calls = legacy_node
    modern = BitcoinAdapter(gateway=None, settings=settings(), rpc=NodeRpc(modern_url, user="u", password="p"))
    legacy = BitcoinAdapter(gateway=None, settings=settings(), rpc=NodeRpc(legacy_url, user="u", password="p"))
    try:
        expected = await modern.block(800000)
        first = await legacy.block(800000)
        second = await legacy.block(800000)
    finally:
        await modern.close()
        await legacy.close()
    assert first == expected and second == expected
    # The verbosity probe happens once; afterwards the adapter asks the legacy way directly.
    assert calls.count("getblock 2") == 1 and calls.count("getblock True") == 2
    assert calls.count("getrawtransaction 1") == 6
