"""What a plugin may add to hosted pages, as plain data: forms and branding.

The type lives in the core because the hook that returns it
(``extra_pay_page_forms`` in ``core/contract/hookspecs.py``) is core; ``orbchain.web.pages``
re-exports it for plugins written against the old name. The web layer
renders it; the core never imports the web layer (tests/test_layering.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

from .contrast import accent_hover, accent_label, readable_accent


@dataclass(frozen=True)
class PayPageForm:
    """A POST form shown under the payment details while the payment is open.

    ``action`` is the URL the form posts to (a route the plugin registered);
    ``amount`` pre-fills an ``amount`` input when not None; ``note`` is a
    short caption above the button. Rendered escaped; no script involved.
    """

    action: str
    label: str
    note: str = ""
    amount: str | None = None


# -- branding ------------------------------------------------------------------------------

THEME_MODES = ("LIGHT", "DARK")
MAX_LOGO_URL_LENGTH = 500
MAX_BRAND_NAME_LENGTH = 80
_HEX_COLOR = re.compile(r"#[0-9a-fA-F]{6}")
# A DNS name or an IPv4 literal, lower case: nothing that could end a CSP source or an attribute.
_HOST = re.compile(r"(?=.{1,253}\Z)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*")
# Printable ASCII without space, quotes, angle brackets, backslash or backtick.
_URL_CHARS = re.compile(r"[!#$%&()*+,\-./0-9:;=?@A-Z\[\]^_a-z{|}~]+")


def brand_color(value: str) -> str:
    """``#rrggbb`` in lower case, or ValueError: the only colour form a page ever receives."""
    if not isinstance(value, str) or not _HEX_COLOR.fullmatch(value):
        raise ValueError("must be a colour in the form #RRGGBB")
    return value.lower()


def logo_url(value: str) -> str:
    """A logo URL a page may show, or ValueError saying why not.

    https only (no ``javascript:``, ``data:`` or plain http), no user
    information, a DNS host or IPv4 literal, at most 500 printable ASCII
    characters without quotes, spaces or angle brackets. The gateway never
    fetches it: the payer's browser does, allowed by the page's CSP for
    exactly this origin (:attr:`PageBranding.logo_origin`).
    """
    if not isinstance(value, str) or not value:
        raise ValueError("must be an https URL")
    if len(value) > MAX_LOGO_URL_LENGTH:
        raise ValueError(f"must be at most {MAX_LOGO_URL_LENGTH} characters")
    if not _URL_CHARS.fullmatch(value):
        raise ValueError("must be a plain https URL (printable ASCII, no spaces, quotes or angle brackets)")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ValueError("must be an https URL") from None
    if parts.scheme.lower() != "https":
        raise ValueError("must be an https URL")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ValueError("must not contain user information")
    host = parts.hostname or ""
    if not _HOST.fullmatch(host):
        raise ValueError("must name a DNS host")
    netloc = host if port in (None, 443) else f"{host}:{port}"
    return urlunsplit(("https", netloc, parts.path or "/", parts.query, ""))


@dataclass(frozen=True)
class PageBranding:
    """How a hosted page looks for one brand (the ``decide_page_branding`` hook's answer).

    Every field is checked when the object is built, so a page can put them
    into HTML and CSP as they are: ``logo_url`` through :func:`logo_url`,
    ``brand_color`` through :func:`brand_color`, ``theme_mode`` LIGHT or
    DARK, ``name`` (the logo's alt text) 1-80 characters. None leaves the
    page's default.
    """

    name: str | None = None
    logo_url: str | None = None
    theme_mode: str | None = None
    brand_color: str | None = None

    def __post_init__(self) -> None:
        if self.name is not None and not (isinstance(self.name, str)
                                          and 0 < len(self.name) <= MAX_BRAND_NAME_LENGTH):
            raise ValueError(f"name must be 1-{MAX_BRAND_NAME_LENGTH} characters")
        if self.logo_url is not None:
            object.__setattr__(self, "logo_url", logo_url(self.logo_url))
        if self.brand_color is not None:
            object.__setattr__(self, "brand_color", brand_color(self.brand_color))
        if self.theme_mode is not None and self.theme_mode not in THEME_MODES:
            raise ValueError("theme_mode must be LIGHT or DARK")

    @property
    def dark(self) -> bool:
        return self.theme_mode == "DARK"

    @property
    def accent_hex(self) -> str | None:
        """The colour's six hex digits (the name of its stylesheet), or None."""
        return self.brand_color[1:] if self.brand_color else None

    @property
    def logo_origin(self) -> str | None:
        """``https://host[:port]`` of the logo: the one image origin the page's CSP adds."""
        return logo_origin(self.logo_url)


