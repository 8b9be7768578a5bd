"""The signer's own PostgreSQL role: read what it judges, write only what signing records (issue 45).

``orbchain signer`` judges a payout on facts it reads itself (the row, the
ledger reservation, the approvals, the window counts) and records the verdict
and the signature. Under the owner's role a leaked signer DSN, or a fault in
the signer, could rewrite any row: a payout's amount or destination, the
ledger. Under this role it can only:

* SELECT every table of the schema except :data:`NEVER_READ` (the members'
  credentials and sign-in state: nothing a signer judges);
* write where signing records something (:data:`PAYOUT_SIGNING_WRITES`): the
  payout's signing columns (never ``amount``, ``destination``, ``merchant_id``,
  ``coin``, ``chain``, ``status``), the coin's signing lock, a bump's counted
  fee, a hold's announcements, and each chain's own signing bookkeeping
  (selected outputs and change, nonces, signed versions, a Lightning
  payout's claim on its invoice);
* with ``sweeps``, also what the signing jobs (cold sweeps, deposit sweeps)
  record, which includes booking their ledger transactions
  (:data:`SWEEP_WRITES`): a widening the operator asks for by name.

The grant is computed from this module, never accumulated: every privilege the
role held on the schema's tables and sequences is revoked and the list granted
again, in one transaction, so running it twice, or after a migration, leaves
exactly the current list. Tables a plugin did not create (its chain is not
installed) are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..infra.db import Database

ROLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

# Credentials and sign-in state of the dashboard's members and API keys: the signer never reads them.
NEVER_READ = ("api_key_secrets", "member_totp", "recovery_codes", "revoked_tokens", "oidc_identities",
              "oidc_landings", "oidc_logins", "sign_in_steps", "auth_lockouts", "auth_acks", "team_invites",
              "telegram_spent_tokens", "telegram_links")

# The payout columns signing writes (signing_gate.authorize, service.record_signed, a hold, a claim given back).
PAYOUT_SIGNING_COLUMNS = ("stage", "authorized_at", "policy_hold", "claimed_until", "claim_token", "tx_hash",
                          "raw_tx", "network_fee", "details", "attempts", "last_error", "updated_at")

_BOOKKEEPING = ("INSERT", "UPDATE", "DELETE")  # a chain's own signing records: outputs, change, versions

PAYOUT_SIGNING_WRITES: dict[str, tuple[str, ...]] = {
    "payouts": (f"UPDATE ({', '.join(PAYOUT_SIGNING_COLUMNS)})",),
    "signing_locks": ("INSERT", "UPDATE (coin)"),  # FOR UPDATE needs an UPDATE privilege on a column
    "payout_fee_bumps": ("INSERT",),
    "operator_events": ("INSERT",),  # a hold announced to the operator
    "security_events": ("INSERT",),  # ... and to the activity log
    "job_ticks": ("INSERT", "UPDATE"),  # the signing jobs' scheduler
    "counters": ("INSERT", "UPDATE (value)"),  # change addresses, Solana's pool: indexes never handed out twice
    "kept_count_deltas": ("INSERT",),  # the list-count triggers of what it inserts (security_events, deposits)
    "bitcoin_change_outputs": _BOOKKEEPING, "bitcoin_wallet_spends": _BOOKKEEPING,
    "bitcoin_payout_txs": _BOOKKEEPING, "bitcoin_payout_versions": _BOOKKEEPING,
    "bitcoin_payout_bumps": ("INSERT", "UPDATE"), "bitcoin_payout_conflicts": ("INSERT", "UPDATE"),
    "evm_nonces": ("INSERT", "UPDATE"), "evm_txs": ("INSERT", "UPDATE"), "evm_tx_versions": _BOOKKEEPING,
    "tron_txs": ("INSERT", "UPDATE"), "solana_txs": ("INSERT", "UPDATE"),
    "solana_hot_wallet": ("INSERT", "UPDATE"), "solana_address_pool": ("INSERT", "UPDATE"),
    "devnet_txs": ("INSERT", "UPDATE"),  # the development chain's "node" is the database
    # A Lightning payout's claim on its invoice's payment hash (signing), released when the node says it failed.
    "lightning_payout_claims": ("INSERT", "DELETE"),
}

SWEEP_WRITES: dict[str, tuple[str, ...]] = {
    "bitcoin_cold_sweeps": ("INSERT", "UPDATE"), "evm_sweeps": ("INSERT", "UPDATE"),
    "evm_sweep_marks": ("INSERT", "UPDATE"), "tron_sweeps": ("INSERT", "UPDATE"),
    "tron_sweep_marks": ("INSERT", "UPDATE"), "solana_sweep_marks": ("INSERT", "UPDATE"),
    "ledger_transactions": ("INSERT",), "ledger_postings": ("INSERT",), "ledger_balances": ("INSERT", "UPDATE"),
}


class RoleRefused(ValueError):
    """The role cannot be given least authority: a bad name, a superuser, or the schema's owner."""


