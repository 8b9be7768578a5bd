"""The core's operator commands of the ``orbchain`` command.

``migrate``, ``ledger check``, ``custody check``, ``config check``, ``keys export-xpubs``,
``plugins``, ``plugin new``, ``payouts work``, ``chain notify``, ``secrets init``, ``restore recover``,
the operator tools of ``ops_cli.py`` (``webhooks``, ``payouts show``, ``doctor``) and the plugins'
commands. ``serve`` needs the web layer, which the core never imports: ``orbchain.web.serve`` adds it and
``orbchain.cli`` (the console script, also ``python -m orbchain``) puts the
two together. Every command reads the same config (``--config``,
``$ORBCHAIN_CONFIG`` or ``./orbchain.toml``) and environment overrides.
Errors print one line and exit non-zero: no tracebacks for operator mistakes.
Chain adapters built for a command are closed when it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import TYPE_CHECKING, Callable, Sequence

from .plugin_list import cmd_plugins
from .support import close_chains, config_from_args, with_db
from ..infra.config import ConfigError
from ..gateway import Gateway
from ..startup import build_gateway
from .ops import add_ops_commands, cmd_config_check
from .chain_notify import add_chain_command
from .secrets_init import add_secrets_command
from .signer_command import add_signer_command
from .signer_role import add_signer_role_command
from .restore import add_restore_command
from .plugin_scaffold import add_plugin_command
from ..types.registry import StartupError

if TYPE_CHECKING:  # pragma: no cover
    from ..ledger.check import LedgerReport

log = logging.getLogger("orbchain")


AddCommand = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def cmd_migrate(args: argparse.Namespace) -> int:
    from ..infra.migrate import migrate

    config = config_from_args(args)
    if config.database_url.startswith("sqlite"):
        config.data_dir.mkdir(parents=True, exist_ok=True)
    gateway = build_gateway(config)

    async def work(gw: Gateway) -> int:
        if args.check:
            return await _migrate_check(gw)
        ran = await migrate(gw.db, gw.migrations)
        print(f"applied {len(ran)} migration(s)" if ran else "database is up to date")
        return 0

    return asyncio.run(with_db(gateway, work))


async def _migrate_check(gateway: Gateway) -> int:
    """``migrate --check``: 0 when nothing is pending, 1 listing what is (changes nothing)."""
    from ..infra.migrate import pending

    todo = await pending(gateway.db, gateway.migrations)
    if not todo:
        print("database is up to date")
        return 0
    for migration in todo:
        print(f"pending {migration.namespace}:{migration.version:04d}_{migration.name}")
    print(f"{len(todo)} pending migration(s): run `orbchain migrate`")
    return 1


def cmd_ledger_check(args: argparse.Namespace) -> int:
    from ..ledger.book import check_ledger

    gateway = build_gateway(config_from_args(args))

    async def work(gw: Gateway) -> int:
        report = await check_ledger(gw.db)
        for line in report.lines():
            print(line)
        await _record_check(gw, report)
        return 0 if report.ok else 1

    return asyncio.run(with_db(gateway, work))


def cmd_payments_recount(args: argparse.Namespace) -> int:
    """Recount every kept list's totals (payments, deposits, webhook log, a plugin's) from their tables, after
    rows were loaded with triggers off."""
    from ..infra.kept_counts import mismatches, rebuild

    gateway = build_gateway(config_from_args(args))

    async def work(gw: Gateway) -> int:
        wrong = len(await mismatches(gw.db))
        await rebuild(gw.db)
        print(f"list counts rebuilt from their tables ({wrong} key(s) differed)")
        return 0

    return asyncio.run(with_db(gateway, work))


async def _record_check(gateway: Gateway, report: "LedgerReport") -> None:
    """Keep the result for /metrics; a database not yet migrated to hold it still gets its check."""
    from ..health.metrics_db import record_ledger_check

    try:
        await record_ledger_check(gateway.db, report, "cli", gateway.now())
    except Exception as exc:  # noqa: BLE001 - the check's answer matters more than its record
        log.warning("ledger check result not recorded (%s); run `orbchain migrate`", type(exc).__name__)


def cmd_custody_check(args: argparse.Namespace) -> int:
    """Exit 0: every coin covered (a surplus is fine); 1: a shortfall (named); 3: a node could not say."""
    from ..custody.run import amount_formatter, run_custody_check

    gateway = build_gateway(config_from_args(args))

    async def work(gw: Gateway) -> int:
        report = await run_custody_check(gw, "cli")
        for line in report.lines(amount_formatter(gw)):
            print(line)
        return 1 if report.shortfalls else 3 if report.unavailable else 0

    return asyncio.run(with_db(gateway, work))


def cmd_export_xpubs(args: argparse.Namespace) -> int:
    """Print account xpubs for watch-only processes (public keys only)."""
    import json

    from ..addresses.store import export_account_xpubs
    from ..keys import SeedKeyStore, UnknownFamilyError
    from ..keys.secrets import load_secrets

    config = config_from_args(args)
    secrets = load_secrets(config)
    if not secrets.seed_material:
        raise ConfigError("export-xpubs needs the seed: run it where secrets.seed_mnemonic or seed_file is set")
    first, _, last = args.accounts.partition("-")
    if not first.isdigit() or (last and not last.isdigit()):
        raise ConfigError("--accounts must look like 1-100")
    accounts = range(int(first), int(last or first) + 1)
    store = SeedKeyStore.from_secret(secrets.seed_material, config.secrets.seed_passphrase)
    registry = build_gateway(config).address_families
    names = [f.strip() for f in args.families.split(",") if f.strip()]
    try:
        families = ([registry.require(name, args.network) for name in names] if names
                    else [f for f in registry.families(args.network) if f.watch_only_capable])
    except UnknownFamilyError as exc:
        raise ConfigError(f"--families: {exc}") from None
    print(json.dumps(export_account_xpubs(store, args.network, accounts, families), indent=1, sort_keys=True))
    return 0


def cmd_payouts_work(args: argparse.Namespace) -> int:
    """``payouts work``: SIGTERM/SIGINT let the tick in flight finish (to the drain deadline), then exit 0."""
    from ..payouts.worker import run_worker
    from ..keys.secrets import check_signing_role, load_secrets
    from ..payouts.remote_signing import check_remote_capable
    from ..infra.stopping import HARD_MARGIN_SECONDS, arm_exit_deadline, run_until_stopped

    command = "orbchain payouts work"
    config = config_from_args(args)
    gateway = build_gateway(config)
    gateway.secrets = load_secrets(config)  # signing derives keys from the seed, as in `serve`
    check_signing_role(config, gateway.secrets)
    if config.signer.url:
        check_remote_capable(gateway)
    try:
        return asyncio.run(with_db(gateway, lambda gw: run_until_stopped(gw.stop, command,
                                                                         run_worker(gw, once=args.once))))
    finally:
        arm_exit_deadline(HARD_MARGIN_SECONDS, command)  # a thread left running must not keep the exit waiting


CORE_COMMANDS = ("serve", "migrate", "ledger", "custody", "config", "keys", "plugins", "payouts", "webhooks", "doctor",
                 "plugin", "chain", "secrets", "signer")


def _add_plugin_commands(sub: argparse._SubParsersAction) -> None:
    """Sub-commands from plugins; they run with a gateway built from the config."""
    from ..contract.hooks import Hooks
    from ..contract.plugins import get_plugin_manager
    from ..contract.registries import Command, CommandRegistry

    registry = CommandRegistry()
    for name in CORE_COMMANDS:  # taken by the core: a plugin registering one fails as a duplicate
        registry.add(Command(name, "", configure=lambda parser: None))
    Hooks(get_plugin_manager()).register_commands(registry=registry)
    for command in registry:
        if registry.owner(command.name) == "core":
            continue  # the caller adds the core's own sub-commands
        parser = sub.add_parser(command.name, help=command.help)
        command.configure(parser)
        run = parser.get_default("func")
        parser.set_defaults(func=_plugin_runner(run))


def _plugin_runner(run: Callable[[argparse.Namespace, Gateway], int]) -> Callable[[argparse.Namespace], int]:
    def runner(args: argparse.Namespace) -> int:
        gateway = build_gateway(config_from_args(args))
        try:
            return run(args, gateway)
        finally:
            close_chains(gateway)  # closing twice is harmless; a command may close its own

    return runner


def build_parser(commands: Sequence[AddCommand] = ()) -> argparse.ArgumentParser:
    """The parser with ``commands`` (outer layers' commands such as ``serve``) listed first."""
    parser = argparse.ArgumentParser(prog="orbchain", description="Orbchain crypto payment gateway")
    parser.add_argument("--config", help="path to the TOML config (default: $ORBCHAIN_CONFIG or ./orbchain.toml)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in commands:
        add(sub)

    migrate = sub.add_parser("migrate", help="apply pending schema migrations")
    migrate.add_argument("--check", action="store_true",
                         help="apply nothing; exit 1 and list them when migrations are pending (deploy scripts)")
    migrate.set_defaults(func=cmd_migrate)

    ledger = sub.add_parser("ledger", help="ledger tools")
    ledger_sub = ledger.add_subparsers(dest="ledger_command", required=True)
    ledger_sub.add_parser("check", help="prove cached balances equal the sum of postings").set_defaults(
        func=cmd_ledger_check
    )

    payments = sub.add_parser("payments", help="payment tools")
    payments_sub = payments.add_subparsers(dest="payments_command", required=True)
    payments_sub.add_parser("recount", help="rebuild the kept list counts (payments, deposits, webhook log,"
                            " activity) from their tables (their writers wait meanwhile)"
                            ).set_defaults(func=cmd_payments_recount)

    config = sub.add_parser("config", help="configuration tools")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    config_sub.add_parser("check", help="doctor's static checks: config, plugins, chains, secrets (no database)"
                          ).set_defaults(func=cmd_config_check)

    keys = sub.add_parser("keys", help="key custody tools")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    export = keys_sub.add_parser("export-xpubs", help="print account xpubs for watch-only processes")
    export.add_argument("--accounts", required=True, help="merchant key accounts, e.g. 1-500")
    export.add_argument("--network", default="mainnet", choices=("mainnet", "testnet", "regtest"))
    export.add_argument("--families", default="",
                        help="comma-separated address families (default: every watch-only capable family)")
    export.set_defaults(func=cmd_export_xpubs)

    plugins = sub.add_parser("plugins", help="list the plugins: distribution, version, status and hooks")
    plugins.add_argument("--json", action="store_true", help="print a JSON list instead of the table")
    plugins.set_defaults(func=cmd_plugins)

    payouts = sub.add_parser("payouts", help="payout tools")
    payouts_sub = payouts.add_subparsers(dest="payouts_command", required=True)
    work = payouts_sub.add_parser("work", help="sign, broadcast and confirm queued payouts (every 2 s)")
    work.add_argument("--once", action="store_true", help="process the due payouts once, then exit")
    work.set_defaults(func=cmd_payouts_work)
    custody = sub.add_parser("custody", help="custody tools")
    custody_sub = custody.add_subparsers(dest="custody_command", required=True)
    custody_sub.add_parser("check", help="compare what the nodes hold with what the ledger owes, per coin"
                           ).set_defaults(func=cmd_custody_check)
    add_signer_role_command(custody_sub)  # `custody signer-role`, the signer's own PostgreSQL role
    add_ops_commands(sub, payouts_sub)
    add_plugin_command(sub)  # plugin authoring: `plugin new`
    add_chain_command(sub)  # `chain notify`, for a node's -blocknotify
    add_secrets_command(sub)  # `secrets init`, a production gateway's secret files
    add_restore_command(sub)  # `restore recover`, after restoring a backup
    add_signer_command(sub)  # `signer`, the process that holds the seed
    _add_plugin_commands(sub)
    return parser


def _configure_logging(args: argparse.Namespace) -> None:
    """The config's log format and level; text at INFO when the config cannot be read
    (the command itself then reports why, in one line)."""
    from ..infra.config import LoggingConfig
    from ..infra.logs import configure_logging

    try:
        settings = config_from_args(args).logging
    except ConfigError:
        settings = LoggingConfig()
    configure_logging(settings, verbose=args.verbose, force=False)


def main(argv: Sequence[str] | None = None, *, commands: Sequence[AddCommand] = ()) -> int:
    """Run one command; ``orbchain.cli.main`` passes the web layer's ``serve`` in ``commands``."""
    parser = build_parser(commands)
    args = parser.parse_args(argv)
    _configure_logging(args)
    try:
        return args.func(args)
    except (ConfigError, StartupError) as exc:
        print(f"orbchain: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
