"""Payer replacements and double-spends (issue 46 item 3).

``deposits.spends``: the outpoints (``"txid:n"``, space-separated) the
deposit's transaction spends, as its chain reported them (UTXO chains; NULL
elsewhere), kept so a conflict is recognised after a restart too.
``deposits.failure_reason``: why a deposit is FAILED: ``replaced`` (another
transaction paying us spends its inputs), ``double_spent`` (its inputs were
spent elsewhere) or NULL (gone from chain and mempool past the grace period).
``payments.reverted_count`` numbers a payment's steps back (Paying to Waiting,
Paid to Paying), one ``payment.reverted`` webhook each.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE deposits ADD COLUMN spends TEXT",
        "ALTER TABLE deposits ADD COLUMN failure_reason TEXT",
        "ALTER TABLE payments ADD COLUMN reverted_count INTEGER NOT NULL DEFAULT 0",
    ]
