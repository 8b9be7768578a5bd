"""Operator commands for running a gateway: webhooks, one payout, and ``doctor``.

``orbchain webhooks pending`` lists what waits in the outbox,
``orbchain webhooks redeliver <event_id>`` sends one event again now,
``orbchain payouts show <track_id>`` prints one payout's state machine,
``orbchain payouts release|cancel <track_id>`` answers a payout the signer's policy held, and
``orbchain doctor`` checks config, chains, secrets, database, migrations, the
signer's own role's grants, nodes, clock skew and disk, one line each, exiting 1 when something fails;
``orbchain config check`` runs the same static checks (config, chains,
secrets) without a database or a node, so the two give one verdict. They
print operator-facing facts (ids, states, errors), never a secret: no
webhook secret, no signed transaction bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable

from .support import config_from_args, with_db
from ..infra.config import Config, ConfigError
from ..infra.netguard import PRIVATE_URLS_IN_PRODUCTION
from ..events.outbox import PENDING

if TYPE_CHECKING:  # pragma: no cover
    from ..gateway import Gateway

Work = Callable[["Gateway"], Awaitable[int]]
# doctor thresholds: TOTP steps are 30 s and JWT expiry is checked to the second.
CLOCK_WARN_SECONDS, CLOCK_FAIL_SECONDS = 2.0, 30.0
DISK_WARN_BYTES, DISK_FAIL_BYTES = 1 << 30, 100 << 20
DIRECT_URL_SECONDS = 10.0  # connecting twice to the direct URL; an unanswered connect is a failure, not a hang


def _when(ts: int | None) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(int(ts)))


def _run(args: argparse.Namespace, work: Work) -> int:
    from ..startup import build_gateway

    gateway = build_gateway(config_from_args(args))
    return asyncio.run(with_db(gateway, work))


# -- webhooks -------------------------------------------------------------------------------------


def cmd_webhooks_pending(args: argparse.Namespace) -> int:
    async def work(gw: "Gateway") -> int:
        total = int(await gw.db.fetch_val("SELECT COUNT(*) FROM webhook_events WHERE status = :p", {"p": PENDING}))
        rows = await gw.db.fetch_all(
            "SELECT event_id, event_type, merchant_id, attempts, next_attempt_at, created_at, last_error"
            " FROM webhook_events WHERE status = :p ORDER BY created_at, event_id LIMIT :n",
            {"p": PENDING, "n": args.limit})
        for r in rows:
            print(f"{r['event_id']}  {r['event_type']}  merchant {r['merchant_id']}  attempts {r['attempts']}"
                  f"  next {_when(r['next_attempt_at'])}  created {_when(r['created_at'])}"
                  f"  last error: {r['last_error'] or '-'}")
        print(f"{total} webhook event(s) pending" + (f", {len(rows)} shown" if total > len(rows) else ""))
        return 0

    return _run(args, work)


def cmd_webhooks_redeliver(args: argparse.Namespace) -> int:
    from ..events.webhooks import deliver_now, requeue_event

    async def work(gw: "Gateway") -> int:
        if not await requeue_event(gw, args.event_id):
            print(f"no webhook event {args.event_id}")
            return 1
        delivered = await deliver_now(gw, args.event_id)
        row = await gw.db.fetch_one("SELECT status, attempts, last_error FROM webhook_events WHERE event_id = :e",
                                    {"e": args.event_id})
        assert row is not None
        if delivered:
            print(f"{args.event_id} delivered")
            return 0
        print(f"{args.event_id} not delivered now ({row['last_error'] or 'no attempt made'}); status {row['status']},"
              " the delivery job keeps retrying" if row["status"] == PENDING else
              f"{args.event_id} not delivered: {row['last_error'] or row['status']}")
        return 1

    return _run(args, work)


# -- payouts --------------------------------------------------------------------------------------

PAYOUT_FIELDS = ("track_id", "merchant_id", "coin", "chain", "destination", "amount", "network_fee", "status",
                 "stage", "tx_hash", "confirmations", "failure_reason", "attempts", "last_error", "idem_key",
                 "external_id", "refund_of_payment_id", "created_at", "updated_at", "next_attempt_at",
                 "finished_at", "policy_hold", "authorized_at", "policy_released_by")


def cmd_payouts_show(args: argparse.Namespace) -> int:
    from ..infra.db import Database

    async def work(gw: "Gateway") -> int:
        row = await gw.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": args.track_id})
        if row is None:
            print(f"no payout {args.track_id}")
            return 1
        coin = gw.coins.get(row["coin"])
        for name in PAYOUT_FIELDS:
            value = row.get(name)
            if name in ("amount", "network_fee") and value is not None:
                units = Database.to_int(value)
                value = f"{coin.format(units)} {row['coin']}" if coin else f"{units} base units"
            elif name.endswith("_at"):
                value = _when(value)
            print(f"{name:>20}: {'-' if value is None else value}")
        return 0

    return _run(args, work)


def _policy_decision(args: argparse.Namespace, cancel: bool) -> int:
    """``payouts release|cancel <id>``: the operator's answer to a payout the signer's policy held."""
    from ..keys.secrets import load_secrets
    from ..payouts.confirm_gate import NOT_SIGNED_FOR
    from ..payouts.policy_holds import cancel_policy_hold, find_held, release_policy_hold
    from ..startup import build_gateway

    config = config_from_args(args)
    gateway = build_gateway(config)
    gateway.secrets = load_secrets(config)  # the reservation proof recomputes the binding digest

    async def work(gw: "Gateway") -> int:
        row = await find_held(gw, args.payout)
        if row is None:
            print(f"no payout {args.payout}")
            return 1
        by = f"operator:{args.by}" if args.by else "operator"
        moved = await (cancel_policy_hold if cancel else release_policy_hold)(gw, row["id"], by)
        if moved is None and row["policy_hold"] == NOT_SIGNED_FOR and not cancel:
            print(f"payout {row['track_id']} cannot be released: its transaction {row['tx_hash']} is on the chain"
                  f" but was not signed for it ({NOT_SIGNED_FOR}); releasing would pay it again. Cancel it instead.")
            return 1
        if moved is None:
            print(f"payout {row['track_id']} is not held by the signing policy (stage {row['stage']},"
                  f" status {row['status']})")
            return 1
        if cancel:
            print(f"payout {moved['track_id']} cancelled (was held: {row['policy_hold']}); reserved money re-credited")
        else:
            print(f"payout {moved['track_id']} released (was held: {row['policy_hold']}); the worker signs it next")
        return 0

    return asyncio.run(with_db(gateway, work))


def cmd_payouts_release(args: argparse.Namespace) -> int:
    return _policy_decision(args, cancel=False)


def cmd_payouts_cancel(args: argparse.Namespace) -> int:
    return _policy_decision(args, cancel=True)


# -- doctor ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    level: str  # OK, WARN or FAIL
    check: str
    detail: str

    def line(self) -> str:
        return f"{self.level:<4} {self.check}: {self.detail}"


def disk_finding(path: Path) -> Finding:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    usage = shutil.disk_usage(probe)
    detail = f"{usage.free / (1 << 30):.1f} GiB free of {usage.total / (1 << 30):.1f} GiB at {probe}"
    if usage.free < DISK_FAIL_BYTES:
        return Finding("FAIL", "disk", detail)
    return Finding("WARN" if usage.free < DISK_WARN_BYTES else "OK", "disk", detail)


def clock_finding(skew: float | None) -> Finding:  # float ok: seconds of clock skew
    if skew is None:
        return Finding("OK", "clock", "SQLite runs on this host: no second clock to compare")
    detail = f"this host is {skew:+.2f} s from the database server"
    if abs(skew) > CLOCK_FAIL_SECONDS:
        return Finding("FAIL", "clock", detail + " (TOTP codes and token expiry will be wrong)")
    return Finding("WARN" if abs(skew) > CLOCK_WARN_SECONDS else "OK", "clock", detail)


def static_findings(gateway: "Gateway") -> list[Finding]:
    """What the config alone decides, without a database or a node: ``config check`` runs exactly these,
    ``doctor`` runs them first, so the two never disagree about the file (issue 32)."""
    from ..keys.secrets import load_secrets

    config = gateway.config
    chains = len(list(gateway.chains))
    findings = [Finding("OK", "config", f"{config.source}; environment {config.server.environment};"
                                        f" {chains} chain adapter(s)")]
    findings.append(chains_finding(chains, config.is_development))
    findings.extend(private_urls_findings(config))
    findings.append(database_urls_finding(config))
    try:
        loaded = load_secrets(config, write=False)  # a check writes nothing, not even a development secret
        later = (f" ({', '.join(loaded.to_generate)} to be generated into {config.data_dir} at the first start)"
                 if loaded.to_generate else "")
        findings.append(Finding("OK", "secrets", f"JWT secret, seed and receipt key load{later}"))
        findings.append(signer_finding(gateway, bool(loaded.seed_material)))
        if loaded.seed_material:
            findings.append(seed_finding(config, loaded.seed_encrypted))
    except ConfigError as exc:
        findings.append(Finding("FAIL", "secrets", str(exc)))
    return findings


def seed_finding(config: "Config", encrypted: bool) -> Finding:
    """Whether the seed this config loads is encrypted at rest; production warns a plaintext one (an operator may
    keep it in an encrypted systemd credential or on an encrypted disk instead, which this cannot see)."""
    if encrypted:
        return Finding("OK", "seed", "encrypted at rest (Argon2id + AES-GCM); its passphrase opened it")
    if config.is_development:
        return Finding("OK", "seed", "plaintext (development)")
    return Finding("WARN", "seed", "plaintext at rest: `orbchain secrets encrypt-seed` encrypts it, or keep it in"
                                   " an encrypted systemd credential (docs/operations.md \"The seed encrypted at"
                                   " rest\")")


def signer_finding(gateway: "Gateway", holds_seed: bool) -> Finding:
    """Who signs this config's payouts; the rules ``serve`` starts by (docs/operations.md "Custody: a signer on
    its own host"), so the check and the start agree."""
    from ..payouts.remote_signing import check_remote_capable

    signer = gateway.config.signer
    if signer.url:
        try:
            check_remote_capable(gateway)
        except ConfigError as exc:
            return Finding("FAIL", "signer", str(exc))
        return Finding("OK", "signer", f"payouts signed by the signer at {signer.url}; no seed here")
    if not holds_seed:
        return Finding("OK", "signer", "no seed and no signer: this process signs no payout")
    if gateway.config.is_development:
        return Finding("OK", "signer", "payouts signed in this process (development)")
    if signer.in_process:
        return Finding("WARN", "signer", "this host is also the signer ([signer] in_process = true): the seed is"
                                         " in the process that faces the internet")
    if signer.key_file:
        said = ("a signer's config: `orbchain signer` signs with it; `serve` and `payouts work` refuse it (they take"
                " [signer] url)")
        if signer.database_url:
            return Finding("OK", "signer", f"{said}; it connects as its own database role ([signer] database_url)")
        if gateway.config.database_url.startswith("postgresql"):
            return Finding("WARN", "signer", f"{said}; it connects with [database] url's role, which can rewrite"
                                             " any payout and the ledger: give it its own (`orbchain custody"
                                             " signer-role`, then [signer] database_url)")
        return Finding("OK", "signer", said)
    return Finding("FAIL", "signer", "this config holds the seed but names no signer: set [signer] url (a signer"
                                     " on its own host) or [signer] in_process = true")


