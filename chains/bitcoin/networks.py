"""Which network a bitcoin-family node must be on: ``getblockchaininfo.chain`` and the genesis hash.

Why both: the chain name tells mainnet from testnet from regtest, but every
coin calls its mainnet "main"; only block 0 tells a Litecoin node from a
Bitcoin or Dogecoin one. A genesis is listed only where it is known for sure;
where it is not (Bitcoin's regtest), the chain name alone is compared.
"""

from __future__ import annotations

# (symbol, configured network) -> the chain names the node may report (Bitcoin's testnet may be testnet3,
# testnet4 or signet: all are test money).
CHAIN_NAMES: dict[str, frozenset[str]] = {
    "mainnet": frozenset({"main"}),
    "testnet": frozenset({"test", "testnet4", "signet"}),
    "regtest": frozenset({"regtest"}),
}

GENESIS: dict[tuple[str, str], frozenset[str]] = {
    ("BTC", "mainnet"): frozenset({"000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"}),
    ("BTC", "testnet"): frozenset({
        "000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943",  # testnet3
        "00000000da84f2bafbbc53dee25a72ae507ff4914b867c565be350b0da8bf043",  # testnet4
        "00000008819873e925422c1ff0f99f7cc9bbb232af63a077a480a3633bee1ef6",  # the default signet
    }),
    ("LTC", "mainnet"): frozenset({"12a765e31ffd4059bada1e25190f6e98c99d9714d334efa41a195a7e7e04bfe2"}),
    ("LTC", "testnet"): frozenset({"4966625a4b2851d9fdee139e56211a0d88575f59ed816ff5e6a63deb4e3e29a0"}),
    ("LTC", "regtest"): frozenset({"530827f38f93b43ed12af0b3ad25a288dc02ed74d6d7857862df51fc56c416f9"}),
    ("DOGE", "mainnet"): frozenset({"1a91e3dace36e2be3bf030a65679fe821aa1d6ef92e7c9902eb318182c355691"}),
    ("DOGE", "testnet"): frozenset({"bb0a78264637406b6360aad926284d544d7049f45189db5664f3c4d07350559e"}),
    ("DOGE", "regtest"): frozenset({"3d2160a3b5dc4a9d62e7e66a295f70313ac808440ef7400d6c0772171ce973a5"}),
}

# Default node_max_tip_age_seconds on mainnet and testnet (docs/decisions.md: about 18 target block
# intervals, so a healthy chain trips it less than once in years; testnet blocks are erratic: three times
# that). Regtest mines on demand: off.
MAINNET_TIP_AGE = {"BTC": 3 * 3600, "LTC": 3600, "DOGE": 1800}


def default_tip_age(symbol: str, network: str) -> int:
    if network == "regtest":
        return 0
    return MAINNET_TIP_AGE[symbol] * (3 if network == "testnet" else 1)
