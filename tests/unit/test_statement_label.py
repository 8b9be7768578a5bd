"""``orbchain.testing.statement_label``: a statement's name in a count's diff, the same whatever its values."""

from __future__ import annotations

import pytest

from orbchain.testing import statement_label


@pytest.mark.parametrize("sql, label", [
    ("SELECT k.*, m.enabled FROM api_keys k JOIN merchants m ON m.id = k.merchant_id WHERE k.key_hash = $1",
     "SELECT api_keys merchants"),
    # SQLite's trace writes the values in: they never reach the label, even one that reads like SQL.
    ("SELECT * FROM merchants WHERE note = 'FROM evil JOIN worse'", "SELECT merchants"),
    ("UPDATE api_keys SET last_used_at = 1795939506 WHERE id = 'key_1'", "UPDATE api_keys"),
    ("INSERT INTO counters (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = counters.value + 1",
     "INSERT counters"),
    # The parts of a WITH are not tables; a function after FROM is not one either.
    ("WITH up AS ( INSERT INTO rate_limit_hits (bucket) SELECT b FROM unnest($1::text[]) AS t(b) RETURNING bucket )"
     " SELECT bucket, (SELECT count(*) FROM gateway_nodes) AS nodes FROM up", "WITH gateway_nodes rate_limit_hits"),
    ("WITH RECURSIVE tree(oid, depth) AS (SELECT oid FROM pg_type UNION SELECT t.oid FROM tree JOIN pg_type t"
     " ON true) SELECT * FROM tree", "WITH pg_type"),
    ("SELECT pg_notify($1, $2)", "SELECT pg_notify"),
    ("BEGIN IMMEDIATE", "BEGIN IMMEDIATE"),
    ("SAVEPOINT orbchain_sp_3", "SAVEPOINT"),
    ("RELEASE SAVEPOINT orbchain_sp_3", "RELEASE"),
    ("ROLLBACK TO orbchain_group", "ROLLBACK TO"),
    ("  commit ", "COMMIT"),
])
def test_a_label_names_the_command_and_its_tables(sql, label):
    assert statement_label(sql) == label
