"""Core services for deposit addresses: where one was derived, and a merchant's receive addresses.

Why its own module: a chain plugin signing for an address needs its key's place in the seed, and
front-ends (dashboard, the messaging mini-app) and venues need standing or fresh receive addresses.

Records, never rows: plugins reach these through ``orbchain.api`` (docs/plugins.md, "Core services").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from ..accounts import merchants as accounts
from ..addresses import store as addresses
from ..payments import service as payments
from ..types.errors import InvalidRequest
from ..infra.maintenance import refuse_in_maintenance
from ..payments.receive import receive_unsupported_code, require_receive_address

from ..contract.gateway import PluginGateway as Gateway

if TYPE_CHECKING:  # pragma: no cover
    from ..money.coins import Coin


class AddressKey(NamedTuple):
    """Where one of the gateway's deposit addresses comes from in the seed."""

    address: str
    family: str
    network: str
    merchant_id: str
    key_account: int
    key_index: int


async def address_key(gateway: "Gateway", address: str, family: str) -> AddressKey | None:
    """Where the deposit address ``address`` of ``family`` was derived, or None when it is not ours."""
    row = await gateway.db.fetch_one(
        "SELECT a.address, a.family, a.network, a.merchant_id, a.key_index, m.key_account FROM deposit_addresses a"
        " JOIN merchants m ON m.id = a.merchant_id WHERE a.address = :a AND a.family = :f",
        {"a": address, "f": family})
    if row is None:
        return None
    return AddressKey(row["address"], row["family"], row["network"], row["merchant_id"], int(row["key_account"]),
                      int(row["key_index"]))


class AddressAccount(NamedTuple):
    """A merchant's HD account, under which its deposit addresses are derived (``m/44'/coin'/key_account'/...``)."""

    merchant_id: str
    key_account: int


async def address_accounts(gateway: "Gateway") -> list[AddressAccount]:
    """Every enabled merchant's HD account, oldest first.

    For a plugin that pre-derives deposit addresses where the web process cannot (a hardened-only family such
    as Solana's, whose addresses no xpub yields): the signer derives them ahead, under each account.
    """
    rows = await gateway.db.fetch_all("SELECT id, key_account FROM merchants WHERE enabled ORDER BY created_at, id")
    return [AddressAccount(row["id"], int(row["key_account"])) for row in rows]


def address_counter(merchant_id: str, family: str, network: str) -> str:
    """The named counter (``orbchain.api.addresses.next_counter``) of one merchant's address indexes in a family:
    the one the core derives from, so an index a plugin takes from it is never handed out twice."""
    return addresses.counter_name(merchant_id, family, network)


class ReceiveAddress(NamedTuple):
    """A merchant's standing address for one coin (stable, no TTL; SPEC 4.7 receive-address)."""

    coin: str
    address: str


def has_standing_address(gateway: "Gateway", symbol: str) -> bool:
    """Whether the gateway derives standing addresses for ``symbol`` (its family is derivable here)."""
    coin = gateway.coins.require(symbol)
    return addresses.family_of(gateway, coin, payments.chain_for(gateway, symbol).network).derivable


async def receive_address(gateway: "Gateway", merchant_id: str, symbol: str) -> ReceiveAddress:
    """The merchant's standing address for ``symbol``, derived once and then the same.

    Raises 400 ``missing_coin`` (empty symbol), ``xmr_receive_unsupported``
    (a coin without a receive address; the code names the coin),
    ``coin_not_accepted``; 503 when no chain serves the coin.
    """
    merchant = await accounts.require_merchant(gateway.db, merchant_id)
    symbol = (symbol or "").strip().upper()
    if not symbol:
        raise InvalidRequest("coin is required", code="missing_coin")
    coin = gateway.coins.get(symbol)
    if coin is not None:
        require_receive_address(coin)
    if symbol not in payments.merchant_coins(merchant):
        raise InvalidRequest("coin is not accepted by this account", code="coin_not_accepted")
    coin = payments.receivable_coin(gateway, merchant, symbol, field="coin")
    if not has_standing_address(gateway, symbol):
        raise InvalidRequest(f"{symbol} has no standing receive address", code=receive_unsupported_code(coin))
    return ReceiveAddress(symbol, await standing_address(gateway, merchant, coin))


async def standing_address(gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin") -> str:
    """The merchant's standing address of ``coin`` (a merchant row): read once derived.

    Deriving the first one is a write that a GET reaches, so it is refused
    in maintenance mode (503, nothing written); one derived before is
    still answered then (docs/decisions.md, "GETs that write").
    """
    network = payments.chain_for(gateway, coin.symbol).network
    found = await addresses.find_standing(gateway, merchant, coin, network)
    if found is None:
        refuse_in_maintenance(gateway)
        found = await addresses.standing_address(gateway, merchant, coin, network)
    return found


async def fresh_receive_address(gateway: "Gateway", merchant_id: str, symbol: str) -> ReceiveAddress:
    """A never-used address of the merchant for ``symbol``, derived and recorded now (watched by the scanner).

    For a plugin that has money sent to the merchant on the payer's behalf
    (a venue's payout of a converted payment): a fresh address, so what
    arrives there is told apart from anything else. 400/503 as
    :func:`receive_address`.
    """
    merchant = await accounts.require_merchant(gateway.db, merchant_id)
    coin = payments.receivable_coin(gateway, merchant, (symbol or "").strip().upper(), field="coin")
    require_receive_address(coin)
    address = await addresses.fresh_address(gateway, merchant, coin, payments.chain_for(gateway, coin.symbol).network)
    return ReceiveAddress(coin.symbol, address)
