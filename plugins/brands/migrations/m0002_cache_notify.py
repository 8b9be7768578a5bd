"""PostgreSQL only: every process forgets its cached page looks when a brand changes.

Hosted pages read a brand's looks from a per-process cache
(plugins/brands/branding.py, ``orbchain.api.cached``). The core's
``orbchain_auth_changed()`` trigger function (core migration m0010) NOTIFYs
the channel every process listens on, so a change committed by any process,
or by an operator in psql, empties every cache. SQLite deployments are one
process: store.py empties the cache in process.
"""


def up(dialect: str) -> list[str]:
    if dialect != "postgresql":
        return []
    return ["CREATE TRIGGER brands_cache_changed AFTER INSERT OR UPDATE OR DELETE ON brands"
            " FOR EACH STATEMENT EXECUTE FUNCTION orbchain_auth_changed()"]