async def signer_role_finding(gateway: "Gateway") -> Finding | None:
    """The signer's own role (``[signer] database_url``'s user) holds exactly its list, on PostgreSQL: a table a
    migration added since the grant is a signer failing with "permission denied" at signing time."""
    from ..custody.signer_role import check_signer_role
    from ..infra.db_urls import url_user

    url = gateway.config.signer.database_url
    if not url or not gateway.db.is_postgres:
        return None
    role = url_user(url)
    if not role:
        return Finding("WARN", "signer role", "[signer] database_url names no user: its role cannot be checked")
    checked = await check_signer_role(gateway.db, role)
    return Finding("OK" if checked.current else "FAIL", f"signer role {role}", checked.detail())


async def restore_finding(gateway: "Gateway") -> Finding:
    """The last after-restore recovery: a restore itself leaves no trace the database could see."""
    from ..watching.recovery import last_recovery

    done = await last_recovery(gateway)
    if done is None:
        return Finding("OK", "restore", "no recovery recorded (after restoring a backup, run"
                                        " `orbchain restore recover <backup>` before starting)")
    return Finding("OK", "restore", f"recovered from {done.label} at {_when(done.recovered_at)}"
                                    f" ({done.addresses} address(es) watched)")


async def payment_counts_finding(gateway: "Gateway") -> Finding:
    """The counts every kept list's total reads (payments, deposits, webhook log, the activity log; m0056)
    against ``COUNT(*)`` of their tables: FAIL with the repair when they differ (rows written with the
    triggers off). Reads every row of those tables once: a check for the operator."""
    from ..infra.kept_counts import mismatches

    wrong = await mismatches(gateway.db)
    if not wrong:
        return Finding("OK", "list counts", "equal to COUNT(*) of every counted list")
    first = wrong[0]
    keys = " ".join(str(value) for name, value in first.items() if name not in ("list", "merchant_id", "difference"))
    return Finding("FAIL", "list counts",
                   f"{len(wrong)} counted key(s) differ from COUNT(*), e.g. {first['list']} of {first['merchant_id']}"
                   f" {keys} by {first['difference']:+d}; rows were written with triggers off: recount with"
                   " `orbchain payments recount` while nothing writes")


