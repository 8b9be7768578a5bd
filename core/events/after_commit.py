"""Actions to run once a database transaction committed (hooks, ledger notifications).

Hooks must never announce what a rollback could undo, so code inside a
transaction appends closures to an ``AfterCommit`` list and its caller runs
them after the ``async with db.transaction()`` block.
"""

from __future__ import annotations

from typing import Awaitable, Callable

AfterCommit = list[Callable[[], Awaitable[None]]]


async def run_after_commit(actions: AfterCommit) -> None:
    for action in actions:
        await action()
