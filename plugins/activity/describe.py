"""A security event as one sentence for people: the page, the JSON list and the home page's alerts.

Built from the event's kind and details only (short text the announcer
chose, never a secret); templates escape it. A kind this plugin does not
know (another plugin's) still reads sensibly: its name, then its details.
"""

from __future__ import annotations

from typing import Any, Mapping

_SIGN_IN = {"password": "Signed in with the password", "identity_provider": "Signed in through the identity provider",
            "miniapp": "Telegram mini-app session opened"}
# Team changes (the teams plugin's events).
_MEMBER = {"member_invited": "Invited {member} as {role}", "member_joined": "{member} joined as {role}",
           "member_role_changed": "Role of {member} changed from {role_was} to {role}",
           "member_removed": "Removed {member} ({role}); their sessions ended; their API keys: {api_keys}",
           "member_keys_kept": "Kept the API keys of removed member {member} working: {keys}",
           "member_invite_resent": "Sent {member} a new join link ({role}); the previous one stopped working",
           "member_join_refused": "Refused {member} joining as {role} without proving the address ({reason})",
           "team_2fa_required": "Members must now use two-factor authentication (without it: read only)",
           "team_2fa_optional": "Members no longer have to use two-factor authentication",
           # The approvals plugin's decisions: the event's actor approved or rejected.
           "payout_approved": "Approved payout {payout} requested by {requested_by}",
           "payout_rejected": "Rejected payout {payout} requested by {requested_by}",
           "transfer_approved": "Approved transfer {transfer} requested by {requested_by}",
           "transfer_rejected": "Rejected transfer {transfer} requested by {requested_by}"}
# The core's signing policy (core/payouts/signing_gate.py, policy_holds.py): a payout held, then the operator's answer.
_POLICY = {"payout_held_by_policy": "Payout {payout} of {amount} {coin} held by the operator's signing policy"
                                    " ({reason})",
           "payout_policy_released": "Payout {payout} released by {by} past the signing policy ({reason})",
           "payout_policy_cancelled": "Payout {payout} cancelled by {by} ({reason}); re-credited: {recredited}",
           # core/payouts/reserve_release.py: a failed payout the ledger's reserve did not back as its row said.
           "payout_release_refused": "Payout {payout} of {amount} {coin} failed and nothing was re-credited:"
                                     " the ledger held no reserve of it ({reason})",
           "payout_release_mismatch": "Payout {payout} failed; its row no longer matched its reserve ({reason}),"
                                      " so what the ledger reserved was re-credited, not the row's {amount} {coin}"}
_FACTOR = {"totp": "the authenticator code", "recovery_code": "a recovery code"}
_FIRST = {"password": "the password", "identity_provider": "the identity provider", "miniapp": "the Telegram mini-app"}
_VIA = {"dashboard": "on the dashboard", "miniapp": "from the Telegram mini-app",
        "relinked": "because the chat was linked again elsewhere"}


def _chat(details: Mapping[str, Any]) -> str:
    name = details.get("chat_name") or f"#{details.get('chat_id', '?')}"
    username = details.get("chat_username")
    return f"{name} (@{username})" if username else name


def _via(details: Mapping[str, Any]) -> str:
    via = details.get("via")
    return _VIA.get(via, f"({via})") if via else ""


def _first(details: Mapping[str, Any]) -> str:
    method = details.get("method", "")
    return _FIRST.get(method, f"the first step ({method})" if method else "the first step")


def _key(details: Mapping[str, Any]) -> str:
    return f"\u201c{details.get('label', '')}\u201d ({details.get('key_id', '?')})"


def _key_more(details: Mapping[str, Any]) -> str:
    """What else a key event says: the scopes it was given, why it was revoked."""
    more = [f"scopes {details['scopes']}"] if details.get("scopes") else []
    more += [details["reason"]] if details.get("reason") else []
    return f" ({'; '.join(more)})" if more else ""


def describe(kind: str, details: Mapping[str, Any]) -> str:
    if kind == "sign_in":
        text = _SIGN_IN.get(details.get("method", ""), f"Signed in ({details.get('method', 'unknown method')})")
        text = f"{text} from Telegram chat {_chat(details)}" if "chat_id" in details else text
        factor = details.get("second_factor")
        return f"{text} (two-factor: {_FACTOR.get(factor, factor)})" if factor else text
    if kind == "sign_in_locked":
        if details.get("then") == "challenge":
            return (f"{details.get('failures', 'Too many')} wrong passwords: for {details.get('locked_minutes', '?')}"
                    " minutes a sign-in goes on only past the human check (captcha)")
        return (f"Sign-in locked for {details.get('locked_minutes', '?')} minutes after "
                f"{details.get('failures', 'too many')} wrong passwords")
    if kind == "second_factor_refused":
        return f"Sign-in stopped at the two-factor step: a wrong code after {_first(details)}"
    if kind == "recovery_code_used":
        return (f"Signed in with a recovery code after {_first(details)}; "
                f"{details.get('remaining', '?')} left")
    if kind == "recovery_codes_created":
        return " ".join(filter(None, ("New recovery codes made", _via(details)))) + "; the older ones no longer work"
    if kind == "password_changed":
        return "Password changed"
    if kind in ("totp_enabled", "totp_disabled"):
        state = "on" if kind == "totp_enabled" else "off"
        return f"Two-factor authentication turned {state} {_via(details)}".rstrip()
    if kind.startswith("api_key_"):
        return f"API key {_key(details)} {kind[len('api_key_'):]}{_key_more(details)}"
    if kind == "chat_linked":
        return f"Telegram chat {_chat(details)} linked"
    if kind == "chat_unlinked":
        return f"Telegram chat {_chat(details)} unlinked {_via(details)}".rstrip()
    if kind == "member_joined" and "proven_by" in details:
        return f"{details.get('member', '?')} joined as {details.get('role', '?')}, proving the address with" \
               f" {details['proven_by']}"
    if kind == "identity_linked":
        return f"Identity-provider account linked to the account holder ({details.get('issuer', '?')})"
    if kind in _POLICY:
        return _POLICY[kind].format(**{name: details.get(name, "?") for name in
                                       ("payout", "amount", "coin", "reason", "by", "recredited")})
    if kind in _MEMBER:
        return _MEMBER[kind].format(member=details.get("member", "?"), role=details.get("role", "?"),
                                    reason=details.get("reason", "?"),
                                    role_was=details.get("role_was", "?"), payout=details.get("payout", "?"),
                                    transfer=details.get("transfer", "?"),
                                    requested_by=details.get("requested_by", "?"),
                                    api_keys=details.get("api_keys", "none"), keys=details.get("keys", "?"))
    shown = ", ".join(f"{name}: {value}" for name, value in sorted(details.items()))
    return kind.replace("_", " ").capitalize() + (f" ({shown})" if shown else "")
