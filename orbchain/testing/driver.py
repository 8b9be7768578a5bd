"""``ChainDriver``: what a chain author writes so the conformance suite can drive their test node.

The suite never talks to a node itself. It asks the driver to pay an
address, mine, reorganise and report what arrived, and it watches the
result only through the gateway (the scanner, the payout worker, the API).
One driver serves one coin of one chain adapter; write a second driver (or
subclass) to run the suite for a token of the same chain.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class ChainDriver(ABC):
    """A test node of one chain, seen from the conformance suite.

    Class attributes a subclass sets:

    * ``chain``: the adapter's registry name (``adapter.name``).
    * ``coin``: the coin symbol under test; the adapter must serve it.
    * ``deposit_amount`` / ``payout_amount``: decimal strings in whole coins;
      the payout must be at least the coin's ``min_payout`` and below the
      merchant's share of one deposit.
    * ``blocked_plugins``: plugins to block in the gateway under test (the
      built-in ``devnet`` simulates many coins; block it so your adapter is
      the one serving ``coin``).
    * ``charges_network_fee``: False only for a chain whose payouts cost
      nothing (a simulation); the suite then expects no network-fee booking.
    """

    chain: str = ""
    coin: str = ""
    deposit_amount: str = "1"
    payout_amount: str = "0.3"
    blocked_plugins: tuple[str, ...] = ()
    charges_network_fee: bool = True

    def config_sections(self) -> dict[str, dict[str, Any]]:
        """Config tables pointing the gateway at this node, e.g. ``{"plugin": {"mychain": {...}}}``.

        Called for every test, right before its gateway is built, so a value
        such as a start height can reflect the node's current state.
        """
        return {}

    async def attach(self, gateway: Any) -> None:  # noqa: B027 - optional: a driver may need nothing of it
        """The gateway under test is built (and its adapter registered); keep what you need of it."""

    @abstractmethod
    async def send(self, address: str, amount: int) -> str:
        """Pay ``amount`` base units of ``coin`` to ``address`` from a funded test account; the tx hash.

        Leave it unmined when the node allows (the suite mines with ``mine``);
        a node that mines on arrival may have mined it already.
        """

    @abstractmethod
    async def mine(self, blocks: int) -> None:
        """Extend the best chain by ``blocks`` blocks, taking what waits in the mempool."""

    @abstractmethod
    async def reorg(self, depth: int) -> None:
        """Replace the newest ``depth`` blocks by a longer branch (``depth + 1`` blocks) without their
        transactions (invalidate, then mine). Whether those transactions return to the mempool is
        the chain's business; the suite asserts nothing that depends on it."""

    @abstractmethod
    async def height(self) -> int:
        """The best chain's height."""

    @abstractmethod
    def external_address(self) -> str:
        """A fresh payout destination the gateway does not own (canonical form)."""

    @abstractmethod
    async def received(self, address: str) -> int:
        """Base units of ``coin`` that confirmed transactions paid to ``address`` so far."""

    async def fund_hot_wallet(self, gateway: Any, amount: int) -> None:  # noqa: B027 - optional, see below
        """Make sure the gateway's hot wallet can send ``amount`` of ``coin`` plus fees.

        Nothing to do for a chain that pays out of deposit outputs (bitcoin);
        an account chain tops up the hot wallet's address (and its fee coin).
        """

    async def prune(self) -> int:
        """Make the node forget every block it may (all final ones); its first available height.

        Needed only for an adapter declaring ``Capability.HISTORY``: the suite
        then checks that a deposit inside the forgotten blocks is credited once.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot prune its node (needed for HISTORY)")

    async def settle(self) -> None:  # noqa: B027 - optional: a node that settles at once needs none
        """Wait until the node has processed everything sent so far (called before each scan)."""
