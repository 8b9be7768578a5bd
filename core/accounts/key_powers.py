"""Who may mint or rotate an API key, and whom a key acts for (issue 42).

A key can do what its scopes say, and whoever mints or rotates it sees its plaintext: so a person may mint
or rotate only a key whose every scope they hold themselves, and no one gives themselves a power through a
key that their role does not give them. The account holder's built-in payout key is the holder's alone.

Each key records that person (``api_keys.issued_by``: ``holder`` or ``member:<id>``); what is done with
the key counts as theirs (``payouts.requested_by``, the approval rules). Removing a member revokes the
keys they issued unless the remover keeps them (``revoke_keys_issued_by``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable

from . import auth
from .auth_cache import changed
from ..types.errors import Forbidden, Unauthorized
from ..contract.gateway import PluginGateway as Gateway

HOLDER = "holder"
MEMBER_PREFIX = "member:"
# Legacy keys no one but the account holder may rotate: the payout key moves the account's money (SPEC 5.1).
HOLDER_ONLY_KINDS = frozenset({"payout"})


def member_person(member_id: str) -> str:
    """A team member as ``issued_by`` and ``requested_by`` name them."""
    return MEMBER_PREFIX + member_id


@dataclass(frozen=True)
class KeyIssuer:
    """Who mints or rotates a key: the person it is recorded under, and the scopes they hold now.

    ``scopes`` None is the account holder, who holds every scope; a member's are their role's.
    """

    person: str
    scopes: frozenset[str] | None = None

    @property
    def is_holder(self) -> bool:
        return self.person == HOLDER and self.scopes is None

    def lacking(self, wanted: Iterable[str]) -> list[str]:
        """The scopes of ``wanted`` this person does not hold (sorted; empty when they hold them all)."""
        if self.scopes is None:
            return []
        return sorted(set(wanted) - self.scopes)


ACCOUNT_HOLDER = KeyIssuer(HOLDER)


def legacy_scopes(gateway: "Gateway", kind: str) -> frozenset[str]:
    """What a legacy key of ``kind`` may do: the core's scopes of the kind plus what plugins gave it."""
    return auth.LEGACY_SCOPES[kind] | gateway.scopes.legacy_grants(kind)


def _scope_refusal(issuer: KeyIssuer, scopes: Iterable[str], verb: str) -> Forbidden | None:
    lacking = issuer.lacking(scopes)
    if not lacking:
        return None
    return Forbidden(f"you cannot {verb} a key with {', '.join(lacking)}: your role does not give you"
                     f" {'this permission' if len(lacking) == 1 else 'these permissions'}",
                     code="scope_not_held", detail={"scopes": lacking})


def _legacy_refusal(gateway: "Gateway", issuer: KeyIssuer, kind: str) -> Forbidden | None:
    if kind in HOLDER_ONLY_KINDS and not issuer.is_holder:
        return Forbidden(f"only the account holder may rotate the {kind} key", code="holder_only")
    return _scope_refusal(issuer, legacy_scopes(gateway, kind), "rotate")


def check_may_issue(issuer: KeyIssuer, scopes: Iterable[str], verb: str) -> None:
    """403 ``scope_not_held`` naming the scopes ``issuer`` lacks to ``verb`` ("create", "rotate") such a key."""
    refusal = _scope_refusal(issuer, scopes, verb)
    if refusal is not None:
        raise refusal


def check_may_rotate_legacy(gateway: "Gateway", issuer: KeyIssuer, kind: str) -> None:
    """403 ``holder_only`` for the holder's own keys (``HOLDER_ONLY_KINDS``) to anyone else, else
    ``scope_not_held`` unless ``issuer`` holds every scope of the legacy key of ``kind``."""
    refusal = _legacy_refusal(gateway, issuer, kind)
    if refusal is not None:
        raise refusal