async def custody_finding(gateway: "Gateway") -> Finding:
    """The last custody check: FAIL while a coin's last result is a shortfall (docs/operations.md)."""
    from ..custody.report import SHORTFALL, UNAVAILABLE
    from ..custody.run import amount_formatter
    from ..custody.store import last_check_at, latest_by_coin
    from ..payouts.pauses import paused_coins

    at = await last_check_at(gateway.db)
    if at is None:
        return Finding("WARN", "custody", "never checked: run `orbchain custody check` (or keep custody.check_seconds)")
    coins, paused, fmt = await latest_by_coin(gateway.db), await paused_coins(gateway.db), amount_formatter(gateway)
    short = [f"{c['coin']} short by {fmt(c['coin'], -c['difference'])}" + (" (payouts paused)" if c["coin"] in paused
                                                                            else "")
             for c in coins if c["status"] == SHORTFALL]
    if short:
        return Finding("FAIL", "custody", f"at {_when(at)}: " + ", ".join(short))
    unknown = [c["coin"] for c in coins if c["status"] == UNAVAILABLE]
    if unknown:
        return Finding("WARN", "custody", f"at {_when(at)}: the node could not say for " + ", ".join(unknown))
    return Finding("OK", "custody", f"at {_when(at)}: every checked coin covered")


