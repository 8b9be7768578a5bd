"""Stable, documented views that event and filter hooks receive instead of database rows.

A plugin must not depend on the core's table layout (a column rename would
break it silently), so hooks get these frozen dataclasses: the fields are
the contract listed in docs/plugins.md, amounts are ints in base units and
statuses are the API's spelling. New fields may be added; none is removed
or changes meaning without a major version.

Plugins written against the earlier ``dict`` payloads keep working: a view
also answers ``view["field"]`` and ``view.get("field")`` for its own fields.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Protocol


class _AmountColumns(Protocol):
    def to_int(self, value: Any) -> int: ...


class ReadsAmounts(Protocol):
    """What building a view reads of the gateway: its database's exact reading of amount columns.

    (The ground floor names no room; issue 44 moves the ``*_view_of`` builders to their rooms' stores.)"""

    @property
    def db(self) -> _AmountColumns: ...


class _View:
    """Read-only mapping access to a view's fields (``view["track_id"]``)."""

    def __getitem__(self, name: str) -> Any:
        if name not in self.field_names():
            raise KeyError(name)
        return getattr(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self, name) if name in self.field_names() else default

    def __contains__(self, name: object) -> bool:
        return name in self.field_names()

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        # _View is only mixed into dataclasses, which mypy cannot see from here.
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]  # a dataclass, as above


def _int(gateway: ReadsAmounts, value: Any) -> int | None:
    if value is None:
        return None
    return value if isinstance(value, int) else gateway.db.to_int(value)


@dataclass(frozen=True)
class PaymentView(_View):
    """A payment. ``pay_amount`` is in base units of ``pay_currency`` (None for static addresses);
    ``amount`` is the merchant's price as a decimal string in ``currency`` (a coin or a fiat code)."""

    track_id: str
    merchant_id: str
    type: str
    status: str
    currency: str
    amount: str | None
    pay_currency: str
    pay_amount: int | None
    address: str | None
    chain: str | None
    order_id: str | None
    user_id: str | None
    callback_url: str | None
    expires_at: int | None
    paid_at: int | None
    created_at: int
    updated_at: int
    # The brand of the scoped key that created it (SPEC 4.9); None when untagged.
    brand_id: str | None = None


@dataclass(frozen=True)
class DepositView(_View):
    """A deposit: one transfer to one of our addresses. ``status`` is PENDING, CONFIRMED, CREDITED or FAILED;
    ``fee`` is the platform fee of its credit in base units (None before crediting)."""

    id: str
    merchant_id: str
    track_id: str | None
    user_id: str | None
    chain: str
    coin: str
    tx_hash: str
    output_index: int
    address: str
    amount: int
    fee: int | None
    status: str
    confirmations: int
    threshold: int
    credit_count: int
    created_at: int
    credited_at: int | None
    # The deposit valued in USD when it was seen, as decimal text ("0" when no price was known).
    amount_usd: str = "0"
    # A late deposit (no payment attached): the track_id of the payment at its address it came too late for.
    late_for: str | None = None


@dataclass(frozen=True)
class PayoutView(_View):
    """A payout. ``status`` is Confirming, Confirmed or Failed; ``amount`` in base units of ``coin``."""

    id: str
    track_id: str
    merchant_id: str
    chain: str
    coin: str
    destination: str
    amount: int
    status: str
    tx_hash: str | None
    failure_reason: str | None
    refund_of_payment_id: str | None
    created_at: int
    finished_at: int | None


@dataclass(frozen=True)
class Credit(_View):
    """A deposit being credited, as ``filter_credit_postings`` and ``decide_credit_status`` see it.

    ``amount`` is the whole deposit, ``fee`` the platform fee the core
    computed from the merchant's rate; ``reference`` is the ledger reference
    the postings are recorded under (one credit per generation of a deposit).
    """

    deposit: DepositView
    merchant_id: str
    track_id: str | None
    chain: str
    coin: str
    amount: int
    fee: int
    reference: str


@dataclass(frozen=True)
class KeyRequest(_View):
    """One answered request made with an API key, as ``api_key_request_answered`` sees it.

    ``key_kind`` is ``scoped`` for a named key, else the legacy key's header
    name (``merchant_key``, ``payout_key``, ``general_key``). ``route`` is the
    route template (``/v1/payment/{track_id}``), never the filled-in path, so
    no identifier a client typed lands in a log unchecked. ``at`` is Unix seconds.
    """

    key_id: str
    key_kind: str
    merchant_id: str
    method: str
    route: str
    status: int
    request_id: str
    client_ip: str
    at: int