async def confirm_issuer(gateway: "Gateway", merchant_id: str, issuer: KeyIssuer) -> KeyIssuer:
    """``issuer`` as they are now: call inside the transaction that writes the key, the merchant row locked.

    A member removed since their request was authenticated is refused (401 ``member_removed``); a role
    changed meanwhile counts as it is now. ``revoke_keys_issued_by`` takes the same lock, so a key
    created while its member is removed is either revoked with the others or never written.
    """
    if issuer.scopes is None or not issuer.person.startswith(MEMBER_PREFIX):
        return issuer
    member = await _member_now(gateway, merchant_id, issuer.person)
    if member is None or member.merchant_id != merchant_id:
        raise Unauthorized("this member's access to the account has ended", code="member_removed")
    return KeyIssuer(issuer.person, frozenset(member.scopes))


def may_rotate_legacy(gateway: "Gateway", issuer: KeyIssuer, kind: str) -> bool:
    """Whether ``check_may_rotate_legacy`` lets ``issuer`` rotate it (what pages offer)."""
    return _legacy_refusal(gateway, issuer, kind) is None


async def describe_person(gateway: "Gateway", merchant_id: str, person: str) -> str:
    """``person`` (``holder``, ``member:<id>``) as people read it: "account holder", "member <e-mail>", or
    "a removed member" (asked of ``decide_member``: only the teams plugin knows its members)."""
    if person == HOLDER:
        return "account holder"
    if not person.startswith(MEMBER_PREFIX):
        return person
    member = await _member_now(gateway, merchant_id, person)
    return f"member {member.email}" if member is not None else "a removed member"


async def _member_now(gateway: "Gateway", merchant_id: str, person: str) -> Any:
    """The team member ``person`` names, as ``decide_member`` answers now (None: removed, or no teams plugin)."""
    return await gateway.hooks.decide_member(merchant_id=merchant_id, member_id=person.removeprefix(MEMBER_PREFIX))


async def lock_account_keys(gateway: "Gateway", merchant_id: str) -> None:
    """Lock the merchant row for the rest of the transaction: one change to the account's keys at a time."""
    await gateway.db.fetch_one("SELECT id FROM merchants WHERE id = :m" + gateway.db.for_update, {"m": merchant_id})


async def keys_issued_by(gateway: "Gateway", merchant_id: str, person: str) -> list[dict]:
    """The account's keys ``person`` issued that still work (not revoked), oldest first: id and label."""
    rows = await gateway.db.fetch_all(
        "SELECT id, label FROM api_keys WHERE merchant_id = :m AND issued_by = :p AND revoked_at IS NULL"
        " ORDER BY created_at, id", {"m": merchant_id, "p": person})
    return [dict(row) for row in rows]


async def revoke_keys_issued_by(gateway: "Gateway", merchant_id: str, person: str, *,
                                first: Callable[[], Awaitable[bool]] | None = None) -> list[dict] | None:
    """Revoke every working key ``person`` issued, and end the grace of secrets they held; the keys revoked.

    For a member leaving the account: the keys they created or last rotated stop at once (legacy keys
    too: the holder rotates one to use it again), as does a secret of theirs still in its rotation grace.
    ``first`` is the caller's own change that must commit with it (deleting the member's row): run first
    in the same transaction; when it answers False nothing is revoked and the answer is None. Answers
    once every process has dropped the revoked keys from its cache. The caller announces each key.
    """
    db, now = gateway.db, gateway.now()
    async with db.transaction():
        await lock_account_keys(gateway, merchant_id)
        if first is not None and not await first():
            return None
        revoked = await db.fetch_all(
            "UPDATE api_keys SET revoked_at = :now WHERE merchant_id = :m AND issued_by = :p AND revoked_at IS NULL"
            " RETURNING id, label", {"now": now, "m": merchant_id, "p": person})
        await db.execute(
            "DELETE FROM api_key_secrets WHERE issued_by = :p AND key_id IN"
            " (SELECT id FROM api_keys WHERE merchant_id = :m)", {"p": person, "m": merchant_id})
    await changed(gateway)
    return sorted((dict(row) for row in revoked), key=lambda row: row["id"])