def private_urls_findings(config: Config) -> list[Finding]:
    """The SSRF guard switched off where strangers sign up: said, not refused (an operator may mean it)."""
    if config.webhooks.allow_private_urls and not config.is_development:
        return [Finding("WARN", "webhooks", PRIVATE_URLS_IN_PRODUCTION)]
    return []


def database_urls_finding(config: Config) -> Finding:
    """Which database URLs the gateway uses, passwords hidden: behind PgBouncer the operator must see that
    ``direct_url`` is set, and where it points, before anything else goes wrong (issue 33)."""
    from ..infra.db_urls import redacted_url

    url = redacted_url(config.database_url)
    if not config.database_url.startswith("postgres"):
        return Finding("OK", "database urls", f"url {url} (SQLite: no direct_url)")
    direct = config.database.direct_url
    where = f"direct_url {redacted_url(direct)}" if direct else "direct_url not set"
    use = ("queries go through url, LISTEN and the job locks through direct_url" if direct else
           "url must then keep sessions (PostgreSQL itself or a pool_mode = session pool)")
    read = config.database.read_url
    reports = f"; read_url {redacted_url(read)}: the analytics report reads this standby" if read else ""
    return Finding("OK", "database urls", f"url {url}; {where} ([database] direct_url, env"
                                          f" ORBCHAIN_DATABASE_DIRECT_URL): {use}{reports}")


