"""``services.merchant_row`` and friends (core/contract/plugin_rows.py), on a plugin-owned table, on both databases."""

from __future__ import annotations

import pytest

from orbchain import api as services
from orbchain.core.types.errors import NotFound

TABLE = "rowkit_notes"


@pytest.fixture
async def notes(gateway):
    await gateway.db.execute(f"CREATE TABLE {TABLE} (id TEXT PRIMARY KEY, merchant_id TEXT NOT NULL,"
                             " body TEXT, created_at INTEGER NOT NULL)")
    for row_id, merchant, at in (("n1", "m_a", 10), ("n2", "m_a", 20), ("n3", "m_b", 30), ("n0", "m_a", 20)):
        row = {"id": row_id, "merchant_id": merchant, "body": row_id.upper(), "created_at": at}
        await gateway.db.execute(services.insert_statement(TABLE, row), row)
    return gateway


async def test_a_row_is_found_for_its_merchant_only(notes):
    assert (await services.merchant_row(notes, TABLE, "m_a", "n1"))["body"] == "N1"
    for merchant, row_id in (("m_a", "n3"), ("m_b", "n1"), ("m_a", "missing")):
        with pytest.raises(NotFound) as caught:
            await services.merchant_row(notes, TABLE, merchant, row_id)
        assert caught.value.status == 404 and str(caught.value) == "not found"


async def test_lists_are_newest_first_and_counts_are_per_merchant(notes):
    assert [r["id"] for r in await services.merchant_rows(notes, TABLE, "m_a")] == ["n2", "n0", "n1"]
    assert [r["id"] for r in await services.merchant_rows(notes, TABLE, "m_c")] == []
    assert await services.merchant_row_count(notes, TABLE, "m_a") == 3
    assert await services.merchant_row_count(notes, TABLE, "m_c") == 0


async def test_update_touches_the_merchants_row_only(notes):
    await services.update_row(notes, TABLE, "n1", {"body": "changed"}, merchant_id="m_b")
    assert (await services.merchant_row(notes, TABLE, "m_a", "n1"))["body"] == "N1"
    await services.update_row(notes, TABLE, "n1", {"body": "changed", "created_at": 11}, merchant_id="m_a")
    row = await services.merchant_row(notes, TABLE, "m_a", "n1")
    assert (row["body"], row["created_at"]) == ("changed", 11)
    await services.update_row(notes, TABLE, "n3", {"body": None})
    assert (await services.merchant_row(notes, TABLE, "m_b", "n3"))["body"] is None


def test_found_passes_a_row_and_refuses_none():
    assert services.found({"id": "x"}) == {"id": "x"}
    with pytest.raises(NotFound):
        services.found(None)


def test_names_that_are_not_plain_identifiers_are_refused():
    assert services.insert_statement("t", {"a": 1, "b_2": 2}) == "INSERT INTO t (a, b_2) VALUES (:a, :b_2)"
    for table, row in (("t; DROP TABLE x", {"a": 1}), ("t", {"a = 1, b": 1}), ("T", {"a": 1})):
        with pytest.raises(ValueError):
            services.insert_statement(table, row)
