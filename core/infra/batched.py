"""Work done in short batches: one statement each, so a large backlog never holds a long lock.

Shared by the jobs that prune history (webhook attempts and outbox rows, unpaid payments) and the one that
folds the payments' count deltas: each runs batch after batch until one comes back short (the backlog is
gone) or ``max_batches`` ran (a backlog after an upgrade drains over several ticks).
"""

from __future__ import annotations

from typing import Awaitable, Callable


async def in_batches(step: Callable[[int], Awaitable[int]], batch: int, max_batches: int) -> int:
    """Run ``step(batch)`` (answering how many rows it handled) until a short batch or ``max_batches``; the sum."""
    total = 0
    for _ in range(max_batches):
        done = await step(batch)
        total += done
        if done < batch:
            break
    return total
