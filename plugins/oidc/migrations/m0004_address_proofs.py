"""A started sign-in may prove an address for another plugin (issue 42): its purpose and reference.

``oidc_logins.proof_purpose``/``proof_reference`` are set when another
plugin asked for the proof (``decide_address_prover``: the teams plugin, for
an invitation); the callback then hands the verified address to that
plugin (``decide_proven_address``) instead of signing in by it. A link row
with ``link_merchant_id`` and no ``link_member_id`` is now the account
holder linking their own identity (before, such rows were never written).
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE oidc_logins ADD COLUMN proof_purpose TEXT",
        "ALTER TABLE oidc_logins ADD COLUMN proof_reference TEXT",
    ]
