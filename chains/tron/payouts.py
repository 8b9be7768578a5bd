"""The payout role on Tron: TRX and TRC-20 transfers from the hot wallet.

TRX is a ``TransferContract``; a token is ``TriggerSmartContract`` calling
``transfer(to, amount)`` on the pinned contract with ``fee_limit`` set to the
configured ceiling (``fee_limit_sun``). The signed transaction is stored in
``tron_txs`` under the payout id (kind ``payout``), so a second
``sign_payout`` for the same payout returns the same bytes.

``network_fee`` at signing is the most the hot wallet can burn: bandwidth
billed in sun (as if no free or staked bandwidth were left), plus the
activation cost when a TRX payout goes to an account that does not exist
yet, plus ``fee_limit`` for a token. Once mined, ``payout_status`` reports
what the node says was burned (``fee`` of ``gettransactioninfobyid``),
activation included; the core books that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ...api import BroadcastError, PayoutOrder, PayoutSender, PayoutStatus, SignedPayout
from .address import address_bytes
from .keys import hot_wallet_address, hot_wallet_key
from .resources import account_state, chain_parameters, transfer_data
from .transactions import transfer, trigger

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from .http import TronHttp
    from .settings import TronSettings
    from .signer import TxStore

PAYOUT = "payout"


class _TronAdapterParts(Protocol):
    """What the payout role uses of the ``TronAdapter`` it is mixed into."""

    name: str
    native: str
    network: str
    gateway: "Gateway"
    settings: "TronSettings"
    http: "TronHttp"
    txs: "TxStore"

    def token_contract(self, coin: str) -> str | None: ...


class TronPayouts(PayoutSender):
    """Mixed into ``TronAdapter``."""

    async def sign_payout(self: _TronAdapterParts, order: PayoutOrder) -> SignedPayout:
        if order.amount <= 0:
            raise BroadcastError("payout amount must be positive", permanent=True)
        existing = await self.txs.find(PAYOUT, order.payout_id)
        if existing is not None:
            return SignedPayout(existing.tx_id, existing.body, existing.fee_bound)
        hot = hot_wallet_address(self.gateway, self.network)
        params = await chain_parameters(self.http)
        block = await self.txs.ref_block()
        if order.coin == self.native:
            call = transfer(address_bytes(hot), address_bytes(order.destination), order.amount)
            fee_limit = 0
            destination = await account_state(self.http, order.destination, params)
            extra = 0 if destination.exists else params.activation_fee
        else:
            contract = self.token_contract(order.coin)
            if contract is None:
                raise BroadcastError(f"{order.coin} is not served on {self.name}", permanent=True)
            call = trigger(address_bytes(hot), address_bytes(contract), transfer_data(order.destination, order.amount))
            fee_limit = extra = self.settings.fee_limit_sun
        signed = self.txs.build(call, block, hot_wallet_key(self.gateway, self.network), fee_limit)
        fee_bound = signed.bandwidth * params.transaction_fee + extra
        stored = await self.txs.store(
            kind=PAYOUT, ref=order.payout_id, signed=signed, sender=hot, recipient=order.destination,
            coin=order.coin, amount=order.amount, fee_bound=fee_bound,
            expiration_ms=block.timestamp_ms + self.settings.expiration_seconds * 1000)
        return SignedPayout(stored.tx_id, stored.body, stored.fee_bound)

    async def broadcast(self: _TronAdapterParts, signed: SignedPayout) -> None:
        await self.txs.broadcast(signed.tx_hash, signed.raw)

    async def signed_for(self: _TronAdapterParts, payout_id: str, tx_hash: str) -> bool:
        """The one transaction stored for the payout (``tron_txs``, kind ``payout``) is ``tx_hash``."""
        stored = await self.txs.find(PAYOUT, payout_id)
        return stored is not None and stored.tx_id == tx_hash

    async def payout_status(self: _TronAdapterParts, signed: SignedPayout) -> PayoutStatus:
        status, mined = await self.txs.status(signed.tx_hash)
        if mined is not None:
            await self.txs.record_mined(signed.tx_hash, mined)
        return status
