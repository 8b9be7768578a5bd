"""One documented operation (``Op``) and how it becomes an OpenAPI operation object.

An ``Op`` names what is particular to a route (summary, credentials, query
parameters, body, success schema, special errors); the error statuses every
route of its kind can answer are derived here, once:

* 400 (validation, with ``detail``) everywhere: besides a body or query parameters
  that fail validation, text the gateway refuses at the edge (NUL, lone surrogates,
  control characters) in the path, the query string or a credential header can reach
  any route (issue 10);
* 401 and 403 when it takes credentials (bad or missing key or token; missing
  scope, coin outside a key's allowlist, disabled account);
* 404 when its path has a parameter (unknown or another merchant's object);
* 413 when it reads a body; 429 unless exempt from rate limits;
* 503 on writes (maintenance mode); 500 everywhere.

An operation marked ``page`` is a hosted page: its errors are rendered as
HTML pages (web/middlewares.py), so every derived error status is documented
as text/html instead of the JSON envelope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .schemas import Schema, obj

JSON = "application/json"

# ``requires(...)`` kind -> security scheme name (components/securitySchemes).
SECURITY_SCHEMES = {
    "jwt": "bearerAuth",
    "merchant_key": "merchantApiKey",
    "payout_key": "payoutApiKey",
    "general_key": "generalApiKey",
}

# components/responses: status -> (name, description, error schema).
ERROR_RESPONSES = {
    400: ("BadRequest", "Validation error (error.detail names each field) or a refused request.", "BadRequestError"),
    401: ("Unauthorized", "Missing or invalid API key or token, wrong password or TOTP code.", "Error"),
    403: ("Forbidden", "Access denied: missing scope, coin not allowed for the key, account disabled.", "Error"),
    404: ("NotFound", "Unknown object, or one that belongs to another merchant.", "Error"),
    409: ("Conflict", "Conflicts with the current state (for example email already registered).", "Error"),
    410: ("Gone", "The resource is disabled.", "Error"),
    413: ("PayloadTooLarge", "Request body over 1 MiB.", "Error"),
    429: ("TooManyRequests", "Rate limit exceeded (error.type rate_limit); see Retry-After.", "Error"),
    500: ("InternalError", "Internal error; details are logged, never returned.", "Error"),
    503: ("ServiceUnavailable", "Maintenance mode, payout backlog circuit breaker, a provider not configured, or the"
                                " CPU pool full (code busy; see Retry-After).", "Error"),
}


@dataclass(frozen=True)
class Param:
    name: str
    schema: Schema
    description: str = ""
    required: bool = False

    def as_query(self) -> dict[str, Any]:
        param = {"name": self.name, "in": "query", "required": self.required, "schema": self.schema}
        if self.description:
            param["description"] = self.description
        return param


@dataclass(frozen=True)
class Op:
    method: str
    path: str
    summary: str
    tag: str
    response: Schema | None = None  # the 200 JSON body; None when ``responses`` says it all
    auth: tuple[str, ...] = ()  # kinds of ``web.auth.requires``; () is public
    scope: str | None = None
    body: Schema | None = None
    body_required: bool = True  # False: the body may be left out (some callers send none)
    query: tuple[Param, ...] = ()
    errors: tuple[int, ...] = ()  # statuses beyond the derived ones
    rate_limited: bool = True
    description: str = ""
    responses: dict[str, Any] = field(default_factory=dict)  # extra or non-JSON responses, by status
    body_media_type: str = JSON
    development_only: bool = False
    page: bool = False  # errors answer text/html pages, not the JSON envelope
    extensions: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return self.method.upper(), self.path

    @property
    def path_params(self) -> list[str]:
        return re.findall(r"{([^}/]+)}", self.path)

    def error_statuses(self) -> list[int]:
        statuses = {400, 500, *self.errors}
        if self.body is not None:
            statuses.add(413)
        if self.auth:
            statuses.update((401, 403))
        if self.path_params:
            statuses.add(404)
        if self.rate_limited:
            statuses.add(429)
        if self.method.upper() not in ("GET", "HEAD"):
            statuses.add(503)
        return sorted(statuses)

    def operation_id(self) -> str:
        words = re.sub(r"[{}]", "", self.path).replace("-", "_").strip("/").split("/")
        return "_".join([self.method.lower(), *filter(None, words)]).replace(".", "_")

    def security(self) -> list[dict[str, list[str]]]:
        return [{SECURITY_SCHEMES[kind]: [self.scope] if self.scope else []} for kind in self.auth]

    def to_openapi(self) -> dict[str, Any]:
        operation: dict[str, Any] = {
            "operationId": self.operation_id(),
            "summary": self.summary,
            "tags": [self.tag],
            "security": self.security(),
        }
        if self.description:
            operation["description"] = self.description
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
            for name in self.path_params
        ] + [param.as_query() for param in self.query]
        if parameters:
            operation["parameters"] = parameters
        if self.body is not None:
            operation["requestBody"] = {"required": self.body_required,
                                        "content": {self.body_media_type: {"schema": self.body}}}
        responses: dict[str, Any] = {}
        if self.response is not None:
            responses["200"] = {"description": "OK", "content": {JSON: {"schema": self.response}}}
        for status in self.error_statuses():
            name, description, _ = ERROR_RESPONSES[status]
            responses[str(status)] = html(description) if self.page else {"$ref": f"#/components/responses/{name}"}
        responses.update(self.responses)
        operation["responses"] = dict(sorted(responses.items()))
        if self.scope:
            operation["x-orbchain-scope"] = self.scope
        if self.development_only:
            operation["x-orbchain-development-only"] = True
        operation.update(self.extensions)
        return operation


def error_components() -> dict[str, Any]:
    responses = {}
    for status, (name, description, schema) in ERROR_RESPONSES.items():
        response: dict[str, Any] = {"description": description,
                                    "content": {JSON: {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}
        if status == 429:
            response["headers"] = {"Retry-After": {"description": "Seconds until the window resets.",
                                                   "schema": {"type": "integer", "minimum": 0}}}
        responses[name] = response
    return responses


def body(required: dict[str, Schema], optional: dict[str, Schema] | None = None, **extra: Any) -> Schema:
    """A JSON request body; unknown fields are ignored by the gateway, so they are allowed here."""
    return obj(required, optional, **extra)


def html(description: str, status_headers: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"description": description, "content": {"text/html": {"schema": {"type": "string"}}}}
    if status_headers:
        response["headers"] = status_headers
    return response


def redirect(description: str) -> dict[str, Any]:
    return {"description": description,
            "headers": {"Location": {"description": "Where to go next.", "schema": {"type": "string"}}}}
