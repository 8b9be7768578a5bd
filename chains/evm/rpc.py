"""Standard Ethereum JSON-RPC over HTTP (any node: geth, erigon, bsc, bor, anvil).

Why httpx and not web3.py: the gateway needs a dozen methods, exact numbers
and its own timeouts; a small client keeps every call visible. Responses are
parsed with ``parse_float=Decimal`` (a node never sends a float, but if one
did, it must not be rounded) and hex quantities become Python ints.

Transport failures and non-JSON answers raise ``ChainUnavailable`` (the scan
or job retries later); a JSON-RPC error object raises :class:`RpcError` with
the node's code and message, for callers that must tell "already known"
from "insufficient funds".
"""

from __future__ import annotations

import itertools
import json
from decimal import Decimal
from typing import Any, Sequence

import httpx

from ...api import ChainUnavailable
from ..jsonrpc import JsonRpcError, rpc_result


class RpcError(JsonRpcError):
    """The node answered with a JSON-RPC error object."""


def quantity(value: Any) -> int:
    """A JSON-RPC QUANTITY (``"0x1a"``) as an int; refuses anything else."""
    if not isinstance(value, str) or not value.startswith("0x") or len(value) < 3:
        raise ChainUnavailable(f"node sent {value!r} where a hex quantity belongs")
    try:
        return int(value, 16)
    except ValueError:
        raise ChainUnavailable(f"node sent {value!r} where a hex quantity belongs") from None


def hex_quantity(value: int) -> str:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"not a quantity: {value!r}")
    return hex(value)


class JsonRpc:
    """One node endpoint. ``call`` one method, ``batch`` several in one request."""

    def __init__(self, url: str, *, timeout: float = 10.0, client: httpx.AsyncClient | None = None) -> None:
        self.url = url
        self._client = client or httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)))
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        return "<JsonRpc (endpoint hidden)>"  # provider URLs often embed an API key

    async def close(self) -> None:
        await self._client.aclose()

    async def _post(self, payload: Any) -> Any:
        try:
            response = await self._client.post(self.url, content=json.dumps(payload),
                                               headers={"Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            raise ChainUnavailable(f"EVM node unreachable: {type(exc).__name__}") from None
        if response.status_code >= 500 or response.status_code == 429:
            raise ChainUnavailable(f"EVM node answered HTTP {response.status_code}")
        try:
            return json.loads(response.content, parse_float=Decimal)
        except ValueError:
            raise ChainUnavailable(f"EVM node answered non-JSON (HTTP {response.status_code})") from None

    @staticmethod
    def _result(method: str, answer: Any) -> Any:
        return rpc_result(method, answer, RpcError)

    async def call(self, method: str, *params: Any) -> Any:
        request = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": list(params)}
        return self._result(method, await self._post(request))

    async def batch(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
        """Several calls in one HTTP request; results in the order of ``calls``.

        A JSON-RPC error in any of them raises :class:`RpcError`.
        """
        if not calls:
            return []
        first = next(self._ids)
        requests = [{"jsonrpc": "2.0", "id": first + i, "method": m, "params": list(p)}
                    for i, (m, p) in enumerate(calls)]
        self._ids = itertools.count(first + len(calls))
        answers = await self._post(requests)
        if not isinstance(answers, list):
            # Some providers refuse batches with one error object: fall back to single calls.
            return [await self.call(m, *p) for m, p in calls]
        by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
        return [self._result(m, by_id.get(first + i)) for i, (m, _) in enumerate(calls)]
