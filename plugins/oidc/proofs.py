"""Proving an e-mail address for another plugin (``decide_address_prover``): an invited person's, above all.

The teams plugin asks (``AddressProver.start``): the browser goes to the
provider with a sign-in marked with that plugin's purpose and reference
(``logins.AddressRequest``), bound to that browser like every sign-in. Back
at the callback, :func:`complete` hands the verified address to the plugin
(``decide_proven_address``), which checks it is the address it asked for and
answers the member it made; the identity is then linked to that member and
signs them in (``linking.py``). So the person who proves the address is the
person who pressed the button, in that browser: whoever holds the
invitation's page link but signs in to the provider as someone else joins
nobody.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...api import AccountSession, InvalidRequest, ProvenAddress, SecondFactorDue
from .identities import verified_email
from .linking import LinkedElsewhere, left_behind, link, linked_to
from .logins import AddressRequest, LinkTarget
from .provider import Identity

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

LABEL = "Continue with your identity provider"


async def complete(gateway: "Gateway", identity: Identity,
                   request: AddressRequest) -> AccountSession | SecondFactorDue:
    """Give the verified address to the plugin that asked; link and sign in whom it answers.

    403 ``email_not_verified``; 409 ``identity_linked`` for an identity that
    already signs in elsewhere (an address is one sign-in), before the
    plugin is asked, so nothing is changed; what the plugin raises; 400
    ``invalid_state`` when no plugin takes the proof.
    """
    address = ProvenAddress(verified_email(identity), identity.issuer, identity.subject)
    row = await linked_to(gateway, identity)
    if row is not None and not await left_behind(gateway, row):
        raise LinkedElsewhere()
    member = await gateway.hooks.decide_proven_address(purpose=request.purpose, reference=request.reference,
                                                       address=address)
    if member is None:
        raise InvalidRequest("nothing was waiting for this sign-in any more; please start again",
                             code="invalid_state")
    return await link(gateway, identity, LinkTarget(member.merchant_id, member.member_id))
