"""The signer's own PostgreSQL role: read what it judges, write only what signing records (issue 45).

``orbchain signer`` judges a payout on facts it reads itself (the row, the
ledger reservation, the approvals, the window counts) and records the verdict
and the signature. Under the owner's role a leaked signer DSN, or a fault in
the signer, could rewrite any row: a payout's amount or destination, the
ledger. Under this role it can only:

* SELECT every table of the schema except :data:`NEVER_READ` (the members'
  credentials and sign-in state: nothing a signer judges);
* write where signing records something (:data:`SIGNING_WRITES`): the
  payout's signing columns (never ``amount``, ``destination``, ``merchant_id``,
  ``coin``, ``chain``, ``status``), the coin's signing lock, a bump's counted
  fee, a hold's announcements, each chain's own signing bookkeeping
  (selected outputs and change, nonces, signed versions, a Lightning
  payout's claim on its invoice), the signing jobs' sweeps and the postings a
  final sweep owes (``sweep_bookings``).

Never the ledger: ``serve`` (the owner's role) books what a sweep recorded
(core/ledger/sweep_bookings.py), after checking it moves only the sweep
chain's outside-world accounts and the network fees. There is one list: the
``--sweeps`` widening (ledger writes for the sweeps) is gone.

The grant is computed from this module, never accumulated: every privilege the
role held on the schema's tables and sequences is revoked and the list granted
again, in one transaction, so running it twice, or after a migration, leaves
exactly the current list. Tables a plugin did not create (its chain is not
installed) are skipped.

:func:`check_signer_role` compares what the role holds with the same computed
list (``orbchain doctor``): a table created by a later migration is a missing
SELECT, a privilege added by hand an extra one, both named, so a signer that
would fail with "permission denied" at signing time is found before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, NamedTuple

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

SIGNING_WRITES: dict[str, tuple[str, ...]] = {
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
    "hot_wallet_spends": ("INSERT",),  # a gas top-up counted against the caps (signing_gate.authorize_hot_wallet_spend)
    # The signing jobs' sweeps (deposit sweeps, hot to cold, consolidations) and what a final one owes the ledger,
    # which serve books.
    "bitcoin_cold_sweeps": ("INSERT", "UPDATE"), "bitcoin_consolidations": ("INSERT", "UPDATE"),
    "evm_sweeps": ("INSERT", "UPDATE"),
    "evm_sweep_marks": ("INSERT", "UPDATE"), "tron_sweeps": ("INSERT", "UPDATE"),
    "tron_sweep_marks": ("INSERT", "UPDATE"), "solana_sweep_marks": ("INSERT", "UPDATE"),
    "sweep_bookings": ("INSERT",),
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


@dataclass(frozen=True)
class GrantPlan:
    """The privileges the role should hold on a schema with these tables: what the grant gives, the check expects."""

    read: tuple[str, ...]
    writes: dict[str, tuple[str, ...]]
    sequences: tuple[str, ...]


def plan_grant(tables: Iterable[str], sequences: Iterable[str]) -> GrantPlan:
    """The signer's list on a schema: tables of a plugin not installed here are skipped."""
    present, known = set(tables), set(sequences)
    writes = {table: privileges for table, privileges in SIGNING_WRITES.items() if table in present}
    return GrantPlan(read=tuple(sorted(present - set(NEVER_READ))), writes=writes,
                     sequences=tuple(f"{table}_id_seq" for table, privileges in writes.items()
                                     if "INSERT" in privileges and f"{table}_id_seq" in known))


class Privilege(NamedTuple):
    """One privilege on a table, one of its columns (``column``), a sequence or the schema (``schema <name>``)."""

    name: str
    target: str
    column: str = ""


GRANT_ITEM = re.compile(r"(?P<name>[A-Z]+)(?: \((?P<columns>[^)]*)\))?")


def planned_privileges(plan: GrantPlan, schema: str) -> frozenset[Privilege]:
    """``plan`` as single privileges, a column list (``UPDATE (a, b)``) one privilege per column."""
    held = {Privilege("USAGE", f"schema {schema}")}
    held.update(Privilege("SELECT", table) for table in plan.read)
    held.update(Privilege("USAGE", sequence) for sequence in plan.sequences)
    for table, privileges in plan.writes.items():
        for item in privileges:
            found = GRANT_ITEM.fullmatch(item)
            assert found is not None, item  # the lists above are this module's own
            columns = found["columns"].split(", ") if found["columns"] else [""]
            held.update(Privilege(found["name"], table, column) for column in columns)
    return frozenset(held)