@dataclass
class RoleGrant:
    """What :func:`grant_signer_role` did, for the operator to read."""

    role: str
    schema: str
    created: bool
    read: list[str] = field(default_factory=list)
    writes: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        said = [f"role {self.role} {'created' if self.created else 'exists'};"
                f" its privileges on schema {self.schema} replaced:",
                f"  SELECT on {len(self.read)} table(s) (not: {', '.join(NEVER_READ)})"]
        said.extend(f"  {', '.join(privileges)} on {table}" for table, privileges in sorted(self.writes.items()))
        return said


def writes_for(sweeps: bool) -> dict[str, tuple[str, ...]]:
    return {**PAYOUT_SIGNING_WRITES, **(SWEEP_WRITES if sweeps else {})}


def _quoted(name: str) -> str:
    return f'"{name}"'


async def grant_signer_role(db: "Database", role: str, *, sweeps: bool = False) -> RoleGrant:
    """Create ``role`` (LOGIN, no password: the operator sets its authentication) if missing, and give it
    exactly the signer's privileges on the connected schema; idempotent. ``RoleRefused`` before any change."""
    if not db.is_postgres:
        raise RoleRefused("a signer role is PostgreSQL's: on SQLite the signer runs inside `serve`"
                          " ([signer] in_process), with no database role to restrict")
    if not ROLE_NAME.fullmatch(role):
        raise RoleRefused(f"role name {role!r}: lower-case letters, digits and _ (a plain SQL identifier)")
    schema = await db.fetch_val("SELECT current_schema()")
    found = await db.fetch_one("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = :r", {"r": role})
    if found is not None and (found["rolsuper"] or found["rolbypassrls"]):
        raise RoleRefused(f"role {role} is a superuser (or bypasses row security): no grant can restrict it")
    owners = {r["name"] for r in await db.fetch_all(
        "SELECT pg_get_userbyid(nspowner) AS name FROM pg_namespace WHERE nspname = :s"
        " UNION SELECT tableowner FROM pg_tables WHERE schemaname = :s UNION SELECT current_user", {"s": schema})}
    if role in owners:
        raise RoleRefused(f"role {role} owns schema {schema} or its tables (or runs this command): an owner is not"
                          " restricted by grants; name a role of the signer's own")
    member_of = [r["name"] for r in await db.fetch_all(
        "SELECT pg_get_userbyid(m.roleid) AS name FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member"
        " WHERE r.rolname = :r ORDER BY 1", {"r": role})]
    if member_of:
        raise RoleRefused(f"role {role} is a member of {', '.join(member_of)}: it could act with their privileges"
                          " (SET ROLE); revoke the membership or name a role of the signer's own")
    tables = [r["tablename"] for r in await db.fetch_all(
        "SELECT tablename FROM pg_tables WHERE schemaname = :s ORDER BY tablename", {"s": schema})]
    sequences = {r["name"] for r in await db.fetch_all(
        "SELECT sequencename AS name FROM pg_sequences WHERE schemaname = :s", {"s": schema})}
    result = RoleGrant(role, schema, created=found is None)
    who, where = _quoted(role), _quoted(schema)
    async with db.transaction():
        if found is None:
            await db.execute(f"CREATE ROLE {who} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT")
        await db.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA {where} FROM {who}")
        await db.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {where} FROM {who}")
        await db.execute(f"REVOKE CREATE ON SCHEMA {where} FROM {who}")
        await db.execute(f"GRANT USAGE ON SCHEMA {where} TO {who}")
        for table in tables:
            if table not in NEVER_READ:
                await db.execute(f"GRANT SELECT ON {where}.{_quoted(table)} TO {who}")
                result.read.append(table)
        for table, privileges in writes_for(sweeps).items():
            if table not in tables:
                continue  # its plugin is not installed here
            await db.execute(f"GRANT {', '.join(privileges)} ON {where}.{_quoted(table)} TO {who}")
            result.writes[table] = privileges
            if "INSERT" in privileges and f"{table}_id_seq" in sequences:
                await db.execute(f"GRANT USAGE ON SEQUENCE {where}.{_quoted(table + '_id_seq')} TO {who}")
    return result


async def unrestricted_warning(db: "Database") -> str | None:
    """What to tell the operator at the signer's start when its PostgreSQL role could rewrite what it judges."""
    if not db.is_postgres:
        return None
    role = await db.fetch_val("SELECT current_user")
    if not await db.fetch_val("SELECT has_column_privilege('payouts', 'amount', 'UPDATE')"):
        return None
    return (f"the signer connects to PostgreSQL as {role}, which can rewrite a payout's amount and destination and"
            " the ledger: give it its own role (`orbchain custody signer-role`) and set [signer] database_url")
