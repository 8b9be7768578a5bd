"""Exact per-merchant payment counts kept by the database itself (issue 48 item 1).

``GET /v1/payment`` and the dashboard's list answer an exact ``total`` (SPEC
4.2). ``COUNT(*)`` over a merchant's payments reads every one of them: at
300,000 payments a merchant's first page took 124 ms, ten times the small
size. ``payment_counts`` holds how many payments each merchant has per
(status, type, currency), so a total is a sum over a few dozen rows.

Triggers keep it, on both databases, in the very transaction that inserts,
deletes or changes the counted columns of a payment: no code path (a
plugin, a job, psql) can miss them. They never update a counter row: each
change appends a delta row (+1, -1) to ``payment_count_deltas``, which takes
no lock another transaction waits for; a single counter row per merchant
would serialise that merchant's concurrent creates until each commit. The
``payments.fold_counts`` job (core/payments/counts.py) folds the deltas into
``payment_counts`` every few seconds; a total reads both in one statement.

On PostgreSQL a TRUNCATE of payments empties both tables too. Triggers do
not fire under ``session_replication_role = replica`` (``pg_restore
--disable-triggers``, the history bench's fill): whoever loads rows that way
runs ``counts.rebuild`` after (``orbchain doctor`` compares the counts with
``COUNT(*)``). The backfill below counts the payments already there.
"""

_COUNTED = "merchant_id, status, type, currency"

_PG_FUNCTION = f"""CREATE FUNCTION orbchain_payment_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO payment_count_deltas ({_COUNTED}, delta)
        VALUES (OLD.merchant_id, OLD.status, OLD.type, OLD.currency, -1);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO payment_count_deltas ({_COUNTED}, delta)
        VALUES (NEW.merchant_id, NEW.status, NEW.type, NEW.currency, 1);
    END IF;
    RETURN NULL;
END
$$"""

_PG_TRUNCATED = """CREATE FUNCTION orbchain_payments_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM payment_count_deltas;
    DELETE FROM payment_counts;
    RETURN NULL;
END
$$"""

_CHANGED = ("OLD.merchant_id IS DISTINCT FROM NEW.merchant_id OR OLD.status IS DISTINCT FROM NEW.status"
            " OR OLD.type IS DISTINCT FROM NEW.type OR OLD.currency IS DISTINCT FROM NEW.currency")


def _delta(row: str, delta: int) -> str:
    return (f"INSERT INTO payment_count_deltas ({_COUNTED}, delta)"
            f" VALUES ({row}.merchant_id, {row}.status, {row}.type, {row}.currency, {delta});")


def _triggers(dialect: str) -> list[str]:
    if dialect == "postgresql":
        run = "FOR EACH ROW EXECUTE FUNCTION orbchain_payment_counted()"
        return [
            _PG_FUNCTION,
            _PG_TRUNCATED,
            f"CREATE TRIGGER payments_counted AFTER INSERT OR DELETE ON payments {run}",
            f"CREATE TRIGGER payments_recounted AFTER UPDATE OF {_COUNTED} ON payments"
            f" FOR EACH ROW WHEN ({_CHANGED}) EXECUTE FUNCTION orbchain_payment_counted()",
            "CREATE TRIGGER payments_truncated AFTER TRUNCATE ON payments"
            " FOR EACH STATEMENT EXECUTE FUNCTION orbchain_payments_truncated()",
        ]
    changed = _CHANGED.replace("IS DISTINCT FROM", "IS NOT")
    return [
        f"CREATE TRIGGER payments_counted_insert AFTER INSERT ON payments BEGIN {_delta('NEW', 1)} END",
        f"CREATE TRIGGER payments_counted_delete AFTER DELETE ON payments BEGIN {_delta('OLD', -1)} END",
        f"CREATE TRIGGER payments_recounted AFTER UPDATE OF {_COUNTED} ON payments WHEN {changed}"
        f" BEGIN {_delta('OLD', -1)} {_delta('NEW', 1)} END",
    ]


def up(dialect: str) -> list[str]:
    return [
        f"""CREATE TABLE payment_counts (
            merchant_id TEXT NOT NULL,
            status TEXT NOT NULL,
            type TEXT NOT NULL,
            currency TEXT NOT NULL,
            n {{bigint}} NOT NULL,
            PRIMARY KEY ({_COUNTED})
        )""",
        """CREATE TABLE payment_count_deltas (
            id {id_pk},
            merchant_id TEXT NOT NULL,
            status TEXT NOT NULL,
            type TEXT NOT NULL,
            currency TEXT NOT NULL,
            delta INTEGER NOT NULL
        )""",
        "CREATE INDEX payment_count_deltas_merchant ON payment_count_deltas (merchant_id)",
        f"INSERT INTO payment_counts ({_COUNTED}, n)"
        f" SELECT {_COUNTED}, COUNT(*) FROM payments GROUP BY {_COUNTED}",
        *_triggers(dialect),
    ]