@dataclass(frozen=True)
class RoleDrift:
    """What the role lacks of its list (a signer failing with "permission denied") and holds beyond it."""

    missing: tuple[Privilege, ...]
    extra: tuple[Privilege, ...]

    @property
    def current(self) -> bool:
        return not self.missing and not self.extra


def role_drift(held: Iterable[Privilege], expected: Iterable[Privilege]) -> RoleDrift:
    """Compare privileges: a privilege on a whole table covers each of its columns, so a column expected and
    the whole table held is no missing privilege but an extra one (the other columns)."""
    have, want = set(held), set(expected)
    missing = [p for p in want if p not in have and p._replace(column="") not in have]
    extra = [p for p in have if p not in want and not (p.column and p._replace(column="") in want)]
    return RoleDrift(tuple(sorted(missing)), tuple(sorted(extra)))


def described(privileges: Iterable[Privilege], most: int = 8) -> str:
    """``INSERT on a, UPDATE (x, y) on b``: one item per privilege and target, at most ``most`` of them."""
    columns: dict[tuple[str, str], list[str]] = {}
    for privilege in privileges:
        columns.setdefault((privilege.name, privilege.target), []).extend([privilege.column] if privilege.column
                                                                          else [])
    items = [f"{name} ({', '.join(cols)}) on {target}" if cols else f"{name} on {target}"
             for (name, target), cols in sorted(columns.items(), key=lambda item: (item[0][1], item[0][0]))]
    more = f" and {len(items) - most} more" if len(items) > most else ""
    return ", ".join(items[:most]) + more


def _quoted(name: str) -> str:
    return f'"{name}"'


async def _refusal(db: "Database", role: str, schema: str, *, running: bool) -> str | None:
    """Why no grant can restrict ``role``; ``running``: the grant's own connected role is refused too."""
    found = await db.fetch_one("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = :r", {"r": role})
    if found is not None and (found["rolsuper"] or found["rolbypassrls"]):
        return f"role {role} is a superuser (or bypasses row security): no grant can restrict it"
    owners = {r["name"] for r in await db.fetch_all(
        "SELECT pg_get_userbyid(nspowner) AS name FROM pg_namespace WHERE nspname = :s"
        " UNION SELECT tableowner FROM pg_tables WHERE schemaname = :s", {"s": schema})}
    if role in owners or (running and role == await db.fetch_val("SELECT current_user")):
        return (f"role {role} owns schema {schema} or its tables{' (or runs this command)' if running else ''}:"
                " an owner is not restricted by grants; name a role of the signer's own")
    member_of = [r["name"] for r in await db.fetch_all(
        "SELECT pg_get_userbyid(m.roleid) AS name FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member"
        " WHERE r.rolname = :r ORDER BY 1", {"r": role})]
    if member_of:
        return (f"role {role} is a member of {', '.join(member_of)}: it could act with their privileges"
                " (SET ROLE); revoke the membership or name a role of the signer's own")
    return None


async def _schema_objects(db: "Database", schema: str) -> tuple[list[str], set[str]]:
    """The schema's tables and sequences, which the list is computed from."""
    tables = [r["tablename"] for r in await db.fetch_all(
        "SELECT tablename FROM pg_tables WHERE schemaname = :s ORDER BY tablename", {"s": schema})]
    sequences = {r["name"] for r in await db.fetch_all(
        "SELECT sequencename AS name FROM pg_sequences WHERE schemaname = :s", {"s": schema})}
    return tables, sequences


