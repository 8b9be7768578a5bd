"""The payout worker's side of a separate signer: ask ``orbchain signer`` to sign a payout, by its id alone.

A seedless ``serve`` (``[signer] url``) cannot sign; its worker claims a
queued payout as always and sends the signer nothing but the payout's id (and
the step: sign, bump a stuck one, close a dropped one) in a signed request
(``core/keys/signer_channel.py``). The signer reads the row and its
reservation itself, judges it with the same policy, signs and stores the
signed bytes in the row before it answers (``core/custody/signer.py``), so
this side only re-reads the row: stage signed goes on to broadcast; anything
else (held, claim lost) leaves the worker. A signing refusal comes back as the
``BroadcastError`` the chain raised, so the worker's retry and failure rules
are the same in both set-ups; a signer that cannot be reached or refuses the
credential is a transient error, retried with backoff.

A chain whose sending is itself spending (``Capability.SIGNER_SENDS``:
Lightning, where the node's paying macaroon moves the money) is handed to the
signer whole: step ``send`` asks it to advance the claimed payout as far as it
goes (policy, sign, pay, follow) with the worker's own code, and this side
only re-reads the row, so an instant payout's request still answers Confirmed.

Which chains can sign remotely is declared, not guessed:
``Capability.REMOTE_SIGNING`` means every step the worker runs in ``serve``
(broadcast, status, bumps, closing a dropped payout) needs no key; a seedless
``serve`` with a payout chain that lacks it refuses to start
(:func:`check_remote_capable`).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import aiohttp

from . import service as payouts
from ..keys.signer_channel import read_channel_key, signed_headers
from ..infra.config import ConfigError
from ..types.chains import BroadcastError, Capability, DropClosure, FeeAboveCeiling

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

SIGN_PATH = "/v1/sign"
# What the signer does for a payout, each on the row as the database has it: sign it (queued), sign a child
# paying for it (broadcast, waiting in the mempool), close it with a conflicting transaction (missing), or, on a
# SIGNER_SENDS chain, advance it through every stage (send).
SIGN, BUMP, CLOSE, SEND = "sign", "bump", "close", "send"
STEPS = (SIGN, BUMP, CLOSE, SEND)
KEY_SERVICE = "signer_channel_key"  # gateway.services: the channel key, read once
TIMEOUT_SECONDS = 60  # a bitcoin-family signature selects outputs and asks the node: seconds, not minutes
SEND_RETRY_SECONDS = 10  # a signer that could not be asked to send: the payout is handed over again this soon


class SignerUnavailable(RuntimeError):
    """The signer could not be asked or refused the request: the payout waits and is asked again."""


def connection(url: str) -> tuple[aiohttp.BaseConnector, str]:
    """The connector and base URL for ``unix:///path`` or ``http://host:port``."""
    if url.startswith("unix://"):
        return aiohttp.UnixConnector(path=url[len("unix://"):]), "http://signer"
    return aiohttp.TCPConnector(), url.rstrip("/")


def check_remote_capable(gateway: "Gateway") -> None:
    """A seedless serve must not run a payout chain it cannot drive without a key; ``ConfigError`` naming them."""
    unable = sorted(adapter.name for adapter in gateway.chains
                    if adapter.supports(Capability.PAYOUTS) and not adapter.supports(Capability.REMOTE_SIGNING))
    if unable:
        raise ConfigError(f"[signer] url is set but chain(s) {', '.join(unable)} cannot have their payouts signed"
                          " by a separate signer yet: remove them from this process, or sign in-process"
                          " ([signer] in_process = true) until they can")


