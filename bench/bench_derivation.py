"""Derivation throughput: 10,000 deposit addresses per family under one merchant.

Run: .venv/bin/python bench/bench_derivation.py [--count N] [--account A]

Uses a fixed, PUBLIC test mnemonic (BIP-39's "abandon ... about"); never point
this at a real seed. Prints addresses per second per family, for a seed store
and, for the secp256k1 families, a watch-only store built from account xpubs.
"""

from __future__ import annotations

import argparse
import time

from orbchain.core.keys import AddressFamilyRegistry, SeedKeyStore, WatchOnlyKeyStore
from orbchain.core.contract.hook_caller import HookCalls
from orbchain.core.contract.plugins import get_plugin_manager

TEST_MNEMONIC = " ".join(["abandon"] * 11 + ["about"])
FAMILIES = ("btc", "ltc", "doge", "evm", "tron", "solana")


def _rate(store, family, account: int, count: int) -> tuple[float, float, str]:
    """(addresses per wall-clock second, per CPU second, last address).

    The CPU-time figure is the cost of derivation itself; the wall-clock one
    also counts time lost to other processes on a busy machine.
    """
    family.derive(store, account, 0)  # warm the account-level cache
    wall, cpu = time.perf_counter(), time.process_time()
    last = None
    for index in range(count):
        last = family.derive(store, account, index)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return count / wall, count / max(cpu, 1e-9), last.address  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--account", type=int, default=7)
    parser.add_argument("--network", default="mainnet", choices=("mainnet", "testnet", "regtest"))
    args = parser.parse_args()

    registry = AddressFamilyRegistry()  # the installed chain plugins' families
    pm = get_plugin_manager()
    HookCalls(pm).register(pm.hook.register_address_families, registry=registry, gateway=None)
    seed_store = SeedKeyStore.from_mnemonic(TEST_MNEMONIC)
    watch = WatchOnlyKeyStore(network=args.network)
    print(f"{args.count} addresses per family, merchant account {args.account}, {args.network}")
    print(f"{'family':<8} {'store':<11} {'addr/s':>9} {'(cpu)':>9}  last address")
    for name in FAMILIES:
        family = registry.require(name, args.network)
        rate, cpu_rate, last = _rate(seed_store, family, args.account, args.count)
        print(f"{name:<8} {'seed':<11} {rate:>9,.0f} {cpu_rate:>9,.0f}  {last}")
        if family.watch_only_capable:
            watch.add_account_xpub(family, args.account, seed_store.account_xpub(family, args.account))
            rate, cpu_rate, last_w = _rate(watch, family, args.account, args.count)
            assert last_w == last, "watch-only and seed stores disagree"
            print(f"{name:<8} {'watch-only':<11} {rate:>9,.0f} {cpu_rate:>9,.0f}  {last_w}")


if __name__ == "__main__":
    main()
