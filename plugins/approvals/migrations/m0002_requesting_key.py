"""The API key a held payout or transfer was requested with, apart from the person who asked (issue 42).

``requested_by`` names a person (``holder``, ``member:<id>``) or ``system``; a payout made with an API key
is the key's issuer's, and ``key_id`` names the key: the per-person daily limit sums everything a person
asked for, keys included, and the per-key limit sums ``key_id``. Rows written as ``key:<id>`` before are
the holder's with that key: keys issued before core migration m0025 are the holder's.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE approval_holds ADD COLUMN key_id TEXT",
        "ALTER TABLE approval_spend ADD COLUMN key_id TEXT",
        "UPDATE approval_holds SET key_id = substr(requested_by, 5), requested_by = 'holder'"
        " WHERE requested_by LIKE 'key:%'",
        "UPDATE approval_spend SET key_id = substr(requested_by, 5), requested_by = 'holder'"
        " WHERE requested_by LIKE 'key:%'",
        "CREATE INDEX approval_spend_key_day ON approval_spend (merchant_id, key_id, day)",
    ]
