"""The full node's HTTP API (java-tron ``/wallet/*``), with a hosted provider's API key.

Why httpx and not tronpy: the gateway uses a dozen endpoints, needs exact
integers and its own timeouts, and must build and sign transactions itself
(``transactions.py``); a small client keeps every call visible. Every
endpoint is a POST of a JSON object; answers are parsed with
``parse_float=Decimal`` so a number is never rounded.

Transport failures, HTTP 5xx/429 and non-JSON answers raise
``ChainUnavailable`` (the scan or job retries later). java-tron reports a
refused request as ``{"Error": "..."}`` with HTTP 200: that raises
:class:`NodeError`.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Mapping

import httpx

from ...api import ChainUnavailable

API_KEY_HEADER = "TRON-PRO-API-KEY"


class NodeError(RuntimeError):
    """The node answered with an ``Error`` object."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path, self.message = path, message


class TronHttp:
    """One full node (or provider) endpoint; ``call("wallet/getnowblock")``."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 10.0,
                 client: httpx.AsyncClient | None = None) -> None:
        self.url = url.rstrip("/")
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers[API_KEY_HEADER] = api_key
        self._headers = headers
        self._client = client or httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)))

    def __repr__(self) -> str:
        return "<TronHttp (endpoint hidden)>"  # provider URLs and keys are secrets

    async def close(self) -> None:
        await self._client.aclose()

    async def call(self, path: str, body: Mapping[str, Any] | None = None) -> Any:
        try:
            response = await self._client.post(f"{self.url}/{path}", content=json.dumps(body or {}),
                                               headers=self._headers)
        except httpx.HTTPError as exc:
            raise ChainUnavailable(f"Tron node unreachable: {type(exc).__name__}") from None
        if response.status_code >= 500 or response.status_code == 429:
            raise ChainUnavailable(f"Tron node answered HTTP {response.status_code}")
        if response.status_code in (401, 403):
            raise ChainUnavailable(f"Tron node refused the request (HTTP {response.status_code}): check api_key")
        try:
            answer = json.loads(response.content, parse_float=Decimal) if response.content.strip() else {}
        except ValueError:
            raise ChainUnavailable(f"Tron node answered non-JSON (HTTP {response.status_code})") from None
        if isinstance(answer, dict) and "Error" in answer:
            raise NodeError(path, str(answer["Error"]))
        if response.status_code >= 400:
            raise ChainUnavailable(f"Tron node answered HTTP {response.status_code}")
        return answer


def integer(value: Any, default: int = 0) -> int:
    """A JSON integer the node sent (java-tron omits zero fields, hence the default)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)) or int(value) != value:
        raise ChainUnavailable(f"node sent {value!r} where an integer belongs")
    return int(value)