def logo_origin(url: str | None) -> str | None:
    """``https://host[:port]`` of a logo URL already checked by :func:`logo_url` (so fit for a CSP as it is)."""
    return f"https://{urlsplit(url).netloc}" if url else None


def accent_stylesheet(hex_digits: str) -> str:
    """The CSS of one accent colour: custom properties only, the label colour picked by WCAG contrast.

    Served from the gateway's own origin (``/assets/accent/<rrggbb>.css``),
    so pages keep ``style-src 'self'`` and carry no inline style at all. A
    colour below AA (one stored before the check, or any URL asked for) is
    drawn as its nearest readable shade (``contrast.readable_accent``), so a
    branded button always reads at 4.5:1 or more, hovered or not.
    """
    color = readable_accent(brand_color("#" + hex_digits))
    text, _ = accent_label(color)
    return f":root {{ --accent: {color}; --accent-text: {text}; --accent-hover: {accent_hover(color)}; }}\n"


# -- sign-in widget ----------------------------------------------------------------------------

WIDGET_FIELD = "cf-turnstile-response"  # the form field a Turnstile-style widget posts its token in


def widget_token(form: Mapping[str, Any]) -> str | None:
    """The captcha token a browser form posted (the widget's field, or ``turnstile_token``), or None."""
    token = form.get(WIDGET_FIELD) or form.get("turnstile_token")
    return token if isinstance(token, str) and token else None


@dataclass(frozen=True)
class SignInWidget:
    """A third-party widget a browser sign-in form shows (a captcha), answered by ``decide_sign_in_widget``.

    ``script_url`` is the provider's https script (the page's CSP allows its
    origin for that page only), ``site_key`` the public key the widget
    renders with. The widget posts its token in the form field
    ``cf-turnstile-response``; the dashboard hands it to ``check_sign_in``
    as ``turnstile_token``.
    """

    script_url: str
    site_key: str

    def __post_init__(self) -> None:
        parts = urlsplit(self.script_url)
        if parts.scheme != "https" or not parts.hostname or not _HOST.fullmatch(parts.hostname) \
                or not _URL_CHARS.fullmatch(self.script_url) or parts.username or parts.password:
            raise ValueError("script_url must be an https URL on a DNS host")
        if not self.site_key or not re.fullmatch(r"[A-Za-z0-9_-]{1,200}", self.site_key):
            raise ValueError("site_key must be 1-200 letters, digits, _ or -")

    @property
    def origin(self) -> str:
        parts = urlsplit(self.script_url)
        return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


# -- dashboard pages -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DashboardNotice:
    """A notice on the dashboard's home page until dismissed (the ``extra_dashboard_notices`` hook's answer).

    ``text`` is shown escaped; the Dismiss button posts ``fields`` (and the
    CSRF token) to ``dismiss_path``, a dashboard page the plugin serves
    under ``/app/`` with a ``submit``; ``link_title``/``link_path`` (also
    under ``/app/``) point to where to read more.
    """

    text: str
    dismiss_path: str
    fields: Mapping[str, str] = field(default_factory=dict)
    link_title: str | None = None
    link_path: str | None = None

    def __post_init__(self) -> None:
        for path in (self.dismiss_path, self.link_path):
            if path is not None and (not isinstance(path, str) or not path.startswith("/app/")
                                     or not _URL_CHARS.fullmatch(path)):
                raise ValueError(f"a dashboard notice links to /app/ paths only, not {path!r}")
        if not isinstance(self.text, str) or not self.text:
            raise ValueError("a dashboard notice needs text")



