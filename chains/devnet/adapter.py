"""``DevnetAdapter``: the simulated chain seen through the chain-adapter contract.

The scanner treats it like any node-backed adapter: it follows ``tip`` and
``block(height)``, notices replaced hashes after a reorg and reads
``mempool`` for the Paying state. Addresses are real mainnet formats.
It also sends payouts (``DevnetPayouts``) from a simulated hot wallet, says
what that wallet holds for the custody check (``custody.py``), and
pushes (``Capability.PUSH``): a payment made through this process (the pay
form, ``pay_on_devnet``) is scanned at once. During a simulated outage
(``orbchain devnet outage on``) every read and broadcast raises
``ChainUnavailable``/``BroadcastError`` as an unreachable node's would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from ...api import (
    Block, BlockRef, BroadcastError, Capability, ChainAdapter, ChainUnavailable, Holding, SignedPayout, Transfer,
)
from .chain import NETWORK, DevnetChain
from .custody import devnet_holdings
from .payouts import DevnetPayouts

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

CHAIN_NAME = "devnet"


class DevnetAdapter(ChainAdapter, DevnetPayouts):
    name = CHAIN_NAME
    network = NETWORK
    simulated = True
    capabilities = frozenset({Capability.DEPOSITS, Capability.MEMPOOL, Capability.PAYOUTS, Capability.PUSH,
                              Capability.CUSTODY, Capability.REMOTE_SIGNING})
    # The whole devnet history is short and local: scan it from genesis.
    start_height = 0

    def __init__(self, chain: DevnetChain, coins: Iterable[str], scan_seconds: float,
                 gateway: "Gateway | None" = None) -> None:
        self.chain = chain
        self.gateway = gateway  # for the custody check's view of the books (credited addresses, payouts)
        self.coins = tuple(coins)
        self.scan_seconds = scan_seconds

    async def _reachable(self) -> None:
        if await self.chain.in_outage():
            raise ChainUnavailable("devnet node unreachable (simulated outage: orbchain devnet outage off)")

    async def tip(self) -> BlockRef:
        await self._reachable()
        return await self.chain.tip()

    async def block(self, height: int) -> Block:
        await self._reachable()
        return await self.chain.block(height)

    async def mempool(self) -> Sequence[Transfer]:
        await self._reachable()
        return await self.chain.mempool()

    async def broadcast(self, signed: SignedPayout) -> None:
        if await self.chain.in_outage():
            raise BroadcastError("devnet node unreachable (simulated outage)")
        await super().broadcast(signed)

    async def custody_holdings(self, cold_addresses: Sequence[str]) -> Sequence[Holding]:
        await self._reachable()
        if self.gateway is None:
            raise ChainUnavailable("devnet adapter built without a gateway cannot tell its holdings")
        return await devnet_holdings(self.gateway, self.name, self.coins, cold_addresses)

    async def push(self, heard: Callable[[str], None]) -> None:
        await self.chain.follow(heard)


def devnet_chain(gateway: "Gateway") -> DevnetChain | None:
    """The gateway's devnet, None when the plugin registered none (disabled)."""
    adapter = gateway.chains.get(CHAIN_NAME)
    return adapter.chain if isinstance(adapter, DevnetAdapter) else None
