"""A simulated node outage (``orbchain devnet outage on|off``): one row while the node is "down".

In the database, like the chain itself, so the CLI in another shell takes
every server process's node away at once (tests and bench/soak.py use it).
"""


def up(dialect: str) -> list[str]:
    return ["CREATE TABLE devnet_outage (one INTEGER PRIMARY KEY CHECK (one = 1), since {ts} NOT NULL)"]
