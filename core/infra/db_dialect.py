"""SQL text for PostgreSQL: ``:name`` parameters to asyncpg's ``$n``, statements combined into one.

Why its own module: service code writes one SQL dialect with ``:name``
parameters (SQLite binds those itself); only asyncpg needs them numbered.
The conversion is pure text work, cached per distinct SQL string, and
``Database`` (core/infra/db.py) calls it on every PostgreSQL statement.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any, Mapping, Sequence

# Outside quotes and comments, ``:name`` is a parameter, as in SQLAlchemy's
# ``text()``; ``::type`` casts and ``\:`` (a literal colon) are not.
_PARAM = re.compile(r"(?<![:\w\\]):(\w+)(?!:)")
_QUOTED_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.S)


def map_params(query: str, replace: Any, unescape: bool = False) -> str:
    """``query`` with each ``:name`` parameter (outside quotes and comments) replaced by ``replace(name)``.

    With ``unescape``, ``\\:`` outside quotes becomes a plain colon (the final form).
    """
    def sub(text: str) -> str:
        text = _PARAM.sub(lambda match: replace(match.group(1)), text)
        return text.replace("\\:", ":") if unescape else text

    out, last = [], 0
    for quoted in _QUOTED_OR_COMMENT.finditer(query):
        out.append(sub(query[last:quoted.start()]))
        out.append(quoted.group(0))
        last = quoted.end()
    out.append(sub(query[last:]))
    return "".join(out)


@lru_cache(maxsize=4096)
def pg_sql(query: str) -> tuple[str, tuple[str, ...]]:
    """``query`` with ``$1..$n`` for its ``:name`` parameters, and the names in order.

    One number per distinct name, so a name used twice binds once. Cached:
    the same SQL text is converted once per process.
    """
    names: dict[str, int] = {}
    converted = map_params(query, lambda name: "$" + str(names.setdefault(name, len(names) + 1)), unescape=True)
    return converted, tuple(names)


@lru_cache(maxsize=256)
def pg_combined(queries: tuple[str, ...]) -> str:
    """Several data-modifying statements as one: the first ones become ``WITH`` parts.

    Parameters are renamed ``s<i>_<name>`` so the statements' names never meet.
    PostgreSQL runs every data-modifying ``WITH`` part exactly once, whether
    or not the main statement reads it.
    """
    renamed = [map_params(query, lambda name, i=i: f":s{i}_{name}") for i, query in enumerate(queries)]
    parts = ", ".join(f"orbchain_w{i} AS ({query})" for i, query in enumerate(renamed[:-1]))
    return f"WITH {parts} {renamed[-1]}"


@lru_cache(maxsize=256)
def pg_combined_plan(queries: tuple[str, ...]) -> tuple[str, str, tuple[tuple[int, str], ...]]:
    """``pg_combined`` of ``queries``, its ``$n`` form, and for each ``$n`` (statement index, parameter name)."""
    combined = pg_combined(queries)
    sql, names = pg_sql(combined)
    plan = []
    for name in names:
        index, _, original = name[1:].partition("_")
        plan.append((int(index), original))
    return combined, sql, tuple(plan)


def pg_args(names: tuple[str, ...], values: Mapping[str, Any] | None) -> list[Any]:
    """The values of ``names`` in order; a missing one is a ``ValueError`` naming it."""
    try:
        return [values[name] for name in names] if names else []  # type: ignore[index]
    except (KeyError, TypeError):
        missing = [name for name in names if not values or name not in values]
        raise ValueError(f"no value for SQL parameter(s) {', '.join(':' + n for n in missing)}") from None


def pg_bind(query: str, values: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """``query`` in asyncpg's form and its positional arguments."""
    sql, names = pg_sql(query)
    return sql, pg_args(names, values)


def advisory_key(name: str) -> int:
    """A stable signed 63-bit key for ``pg_try_advisory_lock``."""
    digest = hashlib.sha256(f"orbchain:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True) >> 1


def in_list(prefix: str, values: Sequence[str]) -> tuple[str, dict[str, str]]:
    """``IN (...)`` text and its parameters for ``values``: ``":id0, :id1"``, ``{"id0": .., "id1": ..}``.

    Both dialects bind ``:name`` parameters, not arrays, so a list becomes one named parameter per value.
    """
    names = {f"{prefix}{i}": value for i, value in enumerate(values)}
    return ", ".join(f":{name}" for name in names), names