async def direct_url_finding(config: Config) -> Finding | None:
    """``direct_url`` connects and keeps sessions, judged as at the start (core/infra/pg_sessions.py); None
    without one. A transaction pooler there would leave job locks and LISTEN on sessions nobody owns."""
    from ..infra.db_faults import unavailable_cause
    from ..infra.pg_sessions import POOLER_SETTING, keeps_sessions
    from ..infra.pg_side import asyncpg_target

    direct = config.database.direct_url
    if not direct:
        return None
    try:
        keeps = await asyncio.wait_for(keeps_sessions(*asyncpg_target(direct)), DIRECT_URL_SECONDS)
    except Exception as exc:  # noqa: BLE001 - whatever stops a connection is what the operator must read
        cause = unavailable_cause(exc) or f"{type(exc).__name__}: {exc}"
        return Finding("FAIL", "direct_url", f"cannot connect ({cause})")
    if not keeps:
        return Finding("FAIL", "direct_url", f"goes through a transaction pooler: {POOLER_SETTING}")
    return Finding("OK", "direct_url", "connects and keeps its session (PostgreSQL itself or a session pool)")


def chains_finding(chains: int, development: bool) -> Finding:
    """A production gateway with no chain adapter serves checkouts no payment can ever reach."""
    if chains:
        return Finding("OK", "chains", f"{chains} chain adapter(s) can receive payments")
    detail = ("no chain adapter: no payment can be received; configure a chain plugin block"
              " (docs/operations.md, \"First production run\")")
    return Finding("WARN" if development else "FAIL", "chains", detail)


async def doctor_findings(gateway: "Gateway") -> list[Finding]:
    from ..health.readiness import check_readiness

    config = gateway.config
    findings = static_findings(gateway)
    readiness = await check_readiness(gateway)
    if not readiness.database:
        findings.append(Finding("FAIL", "database", f"cannot query ({readiness.database_error})"))
    else:
        findings.append(Finding("OK", "database", config.database_url.split(":", 1)[0]))
        pending = readiness.migrations_pending or 0
        findings.append(Finding("FAIL" if pending else "OK", "migrations",
                                f"{pending} pending: run `orbchain migrate`" if pending else "up to date"))
        skew = None
        if gateway.db.is_postgres:
            before = time.time()
            server = float(await gateway.db.fetch_val("SELECT EXTRACT(EPOCH FROM clock_timestamp())"))
            skew = (before + time.time()) / 2 - server
        findings.append(clock_finding(skew))
        if not pending:
            findings.append(await restore_finding(gateway))
            findings.append(await custody_finding(gateway))
            findings.append(await payment_counts_finding(gateway))
            role = await signer_role_finding(gateway)
            if role is not None:
                findings.append(role)
    direct = await direct_url_finding(config)
    if direct is not None:
        findings.append(direct)
    for chain in readiness.chains:
        if not chain.reachable:
            findings.append(Finding("FAIL", f"chain {chain.chain}", f"node unreachable ({chain.error})"))
        elif not chain.synced:
            findings.append(Finding("WARN", f"chain {chain.chain}",
                                    f"node at {chain.node_height}, scanner at {chain.scanned_height}"
                                    f" ({chain.error or f'{chain.lag} blocks behind'})"))
        else:
            findings.append(Finding("OK", f"chain {chain.chain}", f"node at {chain.node_height}, lag {chain.lag}"))
    findings.append(disk_finding(config.data_dir))
    return findings


