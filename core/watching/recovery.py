"""After a restore to an earlier point: skip every derivation counter forward and watch what was skipped.

Why: a restored database forgets the addresses handed out after its backup.
Its counters would hand those addresses out again (two payers on one
address), and the scanner would not watch them (their money never
credited). :func:`recover` advances every counter in ``counters`` by
``skip`` (merchant address indexes, merchant HD accounts, change addresses,
any plugin's named counter: each is only ever required to be unique, never
dense, so going forward is always safe) and stores as watched rows every
address of every merchant, coin family and network up to the new counter
that has no row: the skipped ones and those reserved before the backup but
handed out after it. A deposit to one
is then credited by the ordinary deposit engine to the merchant whose
account derived it, with no payment (its invoice row is gone), described in
the ledger and the webhook as recovered. Keyed by the backup's label: a
second run for the same backup changes nothing. Run before any gateway
process starts on the restored database (docs/operations.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..addresses import store as addresses
from ..accounts.merchants import KEY_ACCOUNT_COUNTER
from ..contract.gateway import PluginGateway as Gateway

# Indexes skipped per counter: 50 blocks of INDEX_BLOCK, far more than a night's
# addresses of one merchant and coin on most deployments; ``--skip`` raises it.
DEFAULT_SKIP = 1000
MAX_SKIP = 1_000_000
MAX_LABEL = 200

__all__ = ["DEFAULT_SKIP", "Recovery", "recover", "recovered_memo", "last_recovery"]


@dataclass(frozen=True)
class Recovery:
    """What one recovery did (``already``: an earlier run for this backup did it)."""

    label: str
    skip: int
    counters: int
    addresses: int
    recovered_at: int
    already: bool = False


def check_input(label: str, skip: int) -> None:
    if not label.strip() or len(label) > MAX_LABEL:
        raise ValueError(f"name the backup restored from (1 to {MAX_LABEL} characters)")
    if not 1 <= skip <= MAX_SKIP:
        raise ValueError(f"--skip must be between 1 and {MAX_SKIP}")


def derived_pairs(gateway: "Gateway") -> set[tuple[str, str]]:
    """(family, network) of every coin a configured chain serves whose addresses the gateway derives."""
    pairs = set()
    for adapter in gateway.chains:
        for coin in gateway.coins:
            family = gateway.address_families.find(coin.address_family, adapter.network)
            if adapter.serves(coin.symbol) and family is not None and family.derivable:
                pairs.add((family.name, adapter.network))
    return pairs


async def _open_counters(gateway: "Gateway") -> None:
    """A counter row (at "nothing handed out") for every merchant and derived family still without one,
    and for the merchant-account counter.

    Why: a merchant's first address of a coin (or the first merchant) may have
    come after the backup; without its row the counter would start again.
    """
    await gateway.db.execute("INSERT INTO counters (name, value) VALUES (:n, 0) ON CONFLICT (name) DO NOTHING",
                             {"n": KEY_ACCOUNT_COUNTER})  # next_key_account's first value is 1
    merchants = await gateway.db.fetch_all("SELECT id FROM merchants")
    rows = [{"n": addresses.counter_name(m["id"], family, network)}
            for m in merchants for family, network in sorted(derived_pairs(gateway))]
    if rows:
        await gateway.db.execute_many(
            "INSERT INTO counters (name, value) VALUES (:n, -1) ON CONFLICT (name) DO NOTHING", rows)


async def _watch(gateway: "Gateway", merchants: Mapping[str, Mapping[str, Any]], name: str, last: int,
                 label: str) -> int:
    """Watch every index of one address counter up to ``last`` that has no address row; how many.

    Not only the skipped ones: an index a process reserved before the backup
    (``IndexBlocks``) and handed out after it is below the restored counter.
    """
    merchant_id, family, network = name[len(addresses.ADDRESS_COUNTER_PREFIX):].rsplit(":", 2)
    merchant = merchants.get(merchant_id)
    if merchant is None or not gateway.address_families.find(family, network):
        return 0  # a family no chain registers any more: nothing can pay it here
    stored = {int(r["key_index"]) for r in await gateway.db.fetch_all(
        "SELECT key_index FROM deposit_addresses WHERE merchant_id = :m AND family = :f AND network = :n",
        {"m": merchant_id, "f": family, "n": network})}
    statements = [addresses.recovered_insert(gateway, merchant, family, network, index, label)
                  for index in range(last + 1) if index not in stored]
    if statements:
        await gateway.db.execute_many(statements[0][0], [values for _, values in statements])
    return len(statements)


async def recover(gateway: "Gateway", label: str, skip: int = DEFAULT_SKIP) -> Recovery:
    """Skip every counter ``skip`` past where the restored database left it, and watch the skipped addresses.

    One transaction: an interrupted run leaves nothing, and the recovery row
    (its primary key the label) makes a second run for the same backup a no-op.
    """
    check_input(label, skip)
    db, now = gateway.db, gateway.now()
    async with db.transaction():
        claimed = await db.fetch_val(
            "INSERT INTO restore_recoveries (label, skip, recovered_at) VALUES (:l, :s, :t)"
            " ON CONFLICT (label) DO NOTHING RETURNING label", {"l": label, "s": skip, "t": now})
        if claimed is None:
            row = await db.fetch_one("SELECT * FROM restore_recoveries WHERE label = :l", {"l": label})
            assert row is not None, "the conflicting row exists"
            return _recovery_of(row, already=True)
        await _open_counters(gateway)
        counters = await db.fetch_all(f"SELECT name, value FROM counters ORDER BY name{db.for_update}")
        await db.execute("UPDATE counters SET value = value + :s", {"s": skip})
        merchants = {m["id"]: m for m in await db.fetch_all("SELECT id, key_account FROM merchants")}
        watched = 0
        for counter in counters:
            if counter["name"].startswith(addresses.ADDRESS_COUNTER_PREFIX):
                watched += await _watch(gateway, merchants, counter["name"], int(counter["value"]) + skip, label)
        await db.execute("UPDATE restore_recoveries SET counters = :c, addresses = :a WHERE label = :l",
                         {"c": len(counters), "a": watched, "l": label})
    return Recovery(label, skip, len(counters), watched, now)


def _recovery_of(row: Mapping[str, Any], already: bool = False) -> Recovery:
    return Recovery(row["label"], int(row["skip"]), int(row["counters"]), int(row["addresses"]),
                    int(row["recovered_at"]), already)


async def last_recovery(gateway: "Gateway") -> Recovery | None:
    """The newest recovery (``doctor`` shows it), or None."""
    row = await gateway.db.fetch_one("SELECT * FROM restore_recoveries ORDER BY recovered_at DESC, label LIMIT 1")
    return None if row is None else _recovery_of(row)


async def recovered_memo(gateway: "Gateway", deposit: Mapping[str, Any]) -> str | None:
    """The ledger description of a deposit to a recovered address, or None for any other deposit."""
    if deposit.get("track_id"):
        return None
    label = await addresses.recovery_of(gateway, deposit["address"])
    if label is None:
        return None
    return (f"recovered deposit: {deposit['address']} was handed out after backup {label} and its invoice was"
            " lost in the restore")
