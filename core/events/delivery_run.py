"""One run of webhook delivery: claimed attempts sent side by side across endpoints, one at a time within one.

Why: a backlog must drain at the speed of the receivers, not of the tick
(issue 31: 500 signed webhooks/s). Each endpoint (the URL an attempt goes
to) is a lane: its attempts leave one after another in the order they were
claimed (when due, then event id), so one run never has two requests to an
endpoint in flight and a later event never overtakes an earlier one there.
Lanes run concurrently, at most ``webhooks.concurrency`` requests in flight
in all, over the session's keep-alive connections. The claimer keeps about
one batch claimed ahead of the senders, so lanes do not wait for claims and
leases stay short; results are recorded by one task, all that arrived
since its last write in one transaction.

Two rules keep an event's attempts one at a time and the retry schedule as
it was, whatever a receiver does:

* An attempt never starts once its claim is older than the lease margin
  (its lease could end before its timeout and another worker claim it):
  that claim and the rest of its lane are given back uncounted, due now.
* An endpoint that timed out or refused the connection is down for the rest
  of the run: its other claims are given back uncounted, due at the next
  tick, so a dead receiver costs one timeout per run, not one per event,
  and never holds the other lanes up.

An attempt that did happen is counted and scheduled exactly as before
(``record_attempts``). A cancelled run gives back every claim it had not
recorded (``release_claims``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any, Coroutine

import aiohttp

from ..infra.stopping import undone_if_cancelled
from . import attempts
from .outbox import PENDING
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)


class DeliveryRun:
    """Lanes per endpoint, a bound on requests in flight, and one recorder, for one run of the job."""

    def __init__(self, gateway: "Gateway", http: aiohttp.ClientSession) -> None:
        self.gateway = gateway
        self.http = http
        self.gate = asyncio.Semaphore(max(1, gateway.config.webhooks.concurrency))
        self.lanes: dict[str, deque[attempts.Claim]] = {}
        self.workers: set[asyncio.Task] = set()
        self.down: set[str] = set()  # endpoints left to the next tick: unreachable, or too slow, in this run
        self.unrecorded: dict[tuple[str, str], attempts.Claim] = {}  # (event id, token) -> claim
        self.results: list[tuple[attempts.Claim, attempts.Outcome]] = []
        self.arrived = asyncio.Event()
        self.recorder: asyncio.Task | None = None
        self.closing = False  # every lane ended: the recorder stops once it wrote what is left
        self.moved = asyncio.Event()  # a lane took a claim: the claimer may have room again
        self.statuses: dict[str, str | None] = {}
        self.sent = 0  # attempts made (given-back claims are not attempts)

    @property
    def queued(self) -> int:
        """Claims waiting in lanes, not yet sent."""
        return sum(len(lane) for lane in self.lanes.values())

    # -- the claimer's side ---------------------------------------------------------

    async def room(self, ahead: int) -> None:
        """Wait until at most ``ahead`` claims are waiting to be sent."""
        while self.queued > ahead:
            self.moved.clear()
            await self.moved.wait()

    async def add(self, claims: list[attempts.Claim]) -> None:
        """Queue claims on their endpoints' lanes (those of a down endpoint go back to the next tick)."""
        for claim in claims:
            self.unrecorded[(claim.event_id, claim.token)] = claim
        refused = [claim for claim in claims if (claim.url or "") in self.down]
        if refused:
            await self._give_back(refused, later=True)
        for claim in claims:
            key = claim.url or ""
            if key in self.down:
                continue
            lane = self.lanes.get(key)
            if lane is None:
                lane = self.lanes[key] = deque()
                self._spawn(self._lane(key, lane))
            lane.append(claim)
        if self.recorder is None:
            self.recorder = self._spawn(self._record())

    async def finish(self) -> dict[str, str | None]:
        """Wait until every queued attempt was sent and recorded; event id -> its new status."""
        try:
            while lanes := [task for task in self.workers if task is not self.recorder]:
                done, _ = await asyncio.wait(lanes, return_when=asyncio.FIRST_EXCEPTION)
                for task in done:
                    self.workers.discard(task)
                    task.result()  # a lane's own failure (the database lost while giving claims back)
            if self.recorder is not None:
                self.closing = True
                self.arrived.set()
                await self.recorder
        except Exception:
            for task in self.workers:
                task.cancel()  # unrecorded claims come back when their lease ends
            await asyncio.gather(*self.workers, return_exceptions=True)
            raise
        return self.statuses

    async def release_unrecorded(self) -> None:
        """A cancelled run: every claim not recorded is given back, due now, its attempt uncounted."""
        for task in list(self.workers):
            task.cancel()
        await asyncio.gather(*self.workers, return_exceptions=True)
        await attempts.release_claims(self.gateway, list(self.unrecorded.values()))

    # -- lanes ------------------------------------------------------------------------

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(work)
        self.workers.add(task)
        return task

    async def _lane(self, key: str, lane: deque[attempts.Claim]) -> None:
        """Send one endpoint's claims in order, one at a time."""
        cfg = self.gateway.config.webhooks
        while lane:
            claim = lane[0]
            if self.gateway.stop.requested.is_set():  # the rest is due at once, after the restart
                await self._give_back(self._drain(key, lane), later=False)
                return
            if self.gateway.now() > claim.leased_until - cfg.timeout_seconds:
                # Too slow to keep up in this run: its lease could end mid-attempt. The rest waits
                # for the next tick, in order (given back due now, it would be claimed again at once).
                self.down.add(key)
                await self._give_back(self._drain(key, lane), later=True)
                return
            lane.popleft()
            self.moved.set()
            async with self.gate:
                outcome = await self._attempt(claim)
            self.sent += 1
            self.results.append((claim, outcome))
            self.arrived.set()
            if outcome.unreachable and lane:
                self.down.add(key)
                await self._give_back(self._drain(key, lane), later=True)
                return
        if self.lanes.get(key) is lane:
            del self.lanes[key]

    def _drain(self, key: str, lane: deque[attempts.Claim]) -> list[attempts.Claim]:
        claims = list(lane)
        lane.clear()
        if self.lanes.get(key) is lane:
            del self.lanes[key]
        self.moved.set()
        return claims

    async def _attempt(self, claim: attempts.Claim) -> attempts.Outcome:
        try:
            return await attempts.attempt_delivery(self.gateway, self.http, claim)
        except Exception as exc:  # one odd URL must not lose the run's results
            if not self.gateway.db_outage.absorb(exc, "a webhook attempt"):
                log.exception("webhook %s attempt %d failed unexpectedly", claim.event_id, claim.attempt)
            return attempts.Outcome(False, error="internal error while sending")

    async def _give_back(self, claims: list[attempts.Claim], *, later: bool) -> None:
        """Claims this run will not send: uncounted, due now (``later``: at the next tick)."""
        if not claims:
            return
        delay = self.gateway.config.webhooks.tick_seconds if later else 0
        await attempts.release_claims(self.gateway, claims, delay=delay)
        for claim in claims:
            self.unrecorded.pop((claim.event_id, claim.token), None)
            self.statuses[claim.event_id] = PENDING

    # -- the recorder -------------------------------------------------------------------

    async def _record(self) -> None:
        """Write results as they come, everything that arrived meanwhile in one transaction."""
        while True:
            await self.arrived.wait()
            self.arrived.clear()
            batch, self.results = self.results, []
            if batch:
                statuses = await attempts.record_attempts(self.gateway, batch)
                for (claim, _), status in zip(batch, statuses):
                    self.unrecorded.pop((claim.event_id, claim.token), None)
                    self.statuses[claim.event_id] = status
            if self.closing and not self.results:
                return


async def run_claims(
    gateway: "Gateway", http: aiohttp.ClientSession, claims: list[attempts.Claim]
) -> dict[str, str | None]:
    """Send and record these claims (``deliver_now``); event id -> new status."""
    run = DeliveryRun(gateway, http)
    async with undone_if_cancelled(run.release_unrecorded, f"delivery of {len(claims)} webhook(s)"):
        await run.add(claims)
        return await run.finish()


async def run_due(gateway: "Gateway", http: aiohttp.ClientSession, *, batch: int = attempts.CLAIM_BATCH) -> int:
    """Claim and send due events, ``batch`` per claim, until none is left or a stop began; returns the attempts
    made."""
    run = DeliveryRun(gateway, http)
    async with undone_if_cancelled(run.release_unrecorded, "a webhook delivery run"):
        while not gateway.stop.requested.is_set():
            await run.room(ahead=batch // 2)
            claims = await attempts.claim_due(gateway, limit=batch)
            if not claims:
                break
            await run.add(claims)
            if len(claims) < batch:
                break
        await run.finish()
    return run.sent
