"""PostgreSQL only: every process hears when a payment's rows change, whoever changes them (issue 47).

Each process keeps the payments it served (core/payments/row_cache.py) and
answers an unchanged one with no query. These triggers NOTIFY the gateway's
signal channel (``orbchain_signals``, core/infra/signals.py) with topic
``payment_rows`` and the payment's id when a ``payments`` row is updated or
deleted, or a ``deposits`` row of a payment is written, in the very
transaction, so the cached rows are dropped in every process at its commit
(NOTIFY is sent on commit, never on a rollback, and repeated in one
transaction it is sent once). The origin ``db`` is no process's own, so the
writing process hears it too. A new payment needs none: nothing caches an id
before it exists. SQLite deployments read the rows every time: nothing is
created.
"""

_FUNCTION = """CREATE OR REPLACE FUNCTION orbchain_payment_rows_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.track_id IS NOT NULL THEN
        PERFORM pg_notify('orbchain_signals', 'db payment_rows ' || OLD.track_id);
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.track_id IS NOT NULL
            AND (TG_OP = 'INSERT' OR NEW.track_id IS DISTINCT FROM OLD.track_id) THEN
        PERFORM pg_notify('orbchain_signals', 'db payment_rows ' || NEW.track_id);
    END IF;
    RETURN NULL;
END
$$"""
_RUN = "EXECUTE FUNCTION orbchain_payment_rows_changed()"


def up(dialect: str) -> list[str]:
    if dialect != "postgresql":
        return []
    return [
        _FUNCTION,
        "CREATE TRIGGER payments_rows_changed AFTER UPDATE OR DELETE ON payments FOR EACH ROW " + _RUN,
        "CREATE TRIGGER deposits_rows_changed AFTER INSERT OR UPDATE OR DELETE ON deposits FOR EACH ROW " + _RUN,
    ]
