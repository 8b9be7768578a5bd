"""Tron's cost model: bandwidth, energy and account activation, priced from the chain's own parameters.

What a transaction burns (java-tron's BandwidthProcessor and EnergyProcessor):

* bandwidth: the serialized transaction plus 64 bytes per contract result.
  Staked bandwidth pays it when it covers the whole size, else the daily
  free bandwidth (``getFreeNetLimit``, 600 on mainnet) when it does, else
  ``size x getTransactionFee`` sun are burned from the balance.
* a TRX transfer to an account that does not exist yet creates it: the
  sender pays ``getCreateNewAccountFeeInSystemContract`` (1 TRX) and, instead
  of bandwidth, ``getCreateAccountFee`` (0.1 TRX). That is the activation
  cost; receiving TRC-20 tokens never creates an account.
* energy of a contract call: staked energy first, the rest burned at
  ``getEnergyFee`` sun per unit, never more than the transaction's
  ``fee_limit`` nor than the balance allows (else it fails OUT_OF_ENERGY
  and the fee is lost). The energy a call needs comes from the node itself
  (``wallet/triggerconstantcontract`` runs it without committing).

Prices are read from ``wallet/getchainparameters`` each time they are
needed: they change by committee vote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...api import BroadcastError, ChainUnavailable
from ..evm.tokens import balance_of_calldata, decode_uint, transfer_calldata
from .address import address_bytes
from .http import NodeError, TronHttp, integer

TRANSFER_SELECTOR = "transfer(address,uint256)"
BALANCE_OF_SELECTOR = "balanceOf(address)"


@dataclass(frozen=True)
class ChainParameters:
    transaction_fee: int  # sun per bandwidth byte
    energy_fee: int  # sun per energy unit
    create_account_fee: int  # sun, burned instead of bandwidth by a transfer that creates an account
    create_new_account_fee: int  # sun, the system contract's fee for creating an account
    free_net_limit: int  # free bandwidth bytes per account per day

    @property
    def activation_fee(self) -> int:
        """What a TRX transfer to a new account costs its sender beyond the amount."""
        return self.create_new_account_fee + self.create_account_fee


@dataclass(frozen=True)
class AccountState:
    """One account's TRX and the resources it can spend now."""

    exists: bool
    balance: int
    free_net: int  # free bandwidth left today
    staked_net: int  # staked bandwidth left
    staked_energy: int

    def bandwidth_burn(self, size: int, params: ChainParameters) -> int:
        """Sun burned for ``size`` bandwidth bytes: nothing if staked or free bandwidth covers it whole."""
        if size <= self.staked_net or size <= self.free_net:
            return 0
        return size * params.transaction_fee

    def energy_burn(self, energy: int, params: ChainParameters) -> int:
        return max(0, energy - self.staked_energy) * params.energy_fee


_PARAMETERS = {
    "getTransactionFee": "transaction_fee", "getEnergyFee": "energy_fee", "getCreateAccountFee": "create_account_fee",
    "getCreateNewAccountFeeInSystemContract": "create_new_account_fee", "getFreeNetLimit": "free_net_limit",
}


async def chain_parameters(http: TronHttp) -> ChainParameters:
    answer = await http.call("wallet/getchainparameters")
    found: dict[str, int] = {}
    for entry in (answer or {}).get("chainParameter") or []:
        name = _PARAMETERS.get(entry.get("key"))
        if name is not None:
            found[name] = integer(entry.get("value"))
    missing = sorted(set(_PARAMETERS.values()) - set(found))
    if missing:
        raise ChainUnavailable(f"getchainparameters lacks {', '.join(missing)}")
    return ChainParameters(**found)


async def account_state(http: TronHttp, address: str, params: ChainParameters) -> AccountState:
    hex_address = address_bytes(address).hex()
    account = await http.call("wallet/getaccount", {"address": hex_address, "visible": False})
    if not account:
        # A new account gets its free bandwidth once created (the top-up that activates it).
        return AccountState(False, 0, params.free_net_limit, 0, 0)
    resources = await http.call("wallet/getaccountresource", {"address": hex_address, "visible": False})
    free = integer(resources.get("freeNetLimit")) - integer(resources.get("freeNetUsed"))
    staked = integer(resources.get("NetLimit")) - integer(resources.get("NetUsed"))
    energy = integer(resources.get("EnergyLimit")) - integer(resources.get("EnergyUsed"))
    return AccountState(True, integer(account.get("balance")), max(0, free), max(0, staked), max(0, energy))


def _parameter(calldata: str) -> str:
    return calldata[2 + 8:]  # the ABI words after the 4-byte selector


def _evm_hex(address: str) -> str:
    return "0x" + address_bytes(address)[1:].hex()


async def _constant_call(http: TronHttp, owner: str, contract: str, selector: str, parameter: str) -> Mapping[str, Any]:
    try:
        answer = await http.call("wallet/triggerconstantcontract", {
            "owner_address": address_bytes(owner).hex(), "contract_address": address_bytes(contract).hex(),
            "function_selector": selector, "parameter": parameter, "visible": False})
    except NodeError as exc:
        raise BroadcastError(f"contract call refused: {exc.message}", permanent=False) from None
    result = answer.get("result") or {}
    if not result.get("result") or answer.get("transaction", {}).get("ret", [{}])[0].get("ret") == "FAILED":
        raise BroadcastError(f"contract call would fail: {result.get('message', 'reverted')}", permanent=False)
    return answer


async def transfer_energy(http: TronHttp, owner: str, contract: str, to: str, amount: int) -> int:
    """Energy ``owner`` would spend on ``transfer(to, amount)`` now; BroadcastError if it would fail."""
    answer = await _constant_call(http, owner, contract, TRANSFER_SELECTOR,
                                  _parameter(transfer_calldata(_evm_hex(to), amount)))
    return integer(answer.get("energy_used"))


async def token_balance(http: TronHttp, contract: str, owner: str) -> int:
    answer = await _constant_call(http, owner, contract, BALANCE_OF_SELECTOR,
                                  _parameter(balance_of_calldata(_evm_hex(owner))))
    results = answer.get("constant_result") or []
    try:
        return decode_uint("0x" + str(results[0]))
    except (IndexError, ValueError):
        raise ChainUnavailable(f"balanceOf answered {results!r}") from None


def transfer_data(to: str, amount: int) -> bytes:
    """``transfer(to, amount)`` calldata with the Tron recipient as a 20-byte ABI address."""
    return bytes.fromhex(transfer_calldata(_evm_hex(to), amount)[2:])
