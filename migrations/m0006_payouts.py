"""Payouts: one row per payout, and the row is the state machine.

``stage`` is where the pipeline stands (queued -> signed -> broadcast ->
confirmed | failed); ``status`` is what the API shows (Confirming, Confirmed,
Failed). The signed transaction (``tx_hash``, ``raw_tx``) is stored before it
is ever broadcast, so a restarted worker re-broadcasts those exact bytes and
never signs twice. ``idem_key`` is the namespaced idempotency key
(``key:<idempotency_key>``, ``batch:<external_id>``, ``refund:<external_id>``);
the unique index makes a replay find the first payout, also under races.
``network_fee`` is what the signed transaction costs the platform (in the
chain's native coin), booked when it lands on chain.
``claimed_until``/``claim_token`` are the worker's lease.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE payouts (
            id TEXT PRIMARY KEY,
            track_id TEXT NOT NULL UNIQUE,
            merchant_id TEXT NOT NULL REFERENCES merchants(id),
            coin TEXT NOT NULL,
            chain TEXT NOT NULL,
            destination TEXT NOT NULL,
            amount {amount} NOT NULL,
            status TEXT NOT NULL,
            stage TEXT NOT NULL,
            tx_hash TEXT,
            raw_tx TEXT,
            network_fee {amount},
            confirmations INTEGER NOT NULL DEFAULT 0,
            failure_reason TEXT,
            description TEXT,
            callback_url TEXT,
            idem_key TEXT,
            request_hash TEXT,
            external_id TEXT,
            refund_of_payment_id TEXT,
            key_id TEXT,
            request_id TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            first_attempt_at {ts},
            missing_since {ts},
            next_attempt_at {ts} NOT NULL,
            claimed_until {ts},
            claim_token TEXT,
            finished_at {ts},
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        "CREATE UNIQUE INDEX payouts_idem ON payouts (merchant_id, idem_key) WHERE idem_key IS NOT NULL",
        "CREATE INDEX payouts_due ON payouts (status, next_attempt_at)",
        "CREATE INDEX payouts_merchant_status ON payouts (merchant_id, status)",
        "CREATE INDEX payouts_merchant_created ON payouts (merchant_id, created_at)",
        "CREATE INDEX payouts_refund_of ON payouts (refund_of_payment_id)",
    ]
