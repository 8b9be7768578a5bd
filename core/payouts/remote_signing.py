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
Lightning, where the node's paying macaroon moves the money) is signed the
same way, and its two other key-holding stages are asked of the signer too
(:class:`SignerSends`, the worker's sender for such a payout): ``pay`` (the
signer pays the row's stored, sealed invoice) and ``status`` (the signer asks
its node about the payment). The signer answers and writes nothing but its
signing records; this side's worker records the stages and finishes the payout
(status, ledger, events) as for any chain after broadcast, so the signer's
database role never needs ``payouts.status`` or the ledger, and an instant
payout's request still answers Confirmed.

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
from ..types.chains import (BroadcastError, Capability, DropClosure, FeeAboveCeiling, PayoutOrder, PayoutSender,
                            PayoutStatus, SignedPayout)
from ..types.services import ServiceKey

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

SIGN_PATH = "/v1/sign"
# What the signer does for a payout, each on the row as the database has it: sign it (queued), sign a child
# paying for it (broadcast, waiting in the mempool), close it with a conflicting transaction (missing), or, on a
# SIGNER_SENDS chain, pay its stored bytes (signed or broadcast) and say where the payment stands (status).
SIGN, BUMP, CLOSE, PAY, STATUS = "sign", "bump", "close", "pay", "status"
STEPS = (SIGN, BUMP, CLOSE, PAY, STATUS)
KEY_SERVICE = ServiceKey("signer_channel_key", bytes)  # the channel key, read once
TIMEOUT_SECONDS = 60  # a bitcoin-family signature selects outputs and asks the node: seconds, not minutes


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
    raise_chain_refusal(answer)
    current = await gateway.db.fetch_one(
        "SELECT * FROM payouts WHERE id = :id AND claim_token = :tok AND stage = :signed",
        {"id": row["id"], "tok": row["claim_token"], "signed": payouts.SIGNED})
    return current


def raise_fee_wait(answer: dict[str, Any]) -> None:
    """Raise ``FeeAboveCeiling`` when the signer refused a step for its fee (the payout waits, never fails)."""
    if answer.get("outcome") == "fee_above_ceiling":
        raise FeeAboveCeiling(str(answer.get("rate", "?")), str(answer.get("ceiling", "?")),
                              str(answer.get("unit", "")))


def raise_chain_refusal(answer: dict[str, Any]) -> None:
    """Raise the ``BroadcastError`` the chain raised in the signer, so the worker's retry and failure rules apply."""
    if answer.get("outcome") == "error":
        raise BroadcastError(str(answer.get("message", "")), permanent=bool(answer.get("permanent")),
                             reason=answer.get("reason") or None)


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


class SignerSends(PayoutSender):
    """The worker's sender, in ``serve``, for one claimed payout of a ``SIGNER_SENDS`` chain.

    Paying and following the payment need the paying credential, so each is a
    request to the signer, which acts on the row's stored bytes (never on
    ``signed``, the worker's copy of them) and writes nothing the worker
    records: this process keeps the stage machine, the retries and the finish.
    Signing goes through :func:`sign_remotely`, as for any chain.
    """

    def __init__(self, gateway: "Gateway", payout_id: str, payout_confirmations: int) -> None:
        self._gateway, self._payout_id = gateway, payout_id
        self.payout_confirmations = payout_confirmations

    async def sign_payout(self, order: PayoutOrder) -> SignedPayout:
        raise BroadcastError("signed by the signer, never here")  # the worker signs through sign_remotely

    async def broadcast(self, signed: SignedPayout) -> None:
        answer = await ask_signer(self._gateway, self._payout_id, PAY)
        raise_chain_refusal(answer)
        if answer.get("outcome") != "done":
            raise _refusal(answer)

    async def payout_status(self, signed: SignedPayout) -> PayoutStatus:
        answer = await ask_signer(self._gateway, self._payout_id, STATUS)
        if answer.get("outcome") != "done":
            raise _refusal(answer)
        fee, details, reason = answer.get("network_fee"), answer.get("details"), answer.get("failure_reason")
        depth = answer.get("confirmations")
        return PayoutStatus(found=answer.get("found") is True, confirmations=depth if isinstance(depth, int) else 0,
                            failed=answer.get("failed") is True, network_fee=fee if isinstance(fee, int) else None,
                            details=details if isinstance(details, dict) else {},
                            failure_reason=reason if isinstance(reason, str) else None)
