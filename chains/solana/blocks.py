"""Slots as the scanner's heights: blocks, skipped slots and balance-change deposits.

Height = slot. A slot whose leader produced no block on the best fork
(``getBlock`` answers "slot skipped") becomes an empty block whose hash is
``skipped:<slot>:<hash of the last real block before it>``; a real block
whose ``parentSlot`` is not ``slot - 1`` reports that same name as its
parent. So the core scanner's parent-hash check and reorg rewind work over
gaps: a fork that fills a skipped slot, or replaces the block before a gap,
changes the remembered names and the scanner walks back (docs/solana.md).

Deposits: for every transaction whose ``meta.err`` is null, each account
whose lamport balance grew (``postBalances - preBalances``) received that
much; the output index is the account's position in the transaction.
A failed transaction moved nothing but its fee and is never reported.
This sees system transfers and value moved by programs alike.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import Block, ChainUnavailable, Transfer
from .rpc import lamports

SKIPPED = "skipped"


def skipped_hash(slot: int, last_real_hash: str) -> str:
    return f"{SKIPPED}:{slot}:{last_real_hash}"


def parent_name(slot: int, parent_slot: int, parent_hash: str) -> str:
    """What the scanner remembers at ``slot - 1`` when this block's parent is ``parent_slot``."""
    return parent_hash if parent_slot == slot - 1 else skipped_hash(slot - 1, parent_hash)


def _account_keys(tx: Mapping[str, Any], meta: Mapping[str, Any]) -> list[str]:
    keys = [k if isinstance(k, str) else k.get("pubkey") for k in tx["message"]["accountKeys"]]
    loaded = meta.get("loadedAddresses") or {}  # v0 transactions: lookup-table accounts follow
    return [*keys, *loaded.get("writable", []), *loaded.get("readonly", [])]


def transaction_transfers(entry: Mapping[str, Any], coin: str) -> tuple[Transfer, ...]:
    """One transaction with its status meta (a ``getBlock`` entry or a ``getTransaction`` answer)."""
    meta = entry.get("meta")
    if not isinstance(meta, dict):
        raise ChainUnavailable("the node returned a transaction without its status meta")
    if meta.get("err") is not None:
        return ()  # failed: only the fee moved
    tx = entry["transaction"]
    signature = tx["signatures"][0]
    keys = _account_keys(tx, meta)
    pre, post = meta["preBalances"], meta["postBalances"]
    if not len(keys) == len(pre) == len(post):
        raise ChainUnavailable(f"transaction {signature}: balances do not match its accounts")
    return tuple(Transfer(signature, index, address, coin, lamports(after) - lamports(before))
                 for index, (address, before, after) in enumerate(zip(keys, pre, post))
                 if lamports(after) > lamports(before))


def transfers(raw_block: Mapping[str, Any], coin: str) -> tuple[Transfer, ...]:
    return tuple(t for entry in raw_block.get("transactions") or [] for t in transaction_transfers(entry, coin))


def real_block(slot: int, raw: Mapping[str, Any], coin: str) -> Block:
    return Block(slot, raw["blockhash"], parent_name(slot, lamports(raw["parentSlot"]), raw["previousBlockhash"]),
                 transfers(raw, coin), raw.get("blockTime"))


def skipped_block(slot: int, parent_slot: int, parent_hash: str) -> Block:
    """Slot ``slot`` has no block; the next real block after it was built on ``parent_slot`` (< ``slot``)."""
    return Block(slot, skipped_hash(slot, parent_hash), parent_name(slot, parent_slot, parent_hash))
