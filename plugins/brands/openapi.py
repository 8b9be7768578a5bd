"""The brands plugin documents its routes in ``/openapi.json`` (``register_openapi``)."""

from __future__ import annotations

from typing import Any

from ...api.openapi import Op, Param, envelope, obj, ref
from . import fields

TAG = "Dashboard: brands"
JWT = ("jwt",)
STRING, BOOLEAN = {"type": "string"}, {"type": "boolean"}
TIME = {"$ref": "#/components/schemas/Timestamp"}
NULLABLE_TIME = {"anyOf": [TIME, {"type": "null"}]}


Schema = dict[str, Any]


def _nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


NAME = {"type": "string", "minLength": 1, "maxLength": fields.MAX_NAME}
SLUG = {"type": "string", "maxLength": fields.MAX_SLUG, "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$",
        "description": "URL-safe, unique per account; derived from name when omitted; default is reserved."}
LOGO = {"type": "string", "maxLength": 500, "format": "uri",
        "description": "https only, a DNS host, no user information. Never fetched by the gateway."}
THEME = {"type": "string", "enum": ["LIGHT", "DARK"]}
COLOR = {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"}
WEBHOOK_URL = {"type": "string", "maxLength": 500, "description": "Public http(s) URL (same SSRF rules as the "
                                                                   "account's); unset inherits the account's."}
SECRET = {"type": "string", "minLength": fields.MIN_SECRET, "maxLength": fields.MAX_SECRET,
          "description": "Printable ASCII, no spaces; signs this brand's webhooks (HMAC-SHA512). Never returned."}

BRAND = obj({
    "id": STRING, "name": STRING, "slug": STRING, "logo_url": _nullable(STRING), "theme_mode": _nullable(THEME),
    "brand_color": _nullable(COLOR), "webhook_url": _nullable(STRING), "webhook_secret_set": BOOLEAN,
    "is_default": BOOLEAN, "archived": BOOLEAN, "archived_at": NULLABLE_TIME, "created_at": TIME,
    "updated_at": TIME,
}, description="A brand (SPEC 2.16). The webhook secret is never shown, only webhook_secret_set.")

_OPTIONAL: dict[str, Schema] = {
    "slug": SLUG, "logo_url": LOGO, "logoUrl": LOGO, "theme_mode": THEME, "themeMode": THEME,
    "brand_color": COLOR, "brandColor": COLOR, "webhook_url": WEBHOOK_URL, "webhookUrl": WEBHOOK_URL,
    "webhook_secret": SECRET, "webhookSecret": SECRET,
}
CREATE_BODY = obj({"name": NAME}, _OPTIONAL)
UPDATE_BODY = obj({}, {"name": NAME, **{k: _nullable(v) for k, v in _OPTIONAL.items()}},
                  description="Only the fields given change; null clears one (it inherits again).")
ONE = envelope(ref("Brand"))

OPERATIONS = [
    Op("GET", "/dashboard/brands", "List brands", TAG,
       envelope(obj({"brands": {"type": "array", "items": ref("Brand")}})), auth=JWT,
       query=(Param("archived", {"type": "string", "enum": ["0", "1", "true", "false"]},
                    "1 includes archived brands."),),
       description="The default brand first (created on the first request if the account has none)."),
    Op("POST", "/dashboard/brands", "Create a brand", TAG, ONE, auth=JWT, body=CREATE_BODY, errors=(409,),
       description="Fields in snake_case or camelCase. 409 slug_taken when the slug is already used."),
    Op("GET", "/dashboard/brands/{id}", "Show a brand", TAG, ONE, auth=JWT, errors=(404,)),
    Op("PUT", "/dashboard/brands/{id}", "Change a brand", TAG, ONE, auth=JWT, body=UPDATE_BODY, errors=(404, 409)),
    Op("DELETE", "/dashboard/brands/{id}", "Archive a brand", TAG, ONE, auth=JWT, errors=(404,),
       description="Archives (never deletes): hidden from the list unless archived=1, refused for new keys; "
                   "payments already tagged keep it. The default brand cannot be archived."),
]


def register(registry) -> None:
    registry.add_schema("Brand", BRAND)
    for op in OPERATIONS:
        registry.add(op)
