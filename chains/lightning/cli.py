"""``orbchain lightning pay|invoice``: play payer and payee of the devnet Lightning node from a shell.

* ``pay <bolt11>``: a payer pays one of the node's invoices (a BTC_LN
  payment's ``lightning.bolt11``). The node marks it settled; the server's
  ``lightning.poll`` job credits it through the ordinary settlement path
  within ``poll_seconds``, exactly as it would notice a real node's.
* ``invoice <amount>``: an invoice of the simulated payee, for ``amount``
  BTC (``0`` or omitted: an invoice without an amount), to use as a BTC_LN
  payout destination.

Each command opens the gateway's database itself and applies the plugin's
migrations if they are missing (like ``orbchain devnet``). Mistakes print
one line and exit 2; so does a gateway whose Lightning backend is not the
devnet.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from ...api import AmountError, migrate
from .devnet import DevnetLightningBackend, DevnetLightningError
from .receive import lightning_chain
from .settings import PLUGIN_NAME
from .settlement import COIN

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

USAGE_ERROR = 2


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="lightning_command", required=True, metavar="{pay,invoice}")
    pay = sub.add_parser("pay", help="pay one of the devnet node's invoices (a BTC_LN payment's bolt11)")
    pay.add_argument("bolt11", help="the invoice, as shown on the payment page or in its lightning block")
    invoice = sub.add_parser("invoice", help="an invoice of the simulated payee, for a BTC_LN payout")
    invoice.add_argument("amount", nargs="?", default="0", help="amount in BTC, e.g. 0.0001 (0: no amount)")
    invoice.add_argument("--memo", default="devnet payee", help="the invoice's description")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, gateway: "Gateway") -> int:
    return asyncio.run(_run(args, gateway))


def _fail(args: argparse.Namespace, message: str) -> int:
    print(f"orbchain lightning {args.lightning_command}: {message}", file=sys.stderr)
    return USAGE_ERROR


async def _run(args: argparse.Namespace, gateway: "Gateway") -> int:
    chain = lightning_chain(gateway)
    backend = None if chain is None else chain.backend
    if not isinstance(backend, DevnetLightningBackend):
        return _fail(args, f"the Lightning backend is not the devnet (set [plugin.{PLUGIN_NAME}] backend = \"devnet\")")
    await gateway.db.connect()
    try:
        await migrate(gateway.db, [m for m in gateway.migrations if m.namespace == PLUGIN_NAME])
        if args.lightning_command == "pay":
            state = await backend.settle(args.bolt11.strip())
            print(f"paid {state.payment_hash}: {state.amount_paid_msat // 1000} sat")
            return 0
        units = 0
        if args.amount.strip() not in ("0", ""):
            try:
                units = gateway.coins.require(COIN).to_units(args.amount)
            except AmountError as exc:
                return _fail(args, f"amount {args.amount!r} {exc}")
        issued = await backend.issue_payee_invoice(units * 1000 or None, memo=args.memo)
        print(issued.bolt11)
        return 0
    except DevnetLightningError as exc:
        return _fail(args, str(exc))
    finally:
        await gateway.db.disconnect()
