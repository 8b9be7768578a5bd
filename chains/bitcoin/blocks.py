"""Reading the node's decoded blocks and transactions into the chain contract.

Input is the JSON of ``getblock <hash> 2`` and ``getrawtransaction <txid> true``
(parsed with ``parse_float=Decimal``). Every output that pays an address
becomes a ``Transfer`` (``output_index`` = the output's ``n``, amount in
satoshis converted exactly from the Decimal coin value). Outputs without
one address are skipped: OP_RETURN (``nulldata``), the coinbase's witness
commitment, bare multisig, non-standard scripts, and Litecoin's MWEB outputs
(``ismweb``), which the gateway never derives.

Address fields differ by node version: Bitcoin Core 22+ writes
``scriptPubKey.address``; older nodes (Litecoin Core 0.21, Dogecoin Core 1.14)
write ``scriptPubKey.addresses`` as a list. Both are read.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ...api import Block, Transfer
from .rpc import coin_units

GENESIS_PARENT = "0" * 64


def output_address(output: Mapping[str, Any]) -> str | None:
    """The single address an output pays, or None (nulldata, multisig, MWEB, ...)."""
    if output.get("ismweb"):
        return None
    script = output.get("scriptPubKey") or {}
    address = script.get("address")
    if isinstance(address, str) and address:
        return address
    listed = script.get("addresses")
    if isinstance(listed, list) and len(listed) == 1 and isinstance(listed[0], str):
        return listed[0]
    return None


def spent_outpoints(tx: Mapping[str, Any]) -> tuple[str, ...]:
    """The outpoints ``"txid:n"`` a decoded transaction spends (none for a coinbase)."""
    return tuple(f"{vin['txid']}:{int(vin['vout'])}" for vin in tx.get("vin", ()) if "txid" in vin)


def transaction_transfers(tx: Mapping[str, Any], coin: str) -> list[Transfer]:
    """Every output of one decoded transaction that pays an address, with the outpoints it spends."""
    txid = tx["txid"]
    spends = spent_outpoints(tx)
    transfers = []
    for output in tx.get("vout", ()):
        address = output_address(output)
        if address is None:
            continue
        amount = coin_units(output["value"])
        if amount > 0:
            transfers.append(Transfer(txid, int(output["n"]), address, coin, amount, spends))
    return transfers


def block_transfers(txs: Iterable[Mapping[str, Any]], coin: str) -> tuple[Transfer, ...]:
    return tuple(t for tx in txs for t in transaction_transfers(tx, coin))


def parse_block(data: Mapping[str, Any], coin: str) -> Block:
    """A ``getblock <hash> 2`` answer as a contract ``Block``."""
    return Block(
        height=int(data["height"]),
        hash=data["hash"],
        parent_hash=data.get("previousblockhash") or GENESIS_PARENT,
        transfers=block_transfers(data.get("tx", ()), coin),
        timestamp=int(data["time"]) if data.get("time") is not None else None,
    )
