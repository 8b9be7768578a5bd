"""Which payout pays a payment hash: ``lightning_payout_claims``.

Why: a payout's ``broadcast`` treats "the node already knows this payment"
as its own earlier attempt (crash safety), so two payouts to one invoice
would both end Confirmed while the invoice is paid once. The first payout
to fix an invoice claims its payment hash here; another payout finds the
claim taken and fails (re-credited). A claim is released when the node
reports the payment failed, so the invoice can be tried again.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE lightning_payout_claims (
            payment_hash TEXT PRIMARY KEY,
            payout_id TEXT NOT NULL,
            created_at {ts} NOT NULL
        )""",
    ]
