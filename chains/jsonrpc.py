"""JSON-RPC 2.0 answers, read the same way by every chain plugin that speaks it.

Why shared: a node's answer is either a result, an error object, or
something malformed; telling these apart (and turning the malformed kinds
into ``ChainUnavailable``, so a bad node never looks like a rejected call)
is the protocol's, not one chain's. Each plugin subclasses the error to add
what its node's error codes mean.
"""

from __future__ import annotations

from typing import Any

from ..api import ChainUnavailable


class JsonRpcError(RuntimeError):
    """The node answered with a JSON-RPC error object."""

    def __init__(self, method: str, code: int | None, message: str, data: Any = None) -> None:
        super().__init__(f"{method}: {message} (code {code})")
        self.method, self.code, self.message, self.data = method, code, message, data


def rpc_result(method: str, answer: Any, error: type[JsonRpcError] = JsonRpcError) -> Any:
    """The ``result`` of one parsed answer; raises ``error`` for an error object."""
    if not isinstance(answer, dict):
        raise ChainUnavailable(f"{method}: malformed JSON-RPC answer")
    failure = answer.get("error")
    if failure is not None:
        if not isinstance(failure, dict):
            raise error(method, None, str(failure))
        raise error(method, failure.get("code"), str(failure.get("message", "")), failure.get("data"))
    if "result" not in answer:
        raise ChainUnavailable(f"{method}: JSON-RPC answer without result")
    return answer["result"]