def report(findings: list[Finding], after: str = "") -> int:
    """Print one line per finding and the verdict (``after`` appended to it); 1 when any failed."""
    for finding in findings:
        print(finding.line())
    failed = sum(f.level == "FAIL" for f in findings)
    print((f"{failed} problem(s)" if failed else "no problems found") + after)
    return 1 if failed else 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from ..infra.db_faults import unavailable_cause
    from ..startup import build_gateway

    gateway = build_gateway(config_from_args(args))

    async def run() -> int:
        try:
            await gateway.db.connect()
        except Exception as exc:
            # The start's own refusal (a pooler where a session is needed) or no database at all: one line
            # among the others, so the operator reads every finding in one pass.
            cause = str(exc) if isinstance(exc, ConfigError) else unavailable_cause(exc)
            if cause is None:
                raise
            await gateway.close_chains()
            direct = await direct_url_finding(gateway.config)
            return report([*static_findings(gateway), Finding("FAIL", "database", f"cannot connect ({cause})"),
                           *([direct] if direct else []), disk_finding(gateway.config.data_dir)])
        try:
            return report(await doctor_findings(gateway))
        finally:
            await gateway.close_chains()
            await gateway.db.disconnect()

    return asyncio.run(run())


def cmd_config_check(args: argparse.Namespace) -> int:
    """``doctor``'s static checks (config, chains, secrets); says plainly what it leaves to ``doctor``."""
    from ..startup import build_gateway
    from .support import close_chains

    gateway = build_gateway(config_from_args(args))
    try:
        findings = static_findings(gateway)
    finally:
        close_chains(gateway)
    return report(findings, " in the config (database, migrations, nodes, clock and disk are not checked here:"
                            " run `orbchain doctor`)")


def add_ops_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]",
                     payouts_sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """``webhooks``, ``doctor`` and ``payouts show`` (``payouts`` itself belongs to cli.py)."""
    webhooks = sub.add_parser("webhooks", help="webhook outbox tools")
    webhooks_sub = webhooks.add_subparsers(dest="webhooks_command", required=True)
    pending = webhooks_sub.add_parser("pending", help="list webhook events waiting to be delivered")
    pending.add_argument("--limit", type=int, default=50, help="show at most this many (default 50)")
    pending.set_defaults(func=cmd_webhooks_pending)
    redeliver = webhooks_sub.add_parser("redeliver", help="send one webhook event again now")
    redeliver.add_argument("event_id")
    redeliver.set_defaults(func=cmd_webhooks_redeliver)
    show = payouts_sub.add_parser("show", help="print one payout's state")
    show.add_argument("track_id")
    show.set_defaults(func=cmd_payouts_show)
    decisions = (("release", cmd_payouts_release,
                  "let a payout held by the signing policy past the caps and allow-lists (never its reservation)"),
                 ("cancel", cmd_payouts_cancel,
                  "fail a payout held by the signing policy and re-credit what the ledger reserved for it"))
    for name, func, words in decisions:
        decision = payouts_sub.add_parser(name, help=words)
        decision.add_argument("payout", help="the payout's track id or id")
        decision.add_argument("--by", default="", help="who decides (written to the payout and the activity log)")
        decision.set_defaults(func=func)
    doctor = sub.add_parser("doctor", help="check config, chains, secrets, database, nodes, clock and disk")
    doctor.set_defaults(func=cmd_doctor)
