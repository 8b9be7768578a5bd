"""``orbchain signer``: the process that holds the seed and signs payouts, and nothing else.

It answers one request, ``POST /v1/sign`` with ``{"payout_id": ..., "step": ...}`` (``sign``, ``bump``,
``close``, ``pay``, ``status``), on a Unix socket (default) or TCP, and only when the request carries the channel
credential (``core/keys/signer_channel.py``: HMAC, timestamp window, one-time
nonce). The request is trusted for the payout id alone: the signer reads the
row, its ledger reservation and the window counts from the database itself
and runs the same policy as an in-process signer
(``payouts.worker.sign_here``: ``signing_gate.authorize`` then the chain's
``sign_payout``), so a forged row is held here whatever the web process says.
It stores the signed bytes in the row (stage signed) before it answers, so an
answer lost on the way never leads to a second signature.

``bump`` and ``close`` (a child paying for a stuck payout, a conflicting
transaction closing a dropped one: new signatures, so here too) act on a
broadcast payout's stored bytes and answer ``done`` (with ``closed``,
``network_fee``, ``detail`` for a close), or ``fee_above_ceiling`` (``rate``,
``ceiling``, ``unit``) when a bump would cost more than the operator's
ceiling. ``pay`` and ``status`` (a ``SIGNER_SENDS`` chain: Lightning, whose
paying macaroon only this process holds) pay a signed payout's stored, sealed
invoice and ask the node where the payment stands; they answer ``done`` (with
the status's ``found``, ``confirmations``, ``failed``, ``failure_reason``,
``network_fee``, ``details``: the preimage) or ``error`` and record nothing in
the payout: the serve's worker records the stage and finishes it (status,
ledger, events), so this process's database role needs neither. Sign answers, always 200 with JSON
once the credential passed: ``signed``, ``fee_above_ceiling`` (the fee now
is above the ceiling: nothing signed, the payout waits queued),
``held`` (the policy's reason), ``not_queued`` (nothing to sign: already
signed, held or final, or claimed by nobody) and ``error`` (the chain's
refusal: ``permanent``, ``reason``, ``message``). 401 for a refused
credential, 400 for a malformed body.

``GET /metrics``: this process's own metrics (its policy holds, its signing jobs), which no web host's
``/metrics`` can see, behind the same bearer token as theirs (``[metrics] token`` / ``token_file``); without
a token configured the route does not exist.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..infra.metrics import CONTENT_TYPE
from ..infra.metrics_access import bearer_matches, metrics_token
from ..keys.signer_channel import ChannelRefused, RequestVerifier
from ..payouts import service as payouts
from ..payouts.remote_signing import BUMP, CLOSE, PAY, SIGN, SIGN_PATH, STEPS
from ..payouts.worker import sign_here
from ..types.chains import BroadcastError, Capability, FeeAboveCeiling, SignedPayout
from ..types.errors import ApiError

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024
SOCKET_NAME = "signer.sock"


def default_listen(gateway: "Gateway") -> str:
    return gateway.config.signer.listen or f"unix://{gateway.config.data_dir / SOCKET_NAME}"


async def answer_sign(gateway: "Gateway", payout_id: str) -> dict[str, Any]:
    """Judge and sign payout ``payout_id`` as the database has it; the answer's JSON object."""
    row = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout_id})
    if row is None or row["stage"] != payouts.QUEUED or row["status"] != payouts.CONFIRMING \
            or not row["claim_token"]:
        return {"outcome": "not_queued", "stage": row["stage"] if row is not None else None}
    try:
        sender = payouts.payout_route(gateway, row["coin"]).sender
    except ApiError as exc:
        return {"outcome": "error", "permanent": False, "message": f"the signer cannot pay {row['coin']}: {exc}"}
    try:
        stored = await sign_here(gateway, sender, row)
    except FeeAboveCeiling as exc:  # nothing signed: the worker keeps the payout waiting, no attempt counted
        return fee_above_ceiling(exc, SIGN)
    except BroadcastError as exc:
        return {"outcome": "error", "permanent": exc.permanent, "reason": exc.reason, "message": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a node outage: the worker retries with backoff
        log.warning("payout %s: signing failed: %s: %s", payout_id, type(exc).__name__, exc)
        return {"outcome": "error", "permanent": False, "message": f"{type(exc).__name__}: {exc}"}
    if stored is not None:
        log.info("payout %s signed (%s)", payout_id, stored["tx_hash"])
        return {"outcome": "signed"}
    after = await gateway.db.fetch_one("SELECT stage, policy_hold FROM payouts WHERE id = :id", {"id": payout_id})
    if after is not None and after["stage"] == payouts.POLICY_HELD:
        return {"outcome": "held", "reason": after["policy_hold"]}
    return {"outcome": "not_queued", "stage": after["stage"] if after is not None else None}


def fee_above_ceiling(exc: FeeAboveCeiling, step: str) -> dict[str, Any]:
    """The answer for a step refused for its fee (``remote_signing.raise_fee_wait`` turns it back)."""
    return {"outcome": "fee_above_ceiling", "step": step, "rate": exc.rate, "ceiling": exc.ceiling, "unit": exc.unit}


async def answer_step(gateway: "Gateway", payout_id: str, step: str) -> dict[str, Any]:
    """``bump`` or ``close`` a broadcast payout the database has, with its stored bytes (never the request's)."""
    row = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout_id})
    if row is None or row["stage"] != payouts.BROADCAST or row["status"] != payouts.CONFIRMING \
            or (step == CLOSE and row["missing_since"] is None):
        return {"outcome": "not_queued", "step": step, "message": "not a payout waiting on the chain"}
    try:
        sender = payouts.payout_route(gateway, row["coin"]).sender
        stored = SignedPayout(row["tx_hash"], row["raw_tx"], gateway.db.to_int(row["network_fee"] or 0))
        if step == BUMP:
            waiting = await sender.bump_stuck(payout_id, stored)
            return {"outcome": "done", "step": step, "detail": waiting}
        closure = await sender.close_dropped(payout_id, stored)
    except FeeAboveCeiling as exc:  # the bump waits for fees under the ceiling: the worker words it for the payout
        return fee_above_ceiling(exc, step)
    except Exception as exc:  # noqa: BLE001 - the worker asks again at its next poll
        log.warning("payout %s: %s failed: %s: %s", payout_id, step, type(exc).__name__, exc)
        return {"outcome": "error", "step": step, "message": f"{type(exc).__name__}: {exc}"}
    return {"outcome": "done", "step": step, "closed": closure.closed, "network_fee": int(closure.network_fee),
            "detail": closure.detail}


