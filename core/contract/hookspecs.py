"""Every hook the core calls, in one place.

Plugins (the built-in chains and features as much as third-party packages)
implement these with ``@orbchain.core.contract.plugins.hookimpl`` and register through
the ``orbchain`` entry-point group. Every hook receives ``gateway`` (the
:class:`orbchain.core.gateway.Gateway` context: config, database, registries)
plus what is specific to it; an implementation may accept only the arguments
it uses, so hooks can grow new arguments without breaking plugins.

A hook's name says its kind (docs/plugins.md, "Hook reference"):

- ``register_*``: collection at startup; receives a registry and calls its
  ``add`` (a name registered twice fails startup naming both plugins).
- ``check_*``: a veto; every plugin is asked, raising refuses, None allows.
- ``decide_*``: a first-result decision; the first plugin answering
  something not None wins (several run inside the money transaction).
- ``filter_*``: a value passes through every plugin in turn (inside the
  crediting transaction: raising rolls it back).
- ``extra_*``: every plugin may contribute extra items (fields, forms,
  notices) to something the core is building.
- ``<subject>_<past participle>`` (``payment_paid``): an event, after the
  change committed; ``<subject>_<-ing>`` (``gateway_stopping``): an
  announcement just before something happens. Event implementations may be
  ``async def`` (the core awaits them), must be idempotent and receive the
  frozen views of ``core/types/views.py``, never rows.

Each spec declares its kind in its marker (``@hookspec(kind=HookKind.DECIDE)``,
``core/contract/hook_kinds.py``), checked against its name; the kind says
how ``core/contract/hook_caller.py`` calls it. ``sync=True`` marks a hook
whose callers cannot await; ``isolated=True`` an ``extra_*`` hook whose
failing plugin is logged and skipped.

Hooks renamed to follow this rule keep their old names for one release
(``core/contract/hook_aliases.py``).

A plugin that offers hooks to its own dependants (the ``swaps`` plugin's
``register_swap_venues``, the ``lightning`` plugin's
``register_lightning_backends``) declares them itself through
``register_hookspecs``: the core names none of them.

``docs/plugins.md`` documents each hook for third-party authors;
``tests/test_hookspecs.py`` fails when a hook here is missing from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .hook_kinds import HookKind, HookspecMarker

from .gateway import PluginGateway as Gateway

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..money.coins import Coin, CoinRegistry
    from ..keys import AddressFamilyRegistry
    from ..types.destinations import WebhookDestination
    from ..types.pages import AddressProver, BrandChoice, DashboardNotice, PageBranding, PayPageForm, SignInWidget
    from ..infra.migrate import MigrationRegistry
    from ..types.receive import ReceiveTarget
    from ..types.postings import Posting
    from .registries import (
        AssetRegistry,
        ChainRegistry,
        CommandRegistry,
        DashboardRegistry,
        EventKindRegistry,
        HookspecRegistry,
        JobRegistry,
        OperationRegistry,
        PaymentFieldRegistry,
        PriceSourceRegistry,
        RouteRegistry,
        ScopeRegistry,
    )
    from ..types.views import (
        Credit, DepositView, KeyRequest, Member, MemberLogin, PaymentView, PayoutView, ProvenAddress, SecurityEvent,
    )

hookspec = HookspecMarker("orbchain")


# -----------------------------------------------------------------------------
# Startup: configuration and collection
# -----------------------------------------------------------------------------


@hookspec(kind=HookKind.REGISTER, historic=True)
def register_hookspecs(registry: "HookspecRegistry") -> None:
    """Declare hooks this plugin offers the plugins that depend on it (pytest's ``pytest_addhooks``).

    Called as soon as the plugin is registered, before any other hook, even
    for a plugin registered after the others. Call ``registry.add(module)``
    with a module (or class) of functions marked
    ``@orbchain.core.contract.hookspecs.hookspec``; implementations of those hooks,
    registered before or after, are then checked against them. A dependant
    implements them with ``@hookimpl(optionalhook=True)`` so it still loads
    when the declaring plugin is blocked or not installed. The declaring
    plugin calls its hooks itself (``gateway.hooks.collect_declared(
    hookspecs.<hook>, registry=...)``). Return nothing.
    """


@hookspec(kind=HookKind.CHECK, sync=True)
def check_config(gateway: "Gateway", config: Mapping[str, Any]) -> None:
    """Check this plugin's own config block before anything starts.

    Called once while the gateway is built, for every plugin. ``config`` is
    the whole ``[plugin.<name>]`` table mapping of the operator's file and
    ``ORBCHAIN_PLUGIN__<NAME>__<KEY>`` variables (use
    ``gateway.config.plugin_config("<name>")`` for your own block). Raise
    ``orbchain.core.infra.config.ConfigError`` with a message naming the bad key,
    unknown keys included; the process then refuses to start. A plugin that
    does not implement this hook takes no configuration: a block for it
    stops the start. Return nothing.
    """


@hookspec(kind=HookKind.REGISTER)
def register_migrations(registry: "MigrationRegistry") -> None:
    """Add this plugin's schema migrations.

    Called when the gateway is built and by ``orbchain migrate``. Call
    ``registry.add(Migration(namespace, version, name, up))`` or
    ``registry.add_package(namespace, "your_pkg.migrations")`` for modules
    named ``m0001_<what>.py`` exposing ``up(dialect) -> list[str]``. Use your
    plugin name as the namespace. Return nothing.
    """


@hookspec(kind=HookKind.REGISTER)
def register_coins(registry: "CoinRegistry", gateway: "Gateway") -> None:
    """Contribute coins (symbol, chain, decimals, confirmation floor, ...).

    Called once at startup. Call ``registry.add(Coin(...))`` for each coin
    this plugin serves. A symbol registered by two plugins fails startup.
    The coin table feeds ``/v1/common/currencies`` and every validation.
    """


@hookspec(kind=HookKind.REGISTER)
def register_chains(registry: "ChainRegistry", gateway: "Gateway") -> None:
    """Contribute chain adapters.

    Called once at startup, after ``register_coins``. Call
    ``registry.add(adapter)`` with an object implementing
    ``orbchain.core.types.chains.ChainAdapter`` (``adapter.name`` is its unique
    chain name). Return nothing.
    """


@hookspec(kind=HookKind.REGISTER)
def register_price_sources(registry: "PriceSourceRegistry", gateway: "Gateway") -> None:
    """Contribute USD price sources for ``/v1/common/prices``.

    Called once at startup. Call ``registry.add(source)`` with an object
    having ``name`` and ``async fetch(symbols) -> dict[str, Decimal]``
    (optionally ``async fetch_fiat(currencies)`` and an ``unpriced`` dict of
    reasons). The sources named by ``[plugin.prices] source`` or ``sources``
    are used, several as their median within bounds; the core caches answers
    for at most 60 seconds and reports a coin that fails as 0.
    """


@hookspec(kind=HookKind.REGISTER)
def register_routes(registry: "RouteRegistry", gateway: "Gateway") -> None:
    """Contribute HTTP routes.

    Called while the aiohttp application is built (its router freezes
    afterwards). Call ``registry.add(routes)`` with an
    ``aiohttp.web.RouteTableDef``. Two plugins adding the same method and
    path fail startup. Handlers find the gateway at
    ``request.app[orbchain.web.keys.GATEWAY]``.
    """


@hookspec(kind=HookKind.REGISTER)
def register_jobs(registry: "JobRegistry", gateway: "Gateway") -> None:
    """Contribute periodic jobs to the scheduler.

    Called once at startup. Call ``registry.add(name, coroutine_function,
    seconds=N)``; the function is called as ``await func(gateway)``. With
    PostgreSQL each job runs in one process at a time (advisory lock keyed
    by the job name), so several ``orbchain serve`` processes can share a
    database.
    """


@hookspec(kind=HookKind.REGISTER)
def register_commands(registry: "CommandRegistry") -> None:
    """Contribute ``orbchain`` CLI sub-commands.

    Called when the CLI builds its parser. Call ``registry.add(name, help,
    configure)``; ``configure(parser)`` adds arguments to the sub-command's
    ``argparse`` parser and sets ``parser.set_defaults(func=...)`` where
    ``func(args, gateway) -> int`` runs it with a built (not yet connected)
    gateway and returns the exit code. A name already taken fails.
    """


# -----------------------------------------------------------------------------
# Startup: what feature plugins contribute (scopes, events, pages, documentation)
# -----------------------------------------------------------------------------


@hookspec(kind=HookKind.REGISTER)
def register_scopes(registry: "ScopeRegistry", gateway: "Gateway") -> None:
    """Contribute API-key scopes.

    Called once at startup. Call ``registry.add("links:create", "what it
    allows")``; names are ``resource:action`` in lower case. Registered
    scopes can be given to scoped keys (``POST /dashboard/api-keys``) and
    required by routes with ``@requires("merchant_key", scope="links:create")``.
    ``registry.add(name, description, legacy_keys=("merchant",))`` also
    gives the scope to the legacy keys named (``merchant``, ``payout``,
    ``general``), for routes the SPEC puts under one of them. A scope
    registered twice fails startup. Return nothing.
    """


@hookspec(kind=HookKind.REGISTER)
def register_event_kinds(registry: "EventKindRegistry", gateway: "Gateway") -> None:
    """Declare the webhook event types this plugin sends.

    Called once at startup. Call ``registry.add("subscription.paid",
    "description")``. ``orbchain.core.events.outbox.enqueue_event`` refuses an
    event type nobody declared. Return nothing.
    """


@hookspec(kind=HookKind.REGISTER)
def register_openapi(registry: "OperationRegistry", gateway: "Gateway") -> None:
    """Document this plugin's routes in ``/openapi.json``.

    Called once at startup. Call ``registry.add(orbchain.web.openapi.Op(...))``
    for every route the plugin registers, and ``registry.add_schema(name,
    schema)`` for component schemas its operations reference. The served
    document keeps only operations of routes the app really has. Return
    nothing.
    """


@hookspec(kind=HookKind.REGISTER)
def register_templates(registry: "AssetRegistry", gateway: "Gateway") -> None:
    """Contribute a template folder and a static folder.

    Called once at startup. Call ``registry.add(templates=path,
    static=path)`` (either may be None). Templates are found as
    ``"<plugin name>/<file>"``; static files are served at
    ``/static/<plugin name>/<file>`` with caching headers. Return nothing.
    """


@hookspec(kind=HookKind.REGISTER)
def register_dashboard_pages(registry: "DashboardRegistry", gateway: "Gateway") -> None:
    """Contribute entries to named dashboard slots (navigation, settings tabs).

    Called once at startup. Call ``registry.add(slot, title, path,
    order=100, render=None, submit=None, group="")`` (``group``: the
    ``header-nav`` group the entry joins, one of ``orbchain.api.NAV_GROUPS``
    or its own; none means "More"); the dashboard reads
    ``gateway.dashboard.entries(slot)``. Slots: ``header-nav`` (main
    navigation), ``settings-nav`` (settings tabs), ``payment-actions``
    (links on a payment), ``key-actions`` (links on an API key),
    ``home-panels``. With ``render(gateway, merchant_id, query)`` returning
    an ``orbchain.core.types.pages.DashboardView`` the dashboard serves the page at
    ``path`` (under ``/app/``) inside its layout; ``submit(gateway,
    merchant_id, form)`` takes its CSRF-checked forms. Return nothing.
    """


@hookspec(kind=HookKind.REGISTER)
def register_payment_fields(registry: "PaymentFieldRegistry", gateway: "Gateway") -> None:
    """Accept an extra field in the payment create bodies (``splits``, ``settlement_coin``).

    Called once at startup. Call ``registry.add(name, parse, store)``:
    ``parse(gateway, value, payment_type, merchant_id)`` returns the cleaned
    value or raises ``orbchain.core.types.errors.ValidationError``;
    ``async store(gateway, payment, value)`` runs inside the transaction
    creating the payment (``payment`` is a ``PaymentView``). Without a
    plugin, ``splits`` and ``settlement_coin`` are refused with 503. Return
    nothing.
    """


# -----------------------------------------------------------------------------
# Chains: address families, receive targets and QR payloads
# -----------------------------------------------------------------------------


@hookspec(kind=HookKind.REGISTER)
def register_address_families(registry: "AddressFamilyRegistry", gateway: "Gateway") -> None:
    """Contribute the address families of this plugin's coins.

    Called once at startup, after ``register_coins`` and before
    ``register_chains``. Call ``registry.add(AddressFamily(name, network,
    title, validator, scheme, encoder, ...))`` once per network in
    ``orbchain.core.keys.NETWORKS`` (mainnet, testnet, regtest); a family
    without a derivation scheme is validate-only. A (name, network) pair
    registered twice, a family missing a network, or a coin whose
    ``address_family`` nobody registered stops startup.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_receive_target(
    gateway: "Gateway", payment: Mapping[str, Any], coin: "Coin"
) -> "ReceiveTarget | None":
    """Where the payer of a new payment sends ``coin``, when a plugin decides it.

    Called while a payment is created (and when the hosted page's picker
    switches its coin), before the core derives an address. ``payment``
    holds track_id, merchant_id, type, currency, pay_currency, pay_amount
    (base units, None for static payments), user_id, chain and expires_at.
    Return ``orbchain.core.types.receive.ReceiveTarget(address, extra)`` (a node's
    invoice, a venue deposit address, a subaddress) or None to let the core
    derive one from the seed. The first non-None answer wins; may be async.
    A coin whose family is validate-only and that no plugin answers for is
    refused with 503.
    """


@hookspec(kind=HookKind.DECIDE, sync=True)
def decide_settlement_coin(gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin") -> str | None:
    """The coin this merchant's money in ``coin`` is converted into, when a plugin converts it.

    Asked only for a coin that settles only via a swap
    (``Coin.settles_only_via_swap``), whenever the core must know
    whether the merchant may take it: when the accepted coins are set and
    when a payment in it is created. ``merchant`` is the account (the
    ``swaps`` plugin answers its ``default_settlement_coin``). Return a
    coin symbol or None; the first non-None answer wins. Unless the answer
    names another coin, the coin is refused. Answer synchronously (no
    ``async def``): the checks run outside any transaction, without I/O.
    """


@hookspec(kind=HookKind.DECIDE, sync=True)
def decide_qr_payload(gateway: "Gateway", payment: Mapping[str, Any], coin: "Coin") -> str | None:
    """The text the hosted page's QR code encodes for an open payment.

    ``payment`` is the public payment view (address, pay_amount as a decimal
    string, pay_currency, ...); after a partial payment its pay_amount is
    what is still due, so the URI asks for the rest. Return a URI (``bitcoin:<address>?amount=..``)
    or None; the first non-None answer wins, and without one the QR holds the
    bare address. A URI answer is also the page's "Open in wallet" link (QR
    and link agree); write its amount from the coin's integer base units.
    """


# -----------------------------------------------------------------------------
# Dashboard sign-in
# -----------------------------------------------------------------------------


@hookspec(kind=HookKind.CHECK)
def check_sign_in(gateway: "Gateway", action: str, body: Mapping[str, Any], client_ip: str) -> None:
    """Let a plugin refuse a dashboard sign-up or login before any account work (captcha, IP rules).

    Called by ``POST /dashboard/auth/signup`` (``action`` "signup") and
    ``POST /dashboard/auth/login`` ("login") after the body was validated
    and before the account is created or the password checked. ``body`` is
    the request's JSON object (``turnstile_token``, ``email`` ...) and
    ``client_ip`` the caller's address as the rate limiter sees it. Raise
    ``orbchain.core.types.errors.Forbidden`` (e.g. ``Forbidden("captcha failed",
    code="captcha_failed")``) to refuse with 403; return None to allow.
    Every plugin is asked; the first to raise wins. May be async.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_sign_in_challenge(gateway: "Gateway", action: str, body: Mapping[str, Any], client_ip: str) -> "bool | None":
    """Whether this password sign-in passed your human challenge, which then stands in for the account's lockout.

    Asked by every password sign-in (``action`` "login": the JSON API and
    the dashboard's page) right after ``check_sign_in`` allowed it, with the
    same arguments. Return True only when *this request* passed a challenge
    you checked yourself (a captcha your ``check_sign_in`` verified with its
    provider): while the e-mail's password lockout runs (too many wrong
    passwords, from anyone), the password is then checked instead of
    refused (429), so a stranger cannot lock the person out. Wrong
    passwords still count and announce the lock. Return None otherwise
    (the lockout refuses as before). Stops at first non-None result. May be async.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_sign_in_widget(gateway: "Gateway") -> "SignInWidget | None":
    """The widget a browser sign-in or sign-up form must show (a captcha), or None.

    Asked by the dashboard each time it renders its sign-in and sign-up
    pages, and by public forms guarded by ``check_public_form`` (ask
    ``services.form_widget``). Return
    ``orbchain.core.types.pages.SignInWidget(script_url, site_key)`` when your
    ``check_sign_in``/``check_public_form`` will require a token from the
    browser; the page loads ``script_url`` (its origin alone is added to that
    page's CSP) and posts the widget's token, which reaches the check as
    ``turnstile_token``. Stops at first non-None result.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_member(gateway: "Gateway", merchant_id: str, member_id: str) -> "Member | None":
    """Who a team member's session (a dashboard JWT with a member id) acts as, now.

    Asked on every request such a token makes (cache your answer with
    ``cached``, and call ``cache_changed`` after a change). Return
    ``orbchain.api.Member`` (e-mail, role, scopes) for a member of
    ``merchant_id``, None for anyone else: the token is then refused (401),
    which is how removing a member ends their sessions at once. Without a
    plugin answering, no member token is honoured. Stops at first non-None. May be async.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_member_login(gateway: "Gateway", email: str) -> "MemberLogin | None":
    """The team member who signs in with ``email`` (lower-cased), for a password sign-in.

    Asked by the dashboard's sign-in when no account holder has that e-mail.
    Return ``orbchain.api.MemberLogin`` (account, member id, password hash);
    the core checks the password with the holder's lockout and timing and
    issues a member session. Stops at first non-None result. May be async.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_address_prover(gateway: "Gateway") -> "AddressProver | None":
    """How a visitor can prove they hold an e-mail address without a mailed link, or None.

    Asked by a plugin that must know a person holds an address (the teams
    plugin, before anyone joins an account as that address) when it renders
    its page and when the visitor presses the button. An identity-provider
    plugin answers ``orbchain.api.AddressProver(label, start)`` while it is
    configured; ``start(purpose, reference)`` records the request with its
    pending sign-in (bound to that browser) and answers the redirect. After
    the provider vouched for a verified e-mail in that browser, the prover
    asks ``decide_proven_address``. Stops at first non-None result.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_proven_address(gateway: "Gateway", purpose: str, reference: str,
                          address: "ProvenAddress") -> "Member | None":
    """A person proved ``address`` for ``purpose``/``reference``: act on it; whom to sign in as.

    Asked by the prover (``decide_address_prover``) once the proof that
    ``start(purpose, reference)`` began came back, in the browser that began
    it. The plugin that chose ``purpose`` checks the address is the one it
    asked for and does what the proof was for (the teams plugin: the
    invitation ``reference`` is accepted and its member created), then
    answers ``orbchain.api.Member``: the prover links its identity
    (``address.issuer``/``subject``) to that member and signs them in. Raise
    an ``ApiError`` to refuse (the prover shows its message; change nothing
    then); return None for a purpose that is not yours. Stops at first
    non-None result. May be async.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_hold_quote(gateway: "Gateway", merchant_id: str, coin: str) -> Any:
    """Read what ``decide_payout_hold``/``decide_transfer_hold`` will need, before their transaction opens.

    Asked once per new payout or transfer of ``coin`` by ``merchant_id``
    (not for ``holdable=False`` payouts), outside any transaction of the
    core's, so a slow read (a price fetch) never keeps the merchant row
    locked. The answer (anything; None: nothing to decide) is passed to the
    decide hook as ``quote``. Stops at first non-None result. May be async.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_payout_hold(gateway: "Gateway", payout: "PayoutView", requested_by: "str | None",
                       quote: Any = None, key_id: "str | None" = None) -> "bool | None":
    """Hold a payout for approval: reserved, but not sent until ``approve_held_payout``.

    Asked once for every new payout (single, batch item, refund, schedule,
    auto-withdraw, a plugin's ``request_payout``; not for one requested with
    ``holdable=False``, a swap's deposit to its venue) inside the transaction that
    reserved its money, with the merchant row locked (so sums over the
    merchant's payouts are exact). ``requested_by`` names the person who asked:
    ``"holder"`` (the account holder) or ``"member:<id>"`` (a team member), or
    None (a job or plugin). A payout made with an API key is requested by the
    person who created or last rotated that key, and ``key_id`` names the key
    (None for a dashboard session, a job or a plugin): a rule about people
    (self-approval, a person's daily limit) must see through keys. ``quote``: what
    ``decide_hold_quote`` answered before the transaction (read no price here).
    Return True to hold it (stage
    ``held``: the worker leaves it alone); write your own rows in the same
    transaction. Raise an ``ApiError`` to refuse the payout (rolled back).
    Release it later with ``approve_held_payout`` or ``reject_held_payout``.
    Stops at first non-None result. May be async.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_payout_hold_notice(gateway: "Gateway", merchant_id: str, coin: str, amount: int,
                              requested_by: "str | None") -> "str | None":
    """A sentence for a payout's review step: whether it would be held for approval, why, and who approves.

    None when it would not be held (or the plugin holds nothing).

    Asked before anything is reserved, outside any transaction, with the
    amount in base units of ``coin`` and ``requested_by`` as in
    ``decide_payout_hold``; read only (the hold itself is still decided by
    ``decide_payout_hold`` when the payout is made). May be async; the first
    non-None answer wins.
    """


@hookspec(kind=HookKind.CHECK)
def check_payout_signing(gateway: "Gateway", payout: "PayoutView") -> None:
    """Object to a payout at the signing boundary, right before the signer's policy decides on it.

    Asked by ``core/payouts/signing_gate.py`` for every payout about to be
    signed (after a worker claimed it, outside any transaction), so a rule a
    plugin applied when the payout was made holds at the moment keys are
    used, even if the payout row was changed since (the ``approvals`` plugin:
    a payout it held for approval is signed only once its approval is
    recorded, for the same amount and destination). Raise an ``ApiError``
    whose ``code`` names why (e.g. ``Forbidden("no approval",
    code="approval_missing")``): the payout is held by the policy (reason
    ``approval_missing``), not failed, and the operator releases or cancels
    it. Return None to allow. Every plugin is asked; the first to raise wins.
    Read only your own tables; write nothing. May be async.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_transfer_hold(gateway: "Gateway", transfer: Mapping[str, Any], requested_by: "str | None",
                         quote: Any = None, key_id: "str | None" = None) -> "bool | None":
    """Hold an internal transfer for approval: the sender's money held, the recipient told nothing yet.

    Asked once for every new transfer (API, dashboard, mini-app) inside the
    transaction that records it, before any money moves. ``transfer`` has
    ``id``, ``merchant_id`` (the sender), ``to_account_id``, ``coin`` and
    ``amount`` (base units); ``requested_by``, ``quote`` and ``key_id`` as for ``decide_payout_hold``.
    Return True to hold it (sender available -> held, ``status`` ``held``, no
    webhook); write your own rows in the same transaction. Finish it with
    ``approve_held_transfer`` or ``reject_held_transfer``. Stops at first
    non-None result. May be async.
    """


@hookspec(kind=HookKind.CHECK)
def check_public_form(gateway: "Gateway", form: str, body: Mapping[str, Any], client_ip: str) -> None:
    """Let a plugin refuse an anonymous visitor's form that creates something (a captcha, IP rules).

    Called, through ``services.check_public_form``, by plugin pages whose
    public form creates a record for whoever posts it, before anything is
    written: the ``subscriptions`` plugin's enrolment (``form``
    "subscribe"). ``body`` is the posted form as a mapping (the widget's
    token as ``turnstile_token``) and ``client_ip`` the caller's address as
    the rate limiter sees it. Raise ``orbchain.core.types.errors.Forbidden`` (e.g.
    ``Forbidden("captcha failed", code="captcha_failed")``) to refuse with
    403; return None to allow. Every plugin is asked; the first to raise
    wins. May be async.
    """


# -----------------------------------------------------------------------------
# Account security: events and dashboard notices
# -----------------------------------------------------------------------------


@hookspec(kind=HookKind.EVENT)
def security_event_occurred(gateway: "Gateway", event: "SecurityEvent") -> None:
    """Something changed who can reach an account: record it, show it, alert on it.

    Announced (``orbchain.api.announce_security_event``) after the
    change committed, by the core (``sign_in``, ``sign_in_locked``,
    ``password_changed``, ``totp_enabled``, ``totp_disabled``,
    ``api_key_created``, ``api_key_rotated``, ``api_key_revoked``) and by
    plugins (the telegram plugin's ``chat_linked``, ``chat_unlinked`` and
    its mini-app ``sign_in``). ``event`` is a
    :class:`~orbchain.core.types.views.SecurityEvent`: merchant, kind, time,
    details (short text, never a secret), the request's client IP, user
    agent and id, and ``alert``. May be async. A failure is logged and the
    change stands. Return nothing.
    """


@hookspec(kind=HookKind.EXTRA, isolated=True)
def extra_dashboard_notices(gateway: "Gateway", merchant_id: str,
                            principal: Any) -> "list[DashboardNotice] | None":
    """Notices the dashboard's home page shows this merchant until they are dismissed.

    Asked on every render of the home page (``/app``); every plugin's
    answers are shown. ``principal`` is who is looking
    (``orbchain.api.Principal``: the account holder, or a team member and the
    scopes of their role): answer only what they may read. Return a list of
    ``orbchain.core.types.pages.DashboardNotice(text, dismiss_path, fields,
    link_title, link_path)`` or None. The page renders ``text`` (escaped)
    and a Dismiss button posting ``fields`` plus the CSRF token to
    ``dismiss_path``, a dashboard page your plugin serves (its ``submit``).
    May be async; a plugin that raises is logged and the page renders
    without its notices.
    """


# -----------------------------------------------------------------------------
# Lifecycle
# -----------------------------------------------------------------------------


@hookspec(kind=HookKind.EVENT)
def gateway_started(gateway: "Gateway") -> None:
    """The database is connected and migrated; the server is about to serve.

    May be async. Open long-lived resources here (close them in
    ``gateway_stopping``). Return nothing.
    """


@hookspec(kind=HookKind.EVENT)
def gateway_stopping(gateway: "Gateway") -> None:
    """The server is shutting down; the database is still connected.

    Called once requests and job runs have finished or been cancelled at the
    stop's drain deadline. May be async; close what ``gateway_started``
    opened, promptly (the process exits a few seconds after the deadline
    whatever is left). Return nothing.
    """


# -----------------------------------------------------------------------------
# Hosted pages
# -----------------------------------------------------------------------------


@hookspec(kind=HookKind.EXTRA, sync=True)
def extra_pay_page_forms(gateway: "Gateway", payment: Mapping[str, Any]) -> "list[PayPageForm] | None":
    """Forms to show on the hosted payment page of an open payment.

    Called for every render of ``/pay/<track_id>`` while the payment is
    Waiting or Paying and shows something to pay: an address, or a payment
    request (``decide_qr_payload``, e.g. a Lightning invoice) when it has
    none. ``payment`` is the public payment view (track_id, pay_currency,
    pay_amount, address, status, plugin blocks such as ``lightning`` ...). Return a list of
    ``orbchain.core.types.pages.PayPageForm`` (each posts to a route your plugin
    registered) or None. Results of all plugins are shown, in plugin order.
    The devnet uses it for its development "Pay with devnet" button, the
    lightning plugin for "Pay with devnet Lightning".
    """


@hookspec(kind=HookKind.DECIDE)
def decide_page_branding(
    gateway: "Gateway", merchant_id: str, brand_id: str | None, payment: Mapping[str, Any] | None
) -> "PageBranding | None":
    """How a hosted page of ``merchant_id`` looks: logo, light or dark theme, accent colour.

    Called for every render of ``/pay/<track_id>`` and by any plugin page
    through ``orbchain.api.page_branding_for``. ``brand_id`` is the
    payment's brand (the creating key's ``brand_id``) or the one a plugin
    page belongs to, None when untagged; ``payment`` is the public payment
    view, or None for a page not about one payment (a tip page, a link's
    amount prompt). Return ``orbchain.core.types.pages.PageBranding(name, logo_url,
    theme_mode, brand_color)``, which validates every value (https logo URL,
    ``#RRGGBB``, ``LIGHT``/``DARK``) when built, or None for the plain page.
    Stops at first non-None result. May be async. A plugin that raises or
    answers something else is logged and the page renders unbranded.
    """


# -----------------------------------------------------------------------------
# Webhook destinations and API keys
# -----------------------------------------------------------------------------


@hookspec(kind=HookKind.DECIDE)
def decide_webhook_destination(
    gateway: "Gateway", merchant_id: str, brand_id: str | None, payment: "PaymentView"
) -> "WebhookDestination | None":
    """Override where a payment's webhooks go and which secret signs them (a brand's own).

    Called inside the transaction that enqueues a ``payment.*`` event or a
    ``deposit.*`` event of a payment. ``brand_id`` is the payment's brand
    (None when untagged) and ``payment`` its ``PaymentView``. Return
    ``orbchain.core.types.destinations.WebhookDestination(url, secret)``; a None
    field inherits. The URL is used when neither the payment's
    ``callback_url`` nor the creating key's URL applies (else the account's);
    the secret signs unless the key has its own. Stops at first non-None
    result. May be async; raising rolls the enqueueing transaction back.
    Asked once per payment and transaction: the events one transaction
    sends of a payment (a credit's ``deposit.credited`` and ``payment.paid``)
    share the first answer, given the payment as that event saw it.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_key_brand_allowed(gateway: "Gateway", merchant_id: str, brand_id: str) -> "bool | None":
    """May a new scoped API key of ``merchant_id`` carry ``brand_id`` (SPEC 4.9)?

    Called by ``POST /dashboard/api-keys`` when the body names a
    ``brand_id``. Return True for a live brand of this account, False for
    anything else (another account's, archived, unknown), None when this
    plugin knows no brands. Without a True answer the key is refused with
    400 naming ``brand_id``. Stops at first non-None result. May be async.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_brand_choices(gateway: "Gateway", merchant_id: str) -> "Sequence[BrandChoice] | None":
    """The brands a dashboard form may offer ``merchant_id`` (issue 49 items 3 and 8).

    Called when a form that makes a payment, a link, a plan or a key is
    rendered, through ``orbchain.api.brand_choices``. Return the account's
    live brands a form may tag with as
    ``orbchain.core.types.pages.BrandChoice(brand_id, name, theme_mode,
    brand_color)`` (the look, when given, is previewed under the picker), not
    counting a default look that an untagged payment wears anyway, or None
    when this plugin knows no brands (an empty answer: the form shows no
    picker). A brand chosen on a form is checked again with
    ``decide_key_brand_allowed`` before it is stored.
    Stops at first non-None result. May be async.
    """


# -----------------------------------------------------------------------------
# The money path: called INSIDE the crediting transaction
# -----------------------------------------------------------------------------


@hookspec(kind=HookKind.FILTER)
def filter_credit_postings(gateway: "Gateway", credit: "Credit", postings: "list[Posting]") -> "list[Posting] | None":
    """Shape the ledger postings of a deposit credit (splits, auto-settle, brand fees).

    A filter: called inside the crediting database transaction, plugin by
    plugin, each receiving the postings the previous one returned (first the
    core's: ``world:<chain>`` minus the amount, the merchant's available
    account plus the net, ``platform:fees`` plus the fee). ``credit`` is a
    :class:`orbchain.core.types.views.Credit`. Return the new list of
    ``orbchain.core.types.postings.Posting`` or None to leave it unchanged. May be
    async. The core then refuses (and rolls the credit back, to be retried
    at the next scan) postings that do not sum to zero, touch another coin,
    change the ``world`` leg or name a merchant that does not exist; the
    result is posted once under ``credit.reference``, so it must be the
    same for the same credit. Raising also rolls the credit back.
    """


@hookspec(kind=HookKind.DECIDE, answered_by=True)
def decide_credit_status(gateway: "Gateway", credit: "Credit") -> "str | None":
    """Hold a credited deposit as CONFIRMED ("awaiting conversion") instead of CREDITED.

    Called inside the crediting transaction after the postings were posted.
    Return ``"CONFIRMED"`` when the money went somewhere that still has to
    turn it into the merchant's (a swap venue): the deposit stays CONFIRMED,
    its payment stays Paying, no ``deposit.credited`` webhook is sent yet.
    Finish it later with ``orbchain.core.watching.deposits.complete_credit(gateway,
    deposit_id)``, which marks it CREDITED and lets the payment become Paid.
    Return None to credit now. Stops at first non-None result.
    """


# -----------------------------------------------------------------------------
# Payments and money events (feature plugins react to these)
# -----------------------------------------------------------------------------


@hookspec(kind=HookKind.EXTRA, answered_by=True)
def extra_payment_webhook_fields(gateway: "Gateway", payment: "PaymentView") -> "Mapping[str, Any] | None":
    """Add fields to a payment webhook body (``payment.paid`` and ``Paying``).

    Called inside the transaction that enqueues the webhook, for every
    plugin; may be async. ``payment`` is the ``PaymentView`` as it stands.
    Return a mapping of extra fields (decimal strings for amounts, never
    floats) or None. A field the core already sends is never replaced, and
    the first plugin to name a field keeps it. Raising rolls the change back.
    Auto-settle adds ``settled_coin``, ``settled_amount`` and ``swap_fallback``.
    """


@hookspec(kind=HookKind.EVENT)
def deposit_credited(gateway: "Gateway", deposit: "DepositView") -> None:
    """A deposit reached its confirmation threshold and was credited.

    Called after the crediting transaction committed (for a deposit held
    CONFIRMED by ``decide_credit_status``: after ``complete_credit``).
    ``deposit`` is a :class:`orbchain.core.types.views.DepositView` (amount and
    fee in base units). May be async. Must be idempotent: re-scans may call
    it again for the same deposit after a crash. Return nothing.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_deposit_payment(gateway: "Gateway", chain: str, coin: str, address: str,
                    merchant_id: str) -> "str | None":
    """The payment a new deposit belongs to, when it is not the open payment at its address.

    Asked by the scanner for a transfer to one of our addresses that no open
    payment of that coin is waiting at (``coin`` received at ``address`` of
    ``merchant_id``), before the deposit is recorded, inside its
    transaction. Return the ``track_id`` of a payment of that merchant (a
    venue's payout for a payment the payer paid in another coin at the
    venue's deposit address) or None. The payment is attached only while it
    is Waiting or Paying. May be async; the first non-None answer wins.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_payment_covered(gateway: "Gateway", payment: Mapping[str, Any],
                    deposits: "list[Mapping[str, Any]]") -> "bool | None":
    """Whether a payment's credited deposits pay it, for a payment settled in another coin than it is priced in.

    Asked whenever the core recomputes a payment's status (inside the
    transaction), with the payment row and its deposit rows. Return True
    (Paid) or False (not yet) for a payment the plugin settles itself (a
    payment paid at a venue's deposit address, credited as the venue's
    payout in the settlement coin), None to let the core compare the
    credited amount with ``pay_amount``. May be async; the first non-None
    answer wins.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_deposit_confirmations(gateway: "Gateway", merchant_id: str, coin: str, amount: int,
                                 payment: "Mapping[str, Any] | None") -> "int | None":
    """How many confirmations a new deposit needs before it is credited: a speed policy scaled by value.

    Asked once per deposit, when it is first seen (inside the transaction that
    records it), with its merchant, coin, amount (base units) and the payment
    it pays (the row, or None). Return a number of confirmations, or None to
    keep the merchant's setting. The core never goes below the coin's safe
    floor (``Coin.confirmations``), whatever the answer. May be async; the
    first non-None answer wins.
    """


@hookspec(kind=HookKind.DECIDE)
def decide_payment_held_open(gateway: "Gateway", payment: Mapping[str, Any]) -> "bool | None":
    """Keep a payment past its lifetime because its money is on the way where the core cannot see it.

    Asked by the expiry job, inside its transaction, for each Waiting or
    Paying payment whose lifetime elapsed (``payment`` is the row). Return
    True to leave it open for now (the payer paid a venue's deposit address
    in time and the venue is converting), None to let it expire by the
    core's rules. May be async; the first non-None answer wins.
    """


@hookspec(kind=HookKind.EVENT)
def deposit_reversed(gateway: "Gateway", deposit: "DepositView") -> None:
    """A credited (or CONFIRMED) deposit left the best chain and its credit was reversed.

    Called after the reversal committed; ``deposit`` is the
    :class:`~orbchain.core.types.views.DepositView` as it stands after it (status
    PENDING, 0 confirmations). May be async. Must be idempotent. Return
    nothing.
    """


@hookspec(kind=HookKind.EVENT)
def payment_detected(gateway: "Gateway", payment: "PaymentView") -> None:
    """A Waiting payment saw its first deposit, below the confirmation threshold: it is now Paying.

    Called after that committed, with the :class:`~orbchain.core.types.views.PaymentView`
    (status Paying). May be async. Must be idempotent. Return nothing.
    """


@hookspec(kind=HookKind.EVENT)
def payment_paid(gateway: "Gateway", payment: "PaymentView") -> None:
    """A payment reached Paid.

    Called after the transaction that marked it Paid committed, with the
    :class:`~orbchain.core.types.views.PaymentView`. May be async. Must be
    idempotent. Return nothing.
    """


@hookspec(kind=HookKind.EVENT)
def payment_expired(gateway: "Gateway", payment: "PaymentView") -> None:
    """A payment's lifetime elapsed without enough credited money: it is Expired.

    Called by the expiry job after the change committed, with the
    :class:`~orbchain.core.types.views.PaymentView`. May be async. Must be
    idempotent. Return nothing.
    """


@hookspec(kind=HookKind.EVENT)
def payment_cancelled(gateway: "Gateway", payment: "PaymentView") -> None:
    """The merchant cancelled a Waiting payment.

    Called after the change committed (once: cancelling again is a no-op),
    with the :class:`~orbchain.core.types.views.PaymentView`. May be async. Return
    nothing.
    """


@hookspec(kind=HookKind.EVENT)
def payments_pruning(gateway: "Gateway", track_ids: list[str]) -> None:
    """These unpaid payments are about to be deleted: drop your rows that name them.

    Called by the core's ``payments.prune_unpaid`` job with the track ids of
    invoices minted with ``services.create_invoice(unpaid_retention_seconds=...)``
    that are past that retention, or (when the operator set
    ``[payments] unpaid_retention_days``) of the merchants' own API payments
    that expired longer ago than that, Expired or Cancelled and never saw a
    deposit; the core deletes them right after every plugin ran. A crash in between
    calls it again with the same ids, so implementations must be idempotent
    (and must not raise: a failure is logged and the payments still go).
    May be async. Return nothing.
    """


@hookspec(kind=HookKind.EVENT)
def payout_finished(gateway: "Gateway", payout: "PayoutView") -> None:
    """A payout reached a final state (Confirmed or Failed).

    Called after the final state committed with the
    :class:`~orbchain.core.types.views.PayoutView`; ``payout.status`` tells which.
    May be async. Must be idempotent. Return nothing.
    """


@hookspec(kind=HookKind.EVENT)
def ledger_posted(gateway: "Gateway", transaction: Mapping[str, Any]) -> None:
    """A ledger transaction was committed.

    ``transaction`` has id, kind, reference and postings (account, coin,
    amount in base units). Called after commit; may be async. Useful for
    auditing and analytics plugins. Return nothing.
    """


@hookspec(kind=HookKind.EVENT, selective=True)
def api_key_request_answered(gateway: "Gateway", request: "KeyRequest") -> None:
    """A request authenticated with an API key was answered; the response has not left yet.

    ``request`` is a :class:`~orbchain.core.types.views.KeyRequest` (key id and
    kind, merchant, method, route template, status, request id, client IP,
    time). Called for every such request, refused ones included (403 scope,
    rate limit), so keep it cheap; the client waits for it, which lets an
    audit plugin commit its row before the answer is sent. May be async; a
    failure is logged and the response still goes out. Return nothing.
    """