def payment_view_of(gateway: ReadsAmounts, row: Mapping[str, Any]) -> PaymentView:
    return PaymentView(
        track_id=row["track_id"], merchant_id=row["merchant_id"], type=row["type"], status=row["status"],
        currency=row["currency"], amount=row["amount"], pay_currency=row["pay_currency"],
        pay_amount=_int(gateway, row["pay_amount"]), address=row["address"], chain=row["chain"],
        order_id=row["order_id"], user_id=row["user_id"], callback_url=row["callback_url"],
        expires_at=row["expires_at"], paid_at=row.get("paid_at"), created_at=row["created_at"],
        updated_at=row["updated_at"], brand_id=row.get("brand_id"),
    )


def deposit_view_of(gateway: ReadsAmounts, row: Mapping[str, Any]) -> DepositView:
    return DepositView(
        id=row["id"], merchant_id=row["merchant_id"], track_id=row["track_id"], user_id=row["user_id"],
        chain=row["chain"], coin=row["coin"], tx_hash=row["tx_hash"], output_index=int(row["output_index"]),
        address=row["address"], amount=_int(gateway, row["amount"]) or 0, fee=_int(gateway, row.get("fee")),
        status=row["status"], confirmations=int(row["confirmations"]), threshold=int(row["threshold"]),
        credit_count=int(row["credit_count"]), created_at=row["created_at"], credited_at=row.get("credited_at"),
        amount_usd=row.get("amount_usd") or "0", late_for=row.get("late_for"),
    )


def payout_view_of(gateway: ReadsAmounts, row: Mapping[str, Any]) -> PayoutView:
    return PayoutView(
        id=row["id"], track_id=row["track_id"], merchant_id=row["merchant_id"], chain=row["chain"],
        coin=row["coin"], destination=row["destination"], amount=_int(gateway, row["amount"]) or 0,
        status=row["status"], tx_hash=row["tx_hash"], failure_reason=row["failure_reason"],
        refund_of_payment_id=row.get("refund_of_payment_id"), created_at=row["created_at"],
        finished_at=row.get("finished_at"),
    )


@dataclass(frozen=True)
class SecurityEvent(_View):
    """Something that changed who can reach an account, as the ``security_event_occurred`` hook receives it.

    ``kind`` names it (``sign_in``, ``password_changed``, ``totp_enabled``,
    ``api_key_created`` ... and plugins' own, such as ``chat_linked``; see
    docs/plugins.md); ``details`` holds short text values (ids, labels,
    names, ``via``: where it was done), never a secret. ``client_ip``,
    ``user_agent`` and ``request_id`` name the request that caused it (None
    outside a request). ``alert`` asks the account holder to look: the
    dashboard shows such an event on its home page until dismissed.
    """

    merchant_id: str
    kind: str
    at: int
    details: Mapping[str, str]
    client_ip: str | None = None
    user_agent: str | None = None
    request_id: str | None = None
    alert: bool = False
    actor: str | None = None  # who did it: "member <e-mail>", "key <key id>"; None: the account holder (or no request)


@dataclass(frozen=True)
class Member(_View):
    """A team member of a merchant account, as ``decide_member`` answers: whom a member session acts as.

    ``scopes`` are what the member may do (their role's, resolved now, so a
    role change or removal takes effect on the next request); ``role`` names it
    for display (``owner``, ``finance``, or a custom role's name).
    """

    member_id: str
    merchant_id: str
    email: str
    role: str
    scopes: frozenset[str]


@dataclass(frozen=True)
class MemberLogin(_View):
    """A member's password sign-in credentials, as ``decide_member_login`` answers for an e-mail.

    ``password_hash`` is what ``orbchain.api.hash_password`` returned when the
    member chose the password; the core checks it (same lockout, same timing).
    """

    member_id: str
    merchant_id: str
    email: str
    password_hash: str


@dataclass(frozen=True)
class ProvenAddress(_View):
    """An e-mail address a person has just proved they hold, as ``decide_proven_address`` receives it.

    A plugin that can vouch for addresses (an identity provider whose ID
    token says ``email_verified``) made it, in the browser that asked for the
    proof; ``email`` is lower-cased. ``issuer`` and ``subject`` name the
    person at that provider for good (whatever their e-mail later becomes).
    """

    email: str
    issuer: str
    subject: str
