"""Who reads which entries of the security log (issue 42 item 7).

The log holds every person's sign-ins with their IP address and device. The
account holder, owners and admins (every role holding ``activity:read``,
which the teams plugin's owner and admin roles hold like every scope) read
the whole account's log; any other member reads only the entries they made
themselves (their actor, ``member <e-mail>``): their own sign-ins and what
they changed. The page, ``GET /dashboard/activity``, the home page's alerts
and dismissing an alert all apply the same rule.
"""

from __future__ import annotations

from typing import Any

SCOPE = "activity:read"
DESCRIPTION = ("Read the whole account's security log (everyone's sign-ins, IP addresses and devices); without it a"
               " member reads only their own entries.")


def own_entries_of(principal: Any) -> str | None:
    """The actor whose entries alone ``principal`` may read; None when they read the whole account's log.

    ``principal`` None is the account holder's own dashboard session (as plugin pages receive it).
    """
    if principal is None or principal.has_scope(SCOPE):
        return None
    return principal.actor