@dataclass(frozen=True)
class BrandChoice:
    """A brand a dashboard form offers (``decide_brand_choices``): its id, stored on what the form makes, and
    its name, shown; optionally its look as payers will see it (``theme_mode``, ``brand_color``, ``logo_url``,
    checked as ``PageBranding``'s), which the form previews before anything is saved (issue 49 item 3).

    The preview is drawn as SVG attributes (no inline style, so the dashboard's CSP stays ``'self'``) in the
    colours a payer page uses: the accent as drawn (``readable_accent``) under its label, on the theme's card.
    """

    brand_id: str
    name: str
    theme_mode: str | None = None
    brand_color: str | None = None
    # Drawn in the preview (an SVG ``<image>``); the page's CSP allows exactly its origin (``logo_origin``).
    logo_url: str | None = None

    def __post_init__(self) -> None:
        if self.logo_url is not None:
            object.__setattr__(self, "logo_url", logo_url(self.logo_url))

    @property
    def dark(self) -> bool:
        return self.theme_mode == "DARK"

    @property
    def logo_origin(self) -> str | None:
        return logo_origin(self.logo_url)

    @property
    def card(self) -> str:
        """The card's background and text colours in this brand's theme (``orbchain.css``)."""
        return "#111827" if self.dark else "#ffffff"

    @property
    def card_text(self) -> str:
        return "#e5e7eb" if self.dark else "#111827"

    @property
    def accent(self) -> str:
        """The buttons' colour as payer pages draw it (an unbranded page's buttons are #111827)."""
        return readable_accent(brand_color(self.brand_color)) if self.brand_color else "#111827"

    @property
    def accent_text(self) -> str:
        return accent_label(self.accent)[0]


@dataclass(frozen=True)
class DashboardView:
    """What a plugin's dashboard page shows: its own template and the values it needs.

    ``template`` is ``"<plugin>/<file>"`` from the plugin's template folder
    (``register_templates``); it is a fragment the dashboard includes in its
    layout, so it extends nothing. Besides ``context`` it sees ``csrf`` (every
    form must post it as ``csrf_token``), ``page_path`` (where its forms post),
    ``form_id`` (fresh per render: an idempotency key for a money form),
    ``session.totp_enabled``, ``session.email`` and ``when(timestamp)`` (a time as text).
    ``status`` is the HTTP status.
    """

    template: str
    context: Mapping[str, Any] = field(default_factory=dict)
    status: int = 200


@dataclass(frozen=True)
class DashboardRedirect:
    """A dashboard page's ``submit`` answer that sends the browser on: a 303 to ``location``.

    For a form whose next step is elsewhere, an identity provider above all:
    ``location`` is an ``https://`` (or, for local development, ``http://``)
    URL or a path on this server; ``prepare(response)``, when given, is
    called on the redirect before it leaves, to set the plugin's own cookies
    (``response.set_cookie``). The answer is never cached.
    """

    location: str
    prepare: Callable[[Any], None] | None = None

    def __post_init__(self) -> None:
        location = self.location
        if not isinstance(location, str) or not location or any(c in location for c in "\r\n\\"):
            raise ValueError(f"a dashboard redirect needs a URL or a path, not {location!r}")
        parts = urlsplit(location)
        local = location.startswith("/") and not location.startswith("//")
        if not local and not (parts.scheme in ("https", "http") and parts.netloc):
            raise ValueError(f"a dashboard redirect goes to an http(s) URL or a path here, not {location!r}")


@dataclass(frozen=True)
class AddressProver:
    """A way to prove one holds an e-mail address without mail: the ``decide_address_prover`` hook's answer.

    ``label`` is the button's words ("Continue with your identity provider").
    ``await start(purpose, reference)`` begins a proof and answers the
    redirect that sends the browser there (with the prover's cookies set by
    its ``prepare``); once the person has proved an address in that same
    browser, the prover asks ``decide_proven_address`` with the same
    ``purpose`` and ``reference`` (short text the asking plugin chose, e.g.
    ``"team_invite"`` and an invitation's id) and lands whom it answers.
    """

    label: str
    start: Callable[[str, str], Awaitable[DashboardRedirect]]

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label.strip():
            raise ValueError("an address prover needs a label for its button")
