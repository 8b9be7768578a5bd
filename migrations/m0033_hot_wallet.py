"""Hot and cold wallets (issue 45 item 3).

``custody_coins.hot``: what the node showed a payout can spend now (hot
wallet and unswept deposit outputs, not cold, not in flight) at the coin's
latest custody check; NULL when the node could not say. /metrics compares it
with the operator's floor (``orbchain_hot_wallet_below_floor``) in whichever
process answers the scrape.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE custody_coins ADD COLUMN hot {amount}"]
