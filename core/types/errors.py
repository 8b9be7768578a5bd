"""Errors the API answers with, in the envelope of SPEC section 7.

Service code raises these; the web layer's error middleware turns them into
``{"data": null, "message": ..., "error": {"type", "message", ...}}`` with the
matching HTTP status. ``code`` carries the spec's named codes (for example
``self_transfer_forbidden``) so clients can branch on a stable token while
``message`` stays human readable.
"""

from __future__ import annotations

from typing import Any, Mapping


class ApiError(Exception):
    """An error with an HTTP status, an error type, and optionally a named code."""

    status = 400
    type = "invalid_request"
    default_message = "bad request"

    def __init__(
        self,
        message: str | None = None,
        *,
        code: str | None = None,
        detail: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.code = code
        self.detail = dict(detail) if detail else None
        self.headers = dict(headers or {})
        super().__init__(self.message)

    def error_object(self) -> dict[str, Any]:
        body: dict[str, Any] = {"type": self.type, "message": self.message}
        if self.code:
            body["code"] = self.code
        if self.detail:
            body["detail"] = self.detail
        return body


class ValidationError(ApiError):
    """The body or query failed schema validation; ``detail`` maps field to problem."""

    type = "validation"

    def __init__(self, detail: Mapping[str, str], message: str | None = None, *, code: str | None = None) -> None:
        summary = "; ".join(f"{k}: {v}" for k, v in detail.items())
        super().__init__(message or f"validation error: {summary}", detail=detail, code=code)


class InvalidRequest(ApiError):
    """A well-formed request that the business rules refuse (400)."""


class Unauthorized(ApiError):
    """401. Code ``unauthorized`` (SPEC 7) unless the raiser names a more specific one (``ip_not_allowed``,
    ``totp_invalid``), so every 401 carries a stable token to branch on."""

    status = 401
    type = "authentication"
    default_message = "unauthorized"

    def __init__(self, message: str | None = None, *, code: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, code=code or "unauthorized", **kwargs)


class Forbidden(ApiError):
    status = 403
    type = "forbidden"
    default_message = "access denied"


class NotFound(ApiError):
    status = 404
    type = "not_found"
    default_message = "not found"


class Conflict(ApiError):
    status = 409
    type = "conflict"
    default_message = "conflict"


class Gone(ApiError):
    status = 410
    type = "gone"
    default_message = "gone"


class PayloadTooLarge(ApiError):
    status = 413
    type = "validation"
    default_message = "request body too large"


class RateLimited(ApiError):
    status = 429
    type = "rate_limit"
    default_message = "too many requests"


class ServiceUnavailable(ApiError):
    status = 503
    type = "unavailable"
    default_message = "service unavailable"


class Maintenance(ServiceUnavailable):
    type = "maintenance"
    default_message = "maintenance"


class NotConfigured(ServiceUnavailable):
    type = "not_configured"
    default_message = "not configured"


class InsufficientBalance(InvalidRequest):
    default_message = "insufficient balance"

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("code", "insufficient_balance")
        super().__init__(message, **kwargs)
