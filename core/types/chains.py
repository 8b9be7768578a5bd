"""The chain-adapter contract: what a chain plugin implements.

A chain adapter only reports what it observes on its chain; the core's
scanner (``core/watching/scanner.py``) decides what that means for deposits. The
scanner follows the best chain one block at a time, remembers the hashes
of recent blocks to detect reorganisations, looks up each reported transfer
in the address table (cost grows with transactions, never with the number
of watched addresses) and recomputes confirmations from the current tip.

To add a chain, subclass :class:`ChainAdapter`, implement ``tip``, ``block``
and optionally ``mempool``, and register an instance from your plugin's
``register_chains`` hook. Results are immutable value objects.

What an adapter can do beyond watching deposits is declared, not guessed:
``capabilities`` is a frozenset of :class:`Capability` and the core asks
``adapter.supports(Capability.PAYOUTS)`` (LNbits' feature flags), never
``getattr``/``isinstance``. :func:`check_capabilities` refuses, at startup,
an adapter whose declaration its methods do not back.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, cast

from .node_identity import NodeIdentity


@dataclass(frozen=True)
class BlockRef:
    """A block by height and hash; the hash identifies it across reorgs."""

    height: int
    hash: str


@dataclass(frozen=True)
class Transfer:
    """Value arriving at an address: one transaction output (UTXO), one native
    value transfer (account chains; ``output_index`` 0) or one token Transfer
    log (``output_index`` = log index). ``amount`` is in the coin's base
    units. Report only successful transfers: a reverted transaction never
    credits.

    ``spends`` (UTXO chains): the outpoints ``"txid:n"`` the transaction
    spends. The core keeps them with the deposit, so a payer's replacement or
    double-spend (another transaction spending one of them) is recognised
    within one scan instead of after ``drop_after_seconds``.
    """

    tx_hash: str
    output_index: int
    address: str
    coin: str
    amount: int
    spends: tuple[str, ...] = ()


@dataclass(frozen=True)
class Block:
    height: int
    hash: str
    parent_hash: str
    transfers: tuple[Transfer, ...] = field(default_factory=tuple)
    timestamp: int | None = None

    @property
    def ref(self) -> BlockRef:
        return BlockRef(self.height, self.hash)


@dataclass(frozen=True)
class NodeState:
    """One configured node of a chain as ``/ready`` and ``/metrics`` show it.

    ``name`` is the node's URL without credentials, path or query (where API
    keys live); ``state`` is ``up``, ``behind``, ``set aside`` (it reported
    another block than the quorum), ``refused`` (on another network, in its
    initial sync or with a stale tip: ``refused`` names which,
    core/types/node_identity.py), ``down`` or ``unknown`` (not asked yet).
    """

    name: str
    state: str
    height: int | None = None
    error: str | None = None
    refused: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "state": self.state, "height": self.height, "error": self.error,
                "refused": self.refused}


class ChainUnavailable(RuntimeError):
    """The node cannot be reached or answered nonsense; the scan retries later."""


class BlocksPruned(ChainUnavailable):
    """The node no longer keeps the block at ``height``: its history now starts at ``first_available``.

    Raised by ``block``/``block_hash`` for a block the node deleted (pruned
    ledger, restart from a recent snapshot), never for a height that simply
    has no block. Blocks that old are final. With ``Capability.HISTORY`` the
    scanner catches up through ``address_history`` and resumes at
    ``first_available``; without it the scan stops there, as for any outage.
    """

    def __init__(self, height: int, first_available: int) -> None:
        super().__init__(f"block {height} was pruned by the node; its history starts at {first_available}")
        self.height = height
        self.first_available = first_available


@dataclass(frozen=True)
class PastTransfer:
    """A transfer found by ``address_history`` and the block it is in (``hash`` may be a stand-in name)."""

    transfer: Transfer
    block: BlockRef


class Capability(enum.Enum):
    """What a chain adapter declares it can do (``ChainAdapter.capabilities``).

    * ``DEPOSITS``: ``tip``/``block`` follow the chain; the core schedules a
      scan job for it (``chain.<name>.scan``).
    * ``MEMPOOL``: ``mempool()`` reports unconfirmed transfers, so payments
      show Paying before the first confirmation; without it the core never
      calls ``mempool()``.
    * ``PAYOUTS``: ``payout_role()`` returns a :class:`PayoutSender`; the core
      routes payouts of the adapter's coins to it. Without it payouts of those
      coins answer 503 ``payouts_not_configured``.
    * ``SWEEPS``: the plugin moves credited deposits to its hot wallet with a
      job of its own. For operators and other plugins; the core does nothing
      with it.
    * ``INSTANT_PAYOUTS`` (with ``PAYOUTS``): a payout is final as soon as it is
      sent (a Lightning payment settles or fails within seconds), so the
      request that creates one drives it through the worker's stages before
      answering; its response already shows Confirmed or Failed. What is
      still undecided when the request gives up is left to the worker.
    * ``HISTORY``: ``address_history()`` finds the transfers to given
      addresses inside blocks the node pruned (``BlocksPruned``), so deposits
      made while the gateway was down are not lost when the node forgot
      those blocks. Without it the scan cannot pass a pruned block.
    * ``PUSH``: ``push(heard)`` follows the node's own notifications (a P2P
      peer's announcements, ZMQ, a WebSocket subscription) and calls
      ``heard`` for each new transaction or block, so the core scans at once
      instead of waiting for ``scan_seconds``. The poll keeps running as the
      safety net; a lost stream is reconnected by the core with backoff.
    * ``CUSTODY``: ``custody_holdings(cold_addresses)`` says what the node
      shows the gateway holds (hot wallet, unswept deposit addresses, the
      operator's watch-only cold addresses, channels), so ``orbchain custody
      check`` can prove the books against the chain. Without it that check
      reports the adapter's coins as "not supported", never as zero.
    * ``REMOTE_SIGNING`` (with ``PAYOUTS``): a separate ``orbchain signer``
      may sign this chain's payouts: ``sign_payout``, ``bump_stuck`` and
      ``close_dropped`` run there (holding the seed) and ``broadcast`` and
      ``payout_status``, run in ``serve``, need no key. A seedless ``serve`` (``[signer] url``) refuses to start
      with a payout chain that does not declare it.
    * ``SIGNER_SENDS`` (with ``REMOTE_SIGNING``): sending is spending too (a
      Lightning payment: the node's paying credential, not a signature, moves
      the money), so with a separate signer ``broadcast`` and
      ``payout_status`` run in the signer too (steps ``pay`` and ``status``,
      on the row's stored bytes), besides the policy and ``sign_payout``;
      the ``serve`` worker records the stages and finishes the payout from
      the signer's answers; ``serve`` holds no paying credential.
    * ``FINALITY``: ``finalized_height()`` names the newest block the chain
      itself made final (Ethereum's and Polygon's ``finalized`` tag); a
      deposit is credited only once its block is final AND it has its
      confirmations, so no reorganisation can take a credit back.
    * ``BATCH_PAYOUTS`` (with ``PAYOUTS``): ``sign_batch(orders)`` pays the
      queued items of one batch payout request in ONE transaction (one output
      per item, a UTXO chain's way to pay N for about the fee of one); the
      core splits the fee among the items. Without it each item is its own
      transaction.
    """

    DEPOSITS = "deposits"
    MEMPOOL = "mempool"
    PAYOUTS = "payouts"
    SWEEPS = "sweeps"
    INSTANT_PAYOUTS = "instant_payouts"
    HISTORY = "history"
    PUSH = "push"
    CUSTODY = "custody"
    REMOTE_SIGNING = "remote_signing"
    SIGNER_SENDS = "signer_sends"
    BATCH_PAYOUTS = "batch_payouts"
    FINALITY = "finality"


class CustodyPlace:
    """Where a :class:`Holding` sits; the custody report shows each place on its own line."""

    HOT_WALLET = "hot_wallet"  # the gateway's spending wallet (a UTXO chain's change, an account's balance)
    DEPOSIT_ADDRESSES = "deposit_addresses"  # credited, not yet swept (a UTXO chain's deposits stay there)
    PAYOUTS_IN_FLIGHT = "payouts_in_flight"  # inputs a payout not yet final holds, at their booked value
    COLD = "cold"  # the operator's watch-only addresses (config ``custody.cold``)
    CHANNELS = "channels"  # a Lightning node's local channel balance
    # Outputs worth less than the fee to spend them now (a UTXO chain's): held, counted, never spent at a loss,
    # so not in what a payout can spend (``CoinCustody.hot``).
    DUST = "dust"


@dataclass(frozen=True)
class Holding:
    """What the node says the gateway holds of ``coin`` in one ``place`` (:class:`CustodyPlace`), in base units.

    ``count`` is how many outputs or addresses were asked (for the report);
    ``node_checked`` is False for a figure taken from the books because the
    node cannot tell it yet (inputs of a payout still in flight).
    """

    coin: str
    place: str
    amount: int
    count: int = 0
    node_checked: bool = True


class ChainAdapter(ABC):
    """One chain: its coins and the deposit-watching role.

    Class attributes a subclass sets:

    * ``name``: unique chain name (the registry key), e.g. ``"litecoin"``.
    * ``coins``: coin symbols this adapter serves (each registered through
      ``register_coins`` by some plugin).
    * ``network``: the key layer's network for deriving and validating
      addresses: ``"mainnet"``, ``"testnet"`` or ``"regtest"``.
    * ``scan_seconds``: how often the core scans this chain.
    * ``start_height``: where a fresh database starts scanning (None = tip).
    * ``simulated``: True for a chain that only simulates (devnet); a real
      adapter serving the same coin is always preferred over it.
    * ``drop_after_seconds``: an unconfirmed deposit missing from both the
      chain and the mempool this long is marked FAILED.
    * ``capabilities``: the :class:`Capability` set this adapter declares
      (an instance may set its own, e.g. from its settings).
    * ``max_history_addresses`` (with ``HISTORY``): at most this many
      addresses are passed to one ``address_history`` call.
    * ``node_networks``, ``node_geneses``: what ``node_identity()`` must report
      (any of them; empty: not compared), from the configuration.
    * ``max_tip_age_seconds``: how old a node's best block may be against the
      wall clock before the node is refused; 0 turns the check off.

    Report addresses in the canonical form the key layer derives (bech32
    lower case, EIP-55 checksummed hex, ...): the address table is matched
    exactly.
    """

    name: str = ""
    coins: tuple[str, ...] = ()
    network: str = "mainnet"
    scan_seconds: float = 5.0
    max_blocks_per_scan: int = 200
    start_height: int | None = None
    drop_after_seconds: int = 3600
    simulated: bool = False
    capabilities: frozenset[Capability] = frozenset({Capability.DEPOSITS})
    max_history_addresses: int = 1000
    node_networks: frozenset[str] = frozenset()
    node_geneses: frozenset[str] = frozenset()
    max_tip_age_seconds: int = 0

    @abstractmethod
    async def tip(self) -> BlockRef:
        """The best chain's newest block."""

    @abstractmethod
    async def block(self, height: int) -> Block:
        """The best chain's block at ``height`` with every transfer in it.

        Raise ``ChainUnavailable`` when the node cannot answer. A block
        whose height is above the tip is a programming error.
        """

    async def block_hash(self, height: int) -> str:
        """Hash of the best chain's block at ``height`` (override when cheaper than ``block``)."""
        return (await self.block(height)).hash

    async def mempool(self) -> Sequence[Transfer]:
        """Unconfirmed transfers (for the Paying state); called only with ``Capability.MEMPOOL``."""
        return ()

    async def finalized_height(self) -> int | None:
        """The height of the chain's newest finalized block (``Capability.FINALITY``), once per scan; None when the
        node cannot say (the confirmation count alone then decides)."""
        return None

    async def conflicted(self, transfers: Sequence[Transfer]) -> frozenset[str]:
        """Which of these unconfirmed transfers (gone from the mempool) can no longer confirm.

        Each carries the ``spends`` it was reported with. Answer the
        ``tx_hash`` of every transfer whose transaction is neither in the
        mempool nor in the chain while one of its ``spends`` is spent by
        another transaction (in the mempool or the chain): the payer replaced
        or double-spent it. The core marks those deposits FAILED at once
        (``failure_reason``) and turns their payment back. Called once per scan
        with ``Capability.MEMPOOL``; the default (no ``spends`` to check) is none.
        """
        return frozenset()

    async def address_history(self, addresses: Sequence[str], start: int, end: int) -> Sequence[PastTransfer]:
        """Successful transfers to ``addresses`` in blocks ``start``..``end`` (all pruned, so final).

        Called only with ``Capability.HISTORY``, when ``block(start)`` raised
        ``BlocksPruned`` (``end`` is its ``first_available - 1``). Report each
        transfer with the same ``(tx_hash, output_index)`` ``block`` would
        give it, so a later scan of the same block never credits it twice.
        Bound your own work per call and log what you leave out; raise
        ``ChainUnavailable`` to have the whole catch-up retried.
        """
        return ()

    async def push(self, heard: Callable[[str], None]) -> None:
        """Follow the node's notifications until the stream ends; called only with ``Capability.PUSH``.

        Connect, then call ``heard("tx")`` when the node announces a new
        transaction and ``heard("block")`` for a new block (``heard`` only
        wakes the scan: it is cheap, never blocks and may be called in
        bursts). Return or raise ``ChainUnavailable`` when the stream is lost;
        the core calls ``push`` again after a backoff, and the periodic scan
        keeps crediting meanwhile, so a missed notification delays a deposit
        by at most ``scan_seconds`` and never loses it. Cancellation (the
        gateway stopping) must close the connection.
        """
        raise NotImplementedError(f"{type(self).__name__} declares Capability.PUSH without push()")

    async def node_identity(self) -> NodeIdentity:
        """One node's network and sync state, as a single-node read (``NodeQuorum`` pins it to each node).

        Not implemented by default: the node is not checked, and the gateway warns once at start.
        """
        raise NotImplementedError(f"{type(self).__name__} does not report its node's identity")

    async def custody_holdings(self, cold_addresses: Sequence[str]) -> Sequence[Holding]:
        """What the node says the gateway holds, per coin and place; called only with ``Capability.CUSTODY``.

        Report every coin of ``coins`` the gateway holds anywhere (a zero
        amount is a real answer: the node says there is nothing). Count the
        hot wallet, the deposit addresses not yet swept and each of
        ``cold_addresses`` (the operator's watch-only cold storage on this
        chain, from config ``custody.cold``). Ask the node for the state
        as the books know it: a payout the ledger still holds in flight is
        counted as not yet spent. Raise ``ChainUnavailable`` when the node
        cannot answer: the check then says "unavailable", never zero.
        """
        raise NotImplementedError(f"{type(self).__name__} declares Capability.CUSTODY without custody_holdings()")

    async def close(self) -> None:  # noqa: B027 - optional: most adapters hold nothing to release
        """Release connections. The core calls it once at shutdown (the web app's
        cleanup, the end of a CLI command), after the jobs stopped and the
        plugins' ``gateway_stopping`` ran; it must not raise and may be
        called on an adapter that never connected."""

    def node_states(self) -> Sequence[NodeState]:
        """Each configured node's health (a ``NodeSet`` adapter reports its nodes); empty when not tracked."""
        return ()

    def supports(self, capability: Capability) -> bool:
        """Whether this adapter declared ``capability``: the only way the core asks."""
        return capability in self.capabilities

    def payout_role(self) -> "PayoutSender":
        """The payout role, asked only when ``supports(Capability.PAYOUTS)``.

        The default is the adapter itself (implement ``PayoutSender`` on the
        same class); override to return a separate object.
        """
        return cast("PayoutSender", self)

    def serves(self, coin: str) -> bool:
        return coin in self.coins

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.network}>"


# -- payout role -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PayoutOrder:
    """What to send: the core's payout, in the chain's terms."""

    payout_id: str
    coin: str
    destination: str
    amount: int  # base units


@dataclass(frozen=True)
class SignedPayout:
    """A signed transaction ready to broadcast. The core stores it before
    broadcasting and only ever re-broadcasts these exact bytes after a
    crash, so inputs and nonces are never spent twice.
    """

    tx_hash: str
    raw: str  # hex (or the chain's own text form)
    network_fee: int = 0  # base units the platform pays on top of the amount
    # Public fields shown with the payout (a Lightning payout's ``lightning`` block); stored with it.
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PayoutStatus:
    """Where a broadcast transaction stands on the best chain.

    ``confirmations`` is 0 while it waits in the mempool; ``found`` is False
    when the node knows nothing of it (dropped or never arrived); ``failed``
    is True when it was mined but reverted (account chains). ``network_fee``
    is the fee actually paid once mined (account chains charge gas used, not
    the signed ceiling); None means the signed ``network_fee`` stands.
    """

    found: bool
    confirmations: int = 0
    failed: bool = False
    network_fee: int | None = None  # the fee actually paid, once mined, when the chain tells
    # Public fields learned at the end (a Lightning preimage), merged into the stored ``details``.
    details: Mapping[str, Any] = field(default_factory=dict)
    failure_reason: str | None = None  # why it ``failed``, when the chain says better than "reverted"
    # The version that was mined when it is not the stored one (a fee replacement: BIP 125, or an EVM re-signing
    # at the same nonce): its hash and bytes become the payout's when it ends, so the merchant sees what paid.
    mined: "SignedPayout | None" = None


@dataclass(frozen=True)
class DropClosure:
    """The answer of ``PayoutSender.close_dropped``: may the dropped payout be re-credited now?

    ``closed`` is True only when no transaction of the payout can confirm any
    more (a transaction of ours spending its inputs, or taking its nonce, is
    ``payout_confirmations`` deep; or the chain expires it by protocol).
    ``network_fee`` is what that closing transaction paid (booked as a network
    fee with the re-credit); ``detail`` says what is awaited while not closed.
    """

    closed: bool
    network_fee: int = 0
    detail: str | None = None


class BroadcastError(RuntimeError):
    """The node refused the transaction. ``permanent`` refusals fail the payout
    at once (bad signature, insufficient funds); others are retried."""

    def __init__(self, message: str, *, permanent: bool = False, reason: str | None = None) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.reason = reason  # the payout's failure_reason when permanent (else "broadcast_rejected: ...")


class FeeAboveCeiling(BroadcastError):
    """The network fee now is above the operator's ceiling for the chain: the payout waits, never fails.

    Raised by ``sign_payout`` before anything is signed or reserved; the
    worker keeps the payout queued with ``last_error`` "waiting: <message>"
    and no attempt counted, and tries again later. ``rate`` and ``ceiling``
    are in ``unit`` (sat/vB, gwei), as the operator's setting is written.
    """

    def __init__(self, rate: str, ceiling: str, unit: str) -> None:
        super().__init__(f"fee {rate} {unit} above the ceiling {ceiling}", permanent=False)  # "fee ": fee_waits.py
        self.rate, self.ceiling, self.unit = rate, ceiling, unit


class HotWalletShort(BroadcastError):
    """The hot wallet cannot pay this now, though it may once funded (change confirming, a deposit, a top-up).

    Why its own kind: the payout waits queued with the reason in ``last_error``
    and no attempt counted (like a custody pause), instead of backing off until
    it times out and fails while the merchant's money is there in the books.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=False)


class PayoutSender(ABC):
    """The payout-signing role of a chain adapter (implement it on the same
    class as ``ChainAdapter`` or on its own). ``payout_confirmations`` is how
    deep a payout must be before it counts as Confirmed. ``batch_window_seconds``
    (``Capability.BATCH_PAYOUTS`` chains; 0: off) is how long a payout waits
    queued after its request for others of its coin to share its transaction
    (the operator's setting: latency traded for fees).
    """

    payout_confirmations: int = 1
    batch_window_seconds: int = 0

    async def check_payout(self, order: PayoutOrder) -> None:  # noqa: B027 - optional: most chains check nothing more
        """Refuse a payout before any money is reserved, beyond the address family's syntax check.

        Called by the request (``order.payout_id`` is empty) outside any
        database transaction; may ask the node or the network (a Lightning
        invoice's expiry and amount, a Lightning Address's limits). Raise
        ``orbchain.core.types.errors.InvalidRequest`` (400) with a ``code``; return
        None to accept.
        """

    async def close_dropped(self, payout_id: str, signed: SignedPayout) -> DropClosure:
        """Close a payout missing from the node for ``drop_after_seconds``, so it can never be paid twice.

        Called by the worker at every poll past the drop timeout (never inside
        a database transaction) until it answers ``closed=True``; only then is
        the merchant re-credited. A chain whose transactions can be mined later
        (anyone may re-broadcast the bytes) must make them unminable first: a
        transaction of ours spending the same inputs (UTXO) or the same nonce
        (accounts), stored before it is broadcast, answered ``closed`` once it
        is ``payout_confirmations`` deep. The default is for chains whose
        transactions expire by protocol (Tron's expiration, Solana's blockhash),
        where the drop timeout outlasts the expiry: closed at once.
        """
        return DropClosure(closed=True)

    async def bump_stuck(self, payout_id: str, signed: SignedPayout) -> str | None:
        """Speed up a payout still waiting unconfirmed (in the node's mempool) at this poll.

        Called by the worker, outside any database transaction, each time
        ``payout_status`` answers found with 0 confirmations, and when it is
        missing and the node refuses its bytes back (a node that evicts what a
        fee spike priced out, rather than keeping it); the sender decides
        whether it waited long enough and how (a child paying for its parent, a
        replacement), has the bump's extra fee judged by the signer's caps
        (``authorize_fee_bump``), stores what it signs before broadcasting it,
        and reports the fee of the bump in ``PayoutStatus.network_fee`` once
        mined (the fee paid in total, so the booked fee is the fee paid; a
        replacement that was mined in ``PayoutStatus.mined``). Returns why a
        stuck payout cannot be bumped now (kept in the payout's ``last_error``
        while it waits), or None. Default: nothing.
        """
        return None

    @abstractmethod
    async def sign_payout(self, order: PayoutOrder) -> SignedPayout:
        """Build and sign a transaction for ``order`` from the hot wallet.

        Must not broadcast. Called once per payout; the result is stored.
        Raise ``FeeAboveCeiling`` (before reserving anything) when the fee
        now is above the operator's ceiling: the payout waits and this is
        called again later.
        """

    async def sign_batch(self, orders: Sequence[PayoutOrder]) -> SignedPayout:
        """Build and sign ONE transaction paying every order (``Capability.BATCH_PAYOUTS``), in their order.

        Like ``sign_payout`` (never broadcasts; ``FeeAboveCeiling`` before
        reserving anything), for two or more orders of one coin; the inputs are
        reserved under ``orders[0].payout_id``. ``network_fee`` is the whole
        transaction's fee: the core books each item's share. Stored for every
        order in one database transaction, so no item is ever signed twice.
        """
        raise NotImplementedError(f"{type(self).__name__} does not declare Capability.BATCH_PAYOUTS")

    @abstractmethod
    async def broadcast(self, signed: SignedPayout) -> None:
        """Send the stored transaction; sending it again must be harmless."""

    async def signed_for(self, payout_id: str, tx_hash: str) -> bool | None:
        """Whether this sender's own signing records say ``tx_hash`` was signed for payout ``payout_id``.

        Asked by the worker (outside any database transaction) before a payout
        found deep enough becomes Confirmed, for its ``tx_hash`` and a mined
        replacement's: a row written into the database by hand that names the
        transaction of another, real payout must not confirm on it. False holds
        the payout (``core/payouts/confirm_gate.py``); None (the default) means
        the sender keeps no such record and the row's word is taken.
        """
        return None

    @abstractmethod
    async def payout_status(self, signed: SignedPayout) -> PayoutStatus:
        """Where the transaction stands now."""


# -- declaration check -------------------------------------------------------------------------


def check_capabilities(adapter: ChainAdapter) -> None:
    """Refuse (``ValueError`` naming the adapter) a declaration the adapter does not back.

    Called once per adapter while the gateway is built, so a wrong declaration
    stops the start instead of failing the first payout.
    """
    declared = adapter.capabilities
    if not isinstance(declared, frozenset) or not all(isinstance(c, Capability) for c in declared):
        raise ValueError(f"chain adapter {adapter.name!r}: capabilities must be a frozenset of Capability,"
                         f" not {declared!r}")
    if adapter.supports(Capability.PAYOUTS) and not isinstance(adapter.payout_role(), PayoutSender):
        raise ValueError(f"chain adapter {adapter.name!r} declares PAYOUTS but payout_role() is not a PayoutSender")
    if adapter.supports(Capability.BATCH_PAYOUTS) and (
            not adapter.supports(Capability.PAYOUTS)
            or type(adapter.payout_role()).sign_batch is PayoutSender.sign_batch):
        raise ValueError(f"chain adapter {adapter.name!r} declares BATCH_PAYOUTS without a sign_batch")
    if adapter.supports(Capability.INSTANT_PAYOUTS) and not adapter.supports(Capability.PAYOUTS):
        raise ValueError(f"chain adapter {adapter.name!r} declares INSTANT_PAYOUTS without PAYOUTS")
    if adapter.supports(Capability.SIGNER_SENDS) and not adapter.supports(Capability.REMOTE_SIGNING):
        raise ValueError(f"chain adapter {adapter.name!r} declares SIGNER_SENDS without REMOTE_SIGNING")
    if adapter.supports(Capability.MEMPOOL) and type(adapter).mempool is ChainAdapter.mempool:
        raise ValueError(f"chain adapter {adapter.name!r} declares MEMPOOL but does not implement mempool()")
    if adapter.supports(Capability.PUSH) and type(adapter).push is ChainAdapter.push:
        raise ValueError(f"chain adapter {adapter.name!r} declares Capability.PUSH but does not implement push()")
    if (adapter.node_networks or adapter.node_geneses) and type(adapter).node_identity is ChainAdapter.node_identity:
        raise ValueError(f"chain adapter {adapter.name!r} expects node networks but does not implement node_identity()")
    if adapter.supports(Capability.CUSTODY) and type(adapter).custody_holdings is ChainAdapter.custody_holdings:
        raise ValueError(f"chain adapter {adapter.name!r} declares CUSTODY but does not implement custody_holdings()")
    if adapter.supports(Capability.HISTORY) and type(adapter).address_history is ChainAdapter.address_history:
        raise ValueError(f"chain adapter {adapter.name!r} declares HISTORY but does not implement address_history()")
