"""Solana JSON-RPC over HTTP (any RPC node or hosted provider).

Why not a client library: the gateway calls a dozen methods and needs its
own timeouts, an optional auth header for hosted providers and exact
integers (``parse_float=Decimal``: lamports are integers, and nothing is
ever rounded). Transport failures raise ``ChainUnavailable`` (retried
later); a JSON-RPC error object raises :class:`RpcError` with the node's
code, message and data, for callers that must tell "skipped slot" or
"already processed" from an outage.
"""

from __future__ import annotations

import itertools
import json
from decimal import Decimal
from typing import Any, Mapping

import httpx

from ...api import ChainUnavailable
from ..jsonrpc import JsonRpcError, rpc_result

# Solana RPC error codes (agave rpc-client-api custom_error.rs).
NODE_UNHEALTHY = -32005  # getHealth: "Node is behind by N slots" (or unhealthy otherwise)
BLOCK_CLEANED_UP = -32001  # "Block N cleaned up, does not exist on node. First available block: M"
SLOT_SKIPPED = -32007  # "Slot N was skipped, or missing due to ledger jump to recent snapshot"
LONG_TERM_STORAGE_SLOT_SKIPPED = -32009  # "Slot N was skipped, or missing in long-term storage"
BLOCK_NOT_AVAILABLE = -32004
SEND_TRANSACTION_PREFLIGHT_FAILURE = -32002


class RpcError(JsonRpcError):
    """The node answered with a JSON-RPC error object."""

    @property
    def skipped_slot(self) -> bool:
        """Skipped *or missing*: the node uses these codes for both (getFirstAvailableBlock tells them apart)."""
        return self.code in (SLOT_SKIPPED, LONG_TERM_STORAGE_SLOT_SKIPPED)

    @property
    def transaction_error(self) -> Any:
        """The runtime's TransactionError of a failed preflight (``"BlockhashNotFound"``, a dict ...)."""
        return self.data.get("err") if isinstance(self.data, dict) else None


class SolanaRpc:
    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 10.0,
                 client: httpx.AsyncClient | None = None) -> None:
        self.url = url
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        self._client = client or httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)))
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        return "<SolanaRpc (endpoint hidden)>"  # provider URLs and headers carry API keys

    async def close(self) -> None:
        await self._client.aclose()

    async def call(self, method: str, *params: Any) -> Any:
        request = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": list(params)}
        try:
            response = await self._client.post(self.url, content=json.dumps(request), headers=self._headers)
        except httpx.HTTPError as exc:
            raise ChainUnavailable(f"Solana RPC unreachable: {type(exc).__name__}") from None
        if response.status_code in (401, 403):
            raise ChainUnavailable(f"Solana RPC refused the credentials (HTTP {response.status_code})")
        if response.status_code >= 500 or response.status_code == 429:
            raise ChainUnavailable(f"Solana RPC answered HTTP {response.status_code}")
        try:
            answer = json.loads(response.content, parse_float=Decimal)
        except ValueError:
            raise ChainUnavailable(f"Solana RPC answered non-JSON (HTTP {response.status_code})") from None
        return rpc_result(method, answer, RpcError)

    async def value(self, method: str, *params: Any) -> Any:
        """The ``value`` of an answer wrapped in ``{"context": ..., "value": ...}``."""
        result = await self.call(method, *params)
        if not isinstance(result, dict) or "value" not in result:
            raise ChainUnavailable(f"{method}: answer without a value")
        return result["value"]


def lamports(value: Any) -> int:
    """An integer the node sent (a balance, a fee, a slot); refuses anything else."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ChainUnavailable(f"Solana RPC sent {value!r} where a non-negative integer belongs")
    return value
