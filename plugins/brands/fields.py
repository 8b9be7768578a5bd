"""The brand body (SPEC 4.11, 8): snake_case or camelCase fields, each checked once.

Create needs ``name``; an update changes only the fields present, and a
field present as null (or "") clears it back to inheriting. Every value
that reaches a page or a CSP goes through ``logo_url`` and ``brand_color`` of
``orbchain.api`` (the checks ``PageBranding`` applies), so what is stored is
what may be shown; a colour must also pass WCAG AA under its button label
(``accent_problem``), so what a merchant enters is what payers can read.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ...api import (
    Field, MAX_LOGO_URL_LENGTH, THEME_MODES, ValidationError, accent_problem, brand_color, logo_url, validate,
)
from ...api.merchant import check_webhook_url

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

MAX_NAME, MAX_SLUG = 80, 40
MIN_SECRET, MAX_SECRET = 16, 128
RESERVED_SLUGS = frozenset({"default"})
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_SECRET = re.compile(r"[!-~]+")  # printable ASCII, no space: exactly the bytes the receiver types in


def _problem(check: Callable[[str], object]) -> Callable[[Any], str | None]:
    def run(value: Any) -> str | None:
        try:
            check(value)
        except ValueError as exc:
            return str(exc)
        return None
    return run


def _name(value: str) -> None:
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value):
        raise ValueError("must not contain control characters")


def _slug(value: str) -> None:
    if not _SLUG.fullmatch(value.lower()):
        raise ValueError("must be lower-case letters, digits and single hyphens (URL-safe)")
    if value.lower() in RESERVED_SLUGS:
        raise ValueError("is reserved")


def _accent(value: str) -> None:
    """``#RRGGBB`` that its button label reads on at WCAG AA (SPEC allows any hex; docs/decisions.md, issue 49)."""
    problem = accent_problem(brand_color(value))
    if problem:
        raise ValueError(problem)


def _secret(value: str) -> None:
    if not _SECRET.fullmatch(value):
        raise ValueError("must be printable ASCII without spaces")


FIELDS: dict[str, Field] = {
    "name": Field("name", min_len=1, max_len=MAX_NAME, check=_problem(_name)),
    "slug": Field("slug", max_len=MAX_SLUG, check=_problem(_slug)),
    "logo_url": Field("logo_url", max_len=MAX_LOGO_URL_LENGTH, aliases=("logoUrl",),
                      check=_problem(logo_url)),
    "theme_mode": Field("theme_mode", upper=True, choices=THEME_MODES, aliases=("themeMode",)),
    "brand_color": Field("brand_color", max_len=7, aliases=("brandColor",), check=_problem(_accent)),
    "webhook_url": Field("webhook_url", "url", max_len=500, aliases=("webhookUrl",)),
    "webhook_secret": Field("webhook_secret", min_len=MIN_SECRET, max_len=MAX_SECRET, aliases=("webhookSecret",),
                            check=_problem(_secret)),
}


def _present(body: Mapping[str, Any], spec: Field) -> tuple[bool, Any]:
    for key in (spec.name, *spec.aliases):
        if key in body:
            return True, body[key]
    return False, None


def _raw_checks(body: Mapping[str, Any]) -> None:
    """What the shared validator would silently repair: surrounding spaces in a secret."""
    present, value = _present(body, FIELDS["webhook_secret"])
    if present and isinstance(value, str) and value and value != value.strip():
        raise ValidationError({"webhook_secret": "must be printable ASCII without spaces"})


async def _normalized(gateway: "Gateway", clean: dict[str, Any]) -> dict[str, Any]:
    if clean.get("slug"):
        clean["slug"] = clean["slug"].lower()
    if clean.get("logo_url"):
        clean["logo_url"] = logo_url(clean["logo_url"])
    if clean.get("brand_color"):
        clean["brand_color"] = brand_color(clean["brand_color"])
    if clean.get("webhook_url"):
        # SPEC 4.11: the same SSRF rules as the account's webhook URL.
        clean["webhook_url"] = await check_webhook_url(gateway, clean["webhook_url"])
    return clean


async def create_body(gateway: "Gateway", body: Mapping[str, Any]) -> dict[str, Any]:
    """Clean values of a create body: ``name`` required, the rest optional (None when absent)."""
    _raw_checks(body)
    specs = [dataclasses.replace(FIELDS["name"], required=True), *(f for k, f in FIELDS.items() if k != "name")]
    return await _normalized(gateway, validate(body, specs))


async def update_body(gateway: "Gateway", body: Mapping[str, Any]) -> dict[str, Any]:
    """The columns an update changes: fields present in ``body``; null or "" clears one."""
    _raw_checks(body)
    given = {name: value for name, spec in FIELDS.items() for present, value in [_present(body, spec)] if present}
    if not given:
        raise ValidationError({"body": "give at least one of " + ", ".join(FIELDS)})
    errors: dict[str, str] = {}
    cleared = {name for name, value in given.items() if value is None or value == ""}
    for name in cleared & {"name", "slug"}:
        errors[name] = "cannot be empty"
    if errors:
        raise ValidationError(errors)
    setting = {name: value for name, value in given.items() if name not in cleared}
    clean = validate(setting, [FIELDS[name] for name in setting])
    return {**{name: None for name in cleared}, **await _normalized(gateway, clean)}


def derived_slugs(name: str, taken: set[str]) -> list[str]:
    """Free slugs derived from ``name`` (SPEC 4.11: derived when omitted), best first."""
    base = slug_base(name)
    candidates = [base] + [f"{base[:MAX_SLUG - len(str(n)) - 1].rstrip('-')}-{n}" for n in range(2, 1000)]
    return [c for c in candidates if c not in taken and c not in RESERVED_SLUGS][:5]


def slug_base(name: str) -> str:
    """``name`` as a URL-safe slug: accents folded, anything else a hyphen, at most 40 characters."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name).strip("-")[:MAX_SLUG].rstrip("-")
    return slug or "brand"
