"""JSON-RPC 2.0 clients for monerod and monero-wallet-rpc (both speak it at ``/json_rpc``).

Why our own thin client: two small endpoints, digest auth when the operator
sets ``--rpc-login``, and amounts that are integers in piconero (parsed so a
fractional number can never slip in as a float). ``ChainUnavailable`` means
the service could not be asked (connection, timeout, non-JSON); ``MoneroRpcError``
is its own refusal with its code and message.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx

from ...api import ChainUnavailable


class MoneroRpcError(RuntimeError):
    """monerod or the wallet answered with an error object."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: error {code}: {message}")
        self.method, self.code, self.message = method, code, message


class MoneroRpc:
    """One endpoint (``http://host:port``). Safe to share between tasks; ``close`` once."""

    def __init__(self, url: str, *, user: str | None = None, password: str | None = None,
                 timeout: float = 60.0, what: str = "monero") -> None:
        self.url = url.rstrip("/")
        self.what = what
        auth = httpx.DigestAuth(user, password) if user is not None and password is not None else None
        self._client = httpx.AsyncClient(auth=auth, timeout=timeout)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        body = {"jsonrpc": "2.0", "id": "0", "method": method, "params": params or {}}
        answer = await self._post("/json_rpc", body, method)
        if answer.get("error"):
            error = answer["error"]
            raise MoneroRpcError(method, int(error.get("code", 0)), str(error.get("message", "")))
        return answer.get("result", {})

    async def other(self, path: str, body: dict[str, Any]) -> Any:
        """monerod's non-JSON-RPC endpoints (``/pop_blocks``, ``/get_transactions``)."""
        answer = await self._post(path, body, path)
        if answer.get("status") not in (None, "OK"):
            raise MoneroRpcError(path, 0, str(answer.get("status")))
        return answer

    async def _post(self, path: str, body: dict[str, Any], method: str) -> dict[str, Any]:
        try:
            response = await self._client.post(self.url + path, content=json.dumps(body),
                                               headers={"Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            raise ChainUnavailable(f"{self.what} {method}: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise ChainUnavailable(f"{self.what} {method}: HTTP {response.status_code}")
        try:
            answer = json.loads(response.content, parse_float=Decimal)
        except ValueError:
            raise ChainUnavailable(f"{self.what} {method}: the answer is not JSON") from None
        if not isinstance(answer, dict):
            raise ChainUnavailable(f"{self.what} {method}: the answer is not an object")
        return answer

    async def close(self) -> None:
        await self._client.aclose()


def piconero(value: Any) -> int:
    """An amount from an answer: a non-negative JSON integer, never a fraction."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ChainUnavailable(f"monero amount is not a whole number of piconero: {value!r}")
    return value
