"""A JSON-RPC client for Bitcoin Core and its forks (Litecoin Core, Dogecoin Core).

Why our own thin client: the node speaks plain JSON-RPC 1.0 over HTTP with
basic auth (a user/password pair or the ``.cookie`` file the node writes at
start-up), and amounts in its answers are JSON numbers in coin units. Every
answer is parsed with ``parse_float=Decimal`` so ``50.00000001`` stays exact;
``coin_units`` turns such a value into satoshis and refuses anything that is
not an exact Decimal.

Errors are split the way a caller needs them: ``RpcError`` is the node's own
refusal (it carries the node's code and message, e.g. -25 "missing inputs");
``ChainUnavailable`` (from the chain contract) means the node could not be
asked at all (connection refused, timeout, bad credentials, a non-JSON
answer), so a scan or a broadcast is simply retried later.
"""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from itertools import count
from pathlib import Path
from typing import Any, Sequence

import httpx

from ...api import AmountError, ChainUnavailable, node_name, to_base_units

log = logging.getLogger(__name__)

DECIMALS = 8  # BTC, LTC and DOGE all count in 1e-8 units
DEFAULT_TIMEOUT_SECONDS = 30.0

# Node error codes (Bitcoin Core src/rpc/protocol.h) that callers test for.
RPC_INVALID_ADDRESS_OR_KEY = -5  # e.g. "No such mempool or blockchain transaction"
RPC_INVALID_PARAMETER = -8  # e.g. "Block height out of range"
RPC_DESERIALIZATION_ERROR = -22  # the raw transaction does not decode
RPC_VERIFY_ERROR = -25  # transaction refused: missing or spent inputs
RPC_VERIFY_REJECTED = -26  # transaction refused by policy or consensus
RPC_VERIFY_ALREADY_IN_CHAIN = -27
RPC_IN_WARMUP = -28


class RpcError(RuntimeError):
    """The node answered with an error object."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: node error {code}: {message}")
        self.method = method
        self.code = code
        self.message = message


def coin_units(value: Any) -> int:
    """An exact coin-unit amount from a node answer (``Decimal('0.5')``) in satoshis."""
    if not isinstance(value, Decimal):
        # A float here would mean the answer was parsed without parse_float=Decimal.
        raise TypeError(f"node amounts must be parsed as Decimal, got {type(value).__name__}")
    try:
        return to_base_units(value, DECIMALS, allow_zero=True)
    except AmountError as exc:
        raise ChainUnavailable(f"node reported an amount that is not whole satoshis: {value}: {exc}") from None


def fee_rate_sat_per_kvb(value: Any) -> int:
    """A node fee rate in coin units per 1,000 virtual bytes, as satoshis per kvB."""
    return coin_units(value)


class NodeRpc:
    """One node's JSON-RPC endpoint. Safe to share between tasks."""

    def __init__(
        self,
        url: str,
        *,
        user: str | None = None,
        password: str | None = None,
        cookie_file: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        label: str = "node",
    ) -> None:
        self.url = url
        self.label = label
        self.name = node_name(url)  # for messages: no credentials
        self._user = user
        self._password = password
        self._cookie_file = cookie_file
        self._timeout = timeout
        self._ids = count(1)
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:  # no credentials
        return f"<NodeRpc {self.label} {self.name}>"

    def _auth(self) -> tuple[str, str] | None:
        if self._cookie_file:
            # The node rewrites the cookie at every start: read it each time we connect.
            try:
                text = Path(self._cookie_file).read_text().strip()
            except OSError as exc:
                raise ChainUnavailable(f"{self.label}: cannot read rpc_cookie_file: {exc.strerror}") from None
            user, _, password = text.partition(":")
            return user, password
        if self._user is not None:
            return self._user, self._password or ""
        return None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self._timeout), auth=self._auth())
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _send(self, body: bytes) -> httpx.Response:
        """One POST; a pooled connection the node closed as we reused it is retried once on a new one.

        The node drops an idle keep-alive connection after ``-rpcservertimeout``; a request written into it
        just as it closes gets no answer at all ("Server disconnected without sending a response"). Every
        method this client sends is safe to repeat (reads, and ``sendrawtransaction`` of the same bytes is
        answered "already known", which the sender takes as sent), so the one retry cannot double anything.
        """
        headers = {"Content-Type": "application/json"}
        try:
            return await self._http().post(self.url, content=body, headers=headers)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            log.debug("%s: %s dropped the connection (%s); asking again on a new one", self.label, self.name, exc)
            await self.close()
            return await self._http().post(self.url, content=body, headers=headers)

    async def _post(self, payload: Any) -> Any:
        body = json.dumps(payload).encode()
        try:
            response = await self._send(body)
        except httpx.TimeoutException:
            raise ChainUnavailable(f"{self.label}: no answer from {self.name} within {self._timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise ChainUnavailable(f"{self.label}: cannot reach {self.name}: {type(exc).__name__}: {exc}") from None
        if response.status_code in (401, 403):
            await self.close()  # a cookie may have been rotated: re-read it next time
            raise ChainUnavailable(f"{self.label}: the node refused our RPC credentials (HTTP {response.status_code})")
        try:
            return json.loads(response.content, parse_float=Decimal)
        except ValueError:
            raise ChainUnavailable(
                f"{self.label}: HTTP {response.status_code} from {self.name} is not JSON-RPC") from None

    def _result(self, method: str, answer: Any) -> Any:
        if not isinstance(answer, dict):
            raise ChainUnavailable(f"{self.label}: {method}: malformed JSON-RPC answer")
        error = answer.get("error")
        if error:
            code = error.get("code", 0) if isinstance(error, dict) else 0
            message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
            if code == RPC_IN_WARMUP:
                raise ChainUnavailable(f"{self.label}: node is starting: {message}")
            raise RpcError(method, int(code), str(message))
        return answer.get("result")

    async def call(self, method: str, *params: Any) -> Any:
        """One call; returns its result (Decimals for numbers with a fraction)."""
        answer = await self._post({"jsonrpc": "1.0", "id": next(self._ids), "method": method, "params": list(params)})
        return self._result(method, answer)

    async def batch(self, method: str, params_list: Sequence[Sequence[Any]]) -> list[Any]:
        """Many calls of one method in one HTTP request. Each item is its result or
        the ``RpcError`` the node answered for it (never raised)."""
        if not params_list:
            return []
        first = next(self._ids)
        payload = [{"jsonrpc": "1.0", "id": first + i, "method": method, "params": list(p)}
                   for i, p in enumerate(params_list)]
        for _ in range(len(params_list) - 1):
            next(self._ids)
        answers = await self._post(payload)
        if not isinstance(answers, list):
            # Old nodes answer a batch they cannot parse with a single error object.
            self._result(method, answers)
            raise ChainUnavailable(f"{self.label}: {method}: batch answer is not a list")
        by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
        results: list[Any] = []
        for i in range(len(params_list)):
            try:
                results.append(self._result(method, by_id.get(first + i)))
            except RpcError as exc:
                results.append(exc)
        return results