async def ask_signer(gateway: "Gateway", payout_id: str, step: str = SIGN) -> dict[str, Any]:
    """The signer's answer (a JSON object) to "``step`` payout ``payout_id``" (:data:`STEPS`)."""
    config = gateway.config.signer
    key = gateway.services.get(KEY_SERVICE)
    if not isinstance(key, bytes):
        key = gateway.services[KEY_SERVICE] = read_channel_key(config.key_file)
    body = json.dumps({"payout_id": payout_id, "step": step}).encode()
    connector, base = connection(config.url)
    sent_at = int(time.time())  # the wall clock, not the gateway's: the channel spans hosts
    headers = {"Content-Type": "application/json", **signed_headers(key, body, sent_at)}
    try:
        async with aiohttp.ClientSession(connector=connector,
                                         timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS)) as session:
            async with session.post(base + SIGN_PATH, data=body, headers=headers) as response:
                text = await response.text()
                if response.status != 200:
                    raise SignerUnavailable(f"the signer answered {response.status}: {text[:200]}")
                answer = json.loads(text)
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        raise SignerUnavailable(f"the signer at {config.url} could not be asked: {exc}") from None
    if not isinstance(answer, dict):
        raise SignerUnavailable("the signer's answer is not a JSON object")
    return answer


async def sign_remotely(gateway: "Gateway", row: payouts.Row) -> payouts.Row | None:
    """The payout signed and stored by the signer (the row re-read), or None: held, or no longer ours to send.

    Raises ``FeeAboveCeiling`` when the signer found the fee above the ceiling (nothing signed: it waits)."""
    answer = await ask_signer(gateway, row["id"])
    raise_fee_wait(answer)
    if answer.get("outcome") == "error":
        raise BroadcastError(str(answer.get("message", "")), permanent=bool(answer.get("permanent")),
                             reason=answer.get("reason") or None)
    current = await gateway.db.fetch_one(
        "SELECT * FROM payouts WHERE id = :id AND claim_token = :tok AND stage = :signed",
        {"id": row["id"], "tok": row["claim_token"], "signed": payouts.SIGNED})
    return current


def raise_fee_wait(answer: dict[str, Any]) -> None:
    """Raise ``FeeAboveCeiling`` when the signer refused a step for its fee (the payout waits, never fails)."""
    if answer.get("outcome") == "fee_above_ceiling":
        raise FeeAboveCeiling(str(answer.get("rate", "?")), str(answer.get("ceiling", "?")),
                              str(answer.get("unit", "")))


def _refusal(answer: dict[str, Any]) -> Exception:
    return SignerUnavailable(f"the signer could not {answer.get('step', 'do it')}: {answer.get('message', '')}")


async def bump_remotely(gateway: "Gateway", row: payouts.Row) -> str | None:
    """``bump_stuck`` in the signer (a child, a replacement, a re-signing at the nonce: new signatures); why it
    waits, if it does. Raises ``FeeAboveCeiling`` when the signer says the bump would be above the ceiling."""
    answer = await ask_signer(gateway, row["id"], BUMP)
    raise_fee_wait(answer)
    if answer.get("outcome") != "done":
        raise _refusal(answer)
    detail = answer.get("detail")
    return detail if isinstance(detail, str) else None


async def close_remotely(gateway: "Gateway", row: payouts.Row) -> DropClosure:
    """``close_dropped`` in the signer (the closing transaction spends our inputs: a new signature)."""
    answer = await ask_signer(gateway, row["id"], CLOSE)
    if answer.get("outcome") != "done":
        raise _refusal(answer)
    fee = answer.get("network_fee")
    return DropClosure(closed=answer.get("closed") is True, network_fee=fee if isinstance(fee, int) else 0,
                       detail=answer.get("detail") if isinstance(answer.get("detail"), str) else None)


async def send_remotely(gateway: "Gateway", row: payouts.Row) -> None:
    """Step ``send``: the signer advances the claimed payout of a ``SIGNER_SENDS`` chain through every stage.

    It works under this worker's claim and writes every outcome to the row; an
    unreachable signer (or one that could not finish) leaves the payout where it
    is, never failed blind: nothing here can tell whether the money moved.
    """
    try:
        answer = await ask_signer(gateway, row["id"], SEND)
    except SignerUnavailable as exc:
        await payouts.record_retry(gateway, row, error=str(exc), next_at=gateway.now() + SEND_RETRY_SECONDS)
        return
    if answer.get("outcome") == "error":
        await payouts.record_retry(gateway, row, error=str(_refusal(answer)),
                                   next_at=gateway.now() + SEND_RETRY_SECONDS)
