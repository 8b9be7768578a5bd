"""The change feed's announcements (core/payments/changes.py): after the commit, once per payment."""

from __future__ import annotations

from types import SimpleNamespace

from orbchain.core.events.after_commit import AfterCommit, run_after_commit
from orbchain.core.infra.signals import Signals
from orbchain.core.payments.changes import ROWS_CACHE, TOPIC, announce_now, payment_changed


async def test_a_change_is_announced_after_the_commit_once_per_payment():
    signals = Signals()
    heard: list[str] = []
    signals.subscribe(TOPIC, heard.append)
    at_commit: list = []  # Database.on_commit's callbacks
    forgotten: list[str] = []  # this process's cached rows dropped (core/payments/row_cache.py)
    gateway = SimpleNamespace(signals=signals, db=SimpleNamespace(on_commit=at_commit.append),
                              services={ROWS_CACHE: SimpleNamespace(changed=forgotten.append)})
    after: AfterCommit = []
    for track_id in ("p1", "p2", "p1", None, ""):
        payment_changed(gateway, track_id, after)
    assert heard == [] and forgotten == []  # nothing before the commit
    for callback in at_commit:
        callback()  # the commit: the cached rows go first, before any after-commit action runs
    assert forgotten == ["p1", "p2"] and heard == []
    await run_after_commit(after)
    assert heard == ["p1", "p2"]
    announce_now(gateway, None)
    announce_now(gateway, "p3")
    assert heard == ["p1", "p2", "p3"]
