"""TOTP checked against RFC 6238's published vectors, not against the pyotp the product verifies with.

RFC 6238 Appendix B lists, for the SHA-1 secret "12345678901234567890" (ASCII),
a 30 s step and T0 = 0, the 8-digit codes below. The gateway uses 6 digits;
RFC 4226's truncation takes the code modulo 10^digits, so the 6-digit code is
the 8-digit one's last six digits. Each must be accepted at its time on the
product's verify path (``auth.matching_totp_step`` and ``accounts.verify_totp``,
which every TOTP-protected endpoint calls) for exactly its own time step.

Breaks caught: another hash (SHA-256), another step length or offset, another
truncation (each tried: the step or the code no longer matches).
"""

from __future__ import annotations

import base64

import pytest

from orbchain.core.accounts import merchants as accounts, auth

SECRET_ASCII = b"12345678901234567890"
SECRET = base64.b32encode(SECRET_ASCII).decode()  # as authenticator apps and the product store it
# RFC 6238 Appendix B, SHA1 column: (Unix time, 8-digit TOTP).
RFC6238_SHA1 = [
    (59, "94287082"),
    (1111111109, "07081804"),
    (1111111111, "14050471"),
    (1234567890, "89005924"),
    (2000000000, "69279037"),
    (20000000000, "65353130"),
]


def test_the_secret_is_the_rfcs():
    assert SECRET == "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"


@pytest.mark.parametrize("unix_time, code8", RFC6238_SHA1)
def test_rfc_6238_vectors_match_their_own_step(unix_time, code8):
    code = code8[-6:]
    assert auth.normalize_totp_code(code) == code
    assert auth.matching_totp_step(SECRET, code, unix_time) == unix_time // 30
    assert auth.matching_totp_step(SECRET, code, unix_time + 90) is None  # three steps later: too old


async def test_rfc_6238_vectors_pass_the_accounts_verify_path(gateway):
    """The stored secret, the replay guard and the lockout path of ``verify_totp`` with the RFC's codes."""
    merchant = (await accounts.sign_up(gateway, "rfc6238@example.com", "s3cret-pass")).merchant_id
    await gateway.db.execute("UPDATE merchants SET totp_secret = :s, totp_enabled = :t WHERE id = :id",
                             {"s": SECRET, "t": True, "id": merchant})
    for unix_time, code8 in RFC6238_SHA1[:4]:  # increasing times: each is a new step
        assert not await accounts.verify_totp(gateway.db, merchant, str((int(code8) + 1) % 10**6).zfill(6),
                                              now=unix_time)
        assert await accounts.verify_totp(gateway.db, merchant, code8[-6:], now=unix_time), (unix_time, code8)
        assert not await accounts.verify_totp(gateway.db, merchant, code8[-6:], now=unix_time)  # replay