async def grant_signer_role(db: "Database", role: str) -> RoleGrant:
    """Create ``role`` (LOGIN, no password: the operator sets its authentication) if missing, and give it
    exactly the signer's privileges on the connected schema; idempotent. ``RoleRefused`` before any change."""
    if not db.is_postgres:
        raise RoleRefused("a signer role is PostgreSQL's: on SQLite the signer runs inside `serve`"
                          " ([signer] in_process), with no database role to restrict")
    if not ROLE_NAME.fullmatch(role):
        raise RoleRefused(f"role name {role!r}: lower-case letters, digits and _ (a plain SQL identifier)")
    schema = await db.fetch_val("SELECT current_schema()")
    refused = await _refusal(db, role, schema, running=True)
    if refused:
        raise RoleRefused(refused)
    created = await db.fetch_val("SELECT 1 FROM pg_roles WHERE rolname = :r", {"r": role}) is None
    plan = plan_grant(*await _schema_objects(db, schema))
    result = RoleGrant(role, schema, created=created, read=list(plan.read), writes=plan.writes)
    who, where = _quoted(role), _quoted(schema)
    async with db.transaction():
        if created:
            await db.execute(f"CREATE ROLE {who} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT")
        await db.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA {where} FROM {who}")
        await db.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {where} FROM {who}")
        await db.execute(f"REVOKE CREATE ON SCHEMA {where} FROM {who}")
        await db.execute(f"GRANT USAGE ON SCHEMA {where} TO {who}")
        for table in plan.read:
            await db.execute(f"GRANT SELECT ON {where}.{_quoted(table)} TO {who}")
        for table, privileges in plan.writes.items():
            await db.execute(f"GRANT {', '.join(privileges)} ON {where}.{_quoted(table)} TO {who}")
        for sequence in plan.sequences:
            await db.execute(f"GRANT USAGE ON SEQUENCE {where}.{_quoted(sequence)} TO {who}")
    return result


# Every privilege a role can hold on the schema, each asked of PostgreSQL (has_*_privilege counts grants to
# PUBLIC and to whole tables); a column's only where the whole table's is not held.
HELD_PRIVILEGES = """
SELECT p.name, c.relname AS target, '' AS col FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) AS p(name)
 WHERE n.nspname = :s AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND has_table_privilege(:r, c.oid, p.name)
UNION ALL
SELECT p.name, c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
 JOIN pg_namespace n ON n.oid = c.relnamespace
 CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) AS p(name)
 WHERE n.nspname = :s AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 AND NOT a.attisdropped
   AND has_column_privilege(:r, c.oid, a.attnum, p.name) AND NOT has_table_privilege(:r, c.oid, p.name)
UNION ALL
SELECT p.name, c.relname, '' FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 CROSS JOIN unnest(ARRAY['USAGE', 'SELECT', 'UPDATE']) AS p(name)
 WHERE n.nspname = :s AND c.relkind = 'S' AND has_sequence_privilege(:r, c.oid, p.name)
UNION ALL
SELECT p.name, 'schema ' || :s, '' FROM unnest(ARRAY['USAGE', 'CREATE']) AS p(name)
 WHERE has_schema_privilege(:r, :s, p.name)
"""


@dataclass(frozen=True)
class RoleCheck:
    """The signer role's grants against its list (``orbchain doctor``)."""

    role: str
    problem: str = ""  # the role is missing, or no grant can restrict it
    drift: RoleDrift = RoleDrift((), ())

    @property
    def current(self) -> bool:
        return not self.problem and self.drift.current

    def detail(self) -> str:
        if self.problem:
            return self.problem
        if self.current:
            return "holds exactly the signer's list"
        said = ([f"missing {described(self.drift.missing)}"] if self.drift.missing else []) + (
            [f"extra {described(self.drift.extra)}"] if self.drift.extra else [])
        return f"{'; '.join(said)}: run `orbchain custody signer-role {self.role}`"


async def check_signer_role(db: "Database", role: str) -> RoleCheck:
    """The privileges ``role`` holds on the connected schema against the signer's list (PostgreSQL)."""
    if await db.fetch_val("SELECT 1 FROM pg_roles WHERE rolname = :r", {"r": role}) is None:
        return RoleCheck(role, f"does not exist: run `orbchain custody signer-role {role}`")
    schema = await db.fetch_val("SELECT current_schema()")
    refused = await _refusal(db, role, schema, running=False)
    if refused:
        return RoleCheck(role, refused)
    tables, sequences = await _schema_objects(db, schema)
    held = [Privilege(r["name"], r["target"], r["col"])
            for r in await db.fetch_all(HELD_PRIVILEGES, {"s": schema, "r": role})]
    return RoleCheck(role, drift=role_drift(held, planned_privileges(plan_grant(tables, sequences), schema)))


async def unrestricted_warning(db: "Database") -> str | None:
    """What to tell the operator at the signer's start when its PostgreSQL role could rewrite what it judges."""
    if not db.is_postgres:
        return None
    role = await db.fetch_val("SELECT current_user")
    if not await db.fetch_val("SELECT has_column_privilege('payouts', 'amount', 'UPDATE')"):
        return None
    return (f"the signer connects to PostgreSQL as {role}, which can rewrite a payout's amount and destination and"
            " the ledger: give it its own role (`orbchain custody signer-role`) and set [signer] database_url")
