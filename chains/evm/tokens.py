"""ERC-20 (and BEP-20, Polygon) tokens: the Transfer event and transfer calldata.

Only the standard ``Transfer(address indexed from, address indexed to,
uint256 value)`` event counts: three topics and a 32-byte data word. A log
shaped otherwise (ERC-721 puts the value in a fourth topic) is not a token
deposit. Addresses come back EIP-55 checksummed, the form the address table
stores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from eth_utils import keccak, to_checksum_address

TRANSFER_TOPIC = "0x" + keccak(text="Transfer(address,address,uint256)").hex()
TRANSFER_SELECTOR = keccak(text="transfer(address,uint256)")[:4].hex()
BALANCE_OF_SELECTOR = keccak(text="balanceOf(address)")[:4].hex()
_WORD = 64  # hex digits in a 32-byte ABI word
_UINT256_MAX = 2**256 - 1


@dataclass(frozen=True)
class TokenTransfer:
    """One decoded Transfer log."""

    contract: str  # lower-case hex, as the node reports it
    tx_hash: str
    log_index: int
    sender: str
    recipient: str
    value: int


def _address_topic(topic: Any) -> str | None:
    if not isinstance(topic, str) or len(topic) != 66 or not topic.startswith("0x"):
        return None
    if topic[2:26] != "0" * 24:  # an address topic is left-padded with zeros
        return None
    return to_checksum_address("0x" + topic[26:])


def decode_transfer(log: Mapping[str, Any]) -> TokenTransfer | None:
    """The Transfer in ``log`` (an ``eth_getLogs`` entry), or None if it is not one."""
    topics = log.get("topics") or []
    data = log.get("data")
    if len(topics) != 3 or not isinstance(topics[0], str) or topics[0].lower() != TRANSFER_TOPIC:
        return None
    if log.get("removed"):
        return None
    if not isinstance(data, str) or not data.startswith("0x") or len(data) != 2 + _WORD:
        return None
    sender, recipient = _address_topic(topics[1]), _address_topic(topics[2])
    if sender is None or recipient is None:
        return None
    try:
        value = int(data[2:], 16)
        log_index = int(log["logIndex"], 16)
    except (KeyError, TypeError, ValueError):
        return None
    return TokenTransfer(str(log.get("address", "")).lower(), str(log["transactionHash"]).lower(), log_index,
                         sender, recipient, value)


def _address_word(address: str) -> str:
    body = address[2:] if address.startswith("0x") else address
    if len(body) != 40:
        raise ValueError("an address is 20 bytes")
    return body.lower().rjust(_WORD, "0")


def transfer_calldata(to: str, amount: int) -> str:
    """``transfer(to, amount)`` calldata, hex with 0x."""
    if not isinstance(amount, int) or isinstance(amount, bool) or not 0 <= amount <= _UINT256_MAX:
        raise ValueError("token amount must be a uint256")
    return "0x" + TRANSFER_SELECTOR + _address_word(to) + format(amount, "064x")


def balance_of_calldata(owner: str) -> str:
    """``balanceOf(owner)`` calldata for ``eth_call``."""
    return "0x" + BALANCE_OF_SELECTOR + _address_word(owner)


def decode_uint(result: Any) -> int:
    """A single uint256 ``eth_call`` result."""
    if not isinstance(result, str) or not result.startswith("0x") or len(result) != 2 + _WORD:
        raise ValueError(f"not a uint256 word: {result!r}")
    return int(result[2:], 16)
