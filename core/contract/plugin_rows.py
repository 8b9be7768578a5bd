"""Reads and writes of a plugin's own merchant-owned rows, for ``orbchain.api``.

Feature plugins keep tables whose rows belong to one merchant (plans,
links, schedules, brands): every dashboard read names the merchant, so
another merchant's row is simply not found (404, exactly like an unknown
id). These helpers are that rule written once. They serve a plugin's own
tables only (an ``id`` and a ``merchant_id`` column, ``created_at`` for
lists); plugins never touch core tables, and ``tests/test_plugin_sql.py``
checks the table names they pass here as it checks their SQL.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..types.errors import NotFound
from .gateway import PluginGateway as Gateway

Row = Mapping[str, Any]
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*\Z")


def _name(text: str) -> str:
    """``text`` if it is a plain lower-case SQL identifier; names are put into SQL text, never values."""
    if not _IDENTIFIER.match(text):
        raise ValueError(f"not a table or column name: {text!r}")
    return text


def insert_statement(table: str, row: Mapping[str, Any]) -> str:
    """``INSERT INTO table (a, b) VALUES (:a, :b)`` for ``row``'s keys; append ``ON CONFLICT ...`` as needed."""
    columns = [_name(k) for k in row]
    return f"INSERT INTO {_name(table)} ({', '.join(columns)}) VALUES ({', '.join(':' + k for k in columns)})"


async def merchant_row(gateway: "Gateway", table: str, merchant_id: str, row_id: str) -> Row:
    """Row ``row_id`` of ``table`` if it is ``merchant_id``'s; 404 ``NotFound`` for unknown and foreign ids alike."""
    row = await gateway.db.fetch_one(f"SELECT * FROM {_name(table)} WHERE id = :i AND merchant_id = :m",
                                     {"i": row_id, "m": merchant_id})
    return found(row)


def found(row: Row | None) -> Row:
    """``row``, or 404 ``NotFound("not found")`` when it is None (a look-up of your own that missed)."""
    if row is None:
        raise NotFound("not found")
    return row


async def merchant_rows(gateway: "Gateway", table: str, merchant_id: str) -> list[Row]:
    """Every row of ``table`` that is ``merchant_id``'s, newest first (``created_at``, then ``id``, descending)."""
    return await gateway.db.fetch_all(
        f"SELECT * FROM {_name(table)} WHERE merchant_id = :m ORDER BY created_at DESC, id DESC", {"m": merchant_id})


async def merchant_row_count(gateway: "Gateway", table: str, merchant_id: str) -> int:
    """How many rows of ``table`` are ``merchant_id``'s (a per-account cap's count)."""
    return int(await gateway.db.fetch_val(f"SELECT COUNT(*) FROM {_name(table)} WHERE merchant_id = :m",
                                          {"m": merchant_id}))


async def update_row(gateway: "Gateway", table: str, row_id: str, changes: Mapping[str, Any], *,
                     merchant_id: str | None = None) -> None:
    """``UPDATE table SET <changes> WHERE id = row_id`` (and ``merchant_id`` when given); one statement.

    ``changes`` maps column to value (None writes NULL) and must not be
    empty; it must not name ``id`` or ``merchant``, the statement's own
    parameters. Runs in the caller's transaction, if any.
    """
    sets = ", ".join(f"{_name(k)} = :{k}" for k in changes)
    where = "id = :id" if merchant_id is None else "id = :id AND merchant_id = :merchant"
    values = {**changes, "id": row_id} if merchant_id is None else {**changes, "id": row_id, "merchant": merchant_id}
    await gateway.db.execute(f"UPDATE {_name(table)} SET {sets} WHERE {where}", values)


async def delete_rows_naming(gateway: "Gateway", table: str, column: str, values: Sequence[str]) -> None:
    """``DELETE FROM table WHERE column IN (values)``: a plugin's rows naming, say, payments the core
    is pruning (the ``payments_pruning`` hook). Nothing when ``values`` is empty; idempotent."""
    names = {f"v{i}": value for i, value in enumerate(values)}
    if names:
        await gateway.db.execute(
            f"DELETE FROM {_name(table)} WHERE {_name(column)} IN ({', '.join(':' + k for k in names)})", names)