async def answer_sends(gateway: "Gateway", payout_id: str, step: str) -> dict[str, Any]:
    """``pay`` or ``status`` a claimed, signed payout of a ``SIGNER_SENDS`` chain from its stored bytes."""
    row = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout_id})
    if row is None or row["stage"] not in (payouts.SIGNED, payouts.BROADCAST) \
            or row["status"] != payouts.CONFIRMING or not row["claim_token"]:
        return {"outcome": "not_queued", "step": step, "message": "not a signed payout in a worker's hands"}
    adapter = gateway.chains.get(row["chain"])
    sender = payouts.sender_of(adapter) if adapter is not None and adapter.supports(Capability.SIGNER_SENDS) else None
    if sender is None:
        return {"outcome": "not_queued", "step": step, "message": f"the signer does not send {row['chain']} payouts"}
    stored = SignedPayout(row["tx_hash"], row["raw_tx"])
    try:
        if step == PAY:
            await sender.broadcast(stored)  # the sender pays only what this process sealed when signing
            return {"outcome": "done", "step": step}
        status = await sender.payout_status(stored)
    except BroadcastError as exc:
        return {"outcome": "error", "step": step, "permanent": exc.permanent, "reason": exc.reason,
                "message": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a node outage: the worker asks again, never fails blind
        log.warning("payout %s: %s failed: %s: %s", payout_id, step, type(exc).__name__, exc)
        return {"outcome": "error", "step": step, "permanent": False, "message": f"{type(exc).__name__}: {exc}"}
    return {"outcome": "done", "step": step, "found": status.found, "confirmations": status.confirmations,
            "failed": status.failed, "failure_reason": status.failure_reason, "network_fee": status.network_fee,
            "details": dict(status.details)}


def signer_app(gateway: "Gateway", verifier: RequestVerifier) -> web.Application:
    """The signer's one route, behind the credential check."""

    async def sign(request: web.Request) -> web.Response:
        body = await request.read()  # client_max_size bounds it (413 beyond)
        try:
            verifier.verify(request.headers, body, int(time.time()))  # wall clock: the channel spans hosts
        except ChannelRefused as exc:
            log.warning("signer: refused a request from %s: %s", request.remote or "the socket", exc)
            return web.json_response({"outcome": "refused", "message": str(exc)}, status=401)
        try:
            request_body = json.loads(body)
            payout_id, step = request_body["payout_id"], request_body.get("step", SIGN)
            if not isinstance(payout_id, str) or not 0 < len(payout_id) <= 64 or step not in STEPS:
                raise ValueError
        except (ValueError, KeyError, TypeError, AttributeError):
            return web.json_response({"outcome": "refused", "message": "malformed request"}, status=400)
        if step == SIGN:
            return web.json_response(await answer_sign(gateway, payout_id))
        if step in (BUMP, CLOSE):
            return web.json_response(await answer_step(gateway, payout_id, step))
        return web.json_response(await answer_sends(gateway, payout_id, step))

    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_post(SIGN_PATH, sign)
    token = metrics_token(gateway.config.metrics)
    if token:
        async def metrics(request: web.Request) -> web.Response:
            if not bearer_matches(request.headers.get("Authorization", ""), token):
                return web.json_response({"outcome": "refused", "message": "metrics token required"}, status=401,
                                         headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
            return web.Response(body=gateway.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})

        app.router.add_get("/metrics", metrics)
    return app


def _fresh_socket_path(text: str) -> Path:
    path = Path(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # a socket left by a killed signer
    return path


async def run_signer(gateway: "Gateway", verifier: RequestVerifier, listen: str, ready: "asyncio.Event") -> int:
    """Serve until cancelled or ``gateway.stop`` is requested; a Unix socket is opened to its group only (0660)."""
    runner = web.AppRunner(signer_app(gateway, verifier), access_log=None)
    await runner.setup()
    try:
        site: web.BaseSite
        if listen.startswith("unix://"):
            path = _fresh_socket_path(listen[len("unix://"):])
            site = web.UnixSite(runner, str(path))
            await site.start()
            os.chmod(path, 0o660)  # the serve may run as another user of the signer's group
        else:
            host, _, port = listen[len("http://"):].rstrip("/").rpartition(":")
            site = web.TCPSite(runner, host, int(port))
            await site.start()
        log.info("signer listening on %s", listen)
        ready.set()
        await gateway.stop.requested.wait()
        return 0
    finally:
        await runner.cleanup()
