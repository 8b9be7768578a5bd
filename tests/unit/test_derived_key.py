"""Keys by purpose (core/keys/derived.py, issue 44 item 4): one key per purpose, none of them the root secret
or another's, the core's own refused to plugins, and the keys plugins derived by hand before unchanged."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

from orbchain.api import PurposeError, derived_key
from orbchain.core.keys.derived import purpose_key
from orbchain.core.keys.secrets import Secrets
from orbchain.core.payouts.binding import binding_key

ROOT = b"r" * 48


class _Gateway:
    def __init__(self, root: bytes = ROOT) -> None:
        self.secrets = Secrets(jwt_secret=root, seed_material="", receipt_key=None)  # type: ignore[arg-type]

    def require_secrets(self) -> Secrets:
        return self.secrets


def test_a_new_purpose_is_hkdf_expand_of_the_root_secret():
    """RFC 5869's Expand (SHA-256, 32 bytes) with the namespaced info: a standard construction, checked
    against an independent implementation."""
    expected = HKDFExpand(hashes.SHA256(), 32, b"orbchain/derived-key/v1\x00tips/widget").derive(ROOT)
    assert derived_key(_Gateway(), "tips/widget") == expected
    assert len(expected) == 32 and expected != ROOT[:32]


def test_each_purpose_and_each_root_has_its_own_key():
    keys = {derived_key(_Gateway(), purpose) for purpose in ("tips/widget", "tips/widget2", "links/widget")}
    assert len(keys) == 3
    assert derived_key(_Gateway(b"s" * 48), "tips/widget") != derived_key(_Gateway(), "tips/widget")


def test_the_keys_plugins_derived_before_stay_the_same_across_the_upgrade():
    """Each purpose that existed before derived_key is what the plugin computed itself, so a cookie, a link
    token or a mini-app session issued before the upgrade still verifies after it."""
    before = {
        "dashboard/session": b"orbchain dashboard session",
        "dashboard/payout-review": b"orbchain dashboard payout review",
        "oidc/login-state": b"orbchain plugin oidc: login state cookie v1",
        "telegram/link-token": b"orbchain telegram link token v1",
        "telegram/miniapp-session": b"orbchain tgapp session v1",
    }
    for purpose, label in before.items():
        assert derived_key(_Gateway(), purpose) == hmac.new(ROOT, label, hashlib.sha256).digest(), purpose
    old_binding = hmac.new(ROOT, b"orbchain payout binding v1", hashlib.sha256).digest()
    assert binding_key(_Gateway()) == purpose_key(_Gateway().secrets, "core/payout-binding") == old_binding  # type: ignore[arg-type]


def test_the_cores_namespace_is_refused_to_a_plugin():
    """The payout binding key is what the signing boundary trusts: a plugin holding it could bind a payout
    to its own destination, so ``derived_key`` never hands it out (the core derives it itself)."""
    with pytest.raises(PurposeError, match="core's own"):
        derived_key(_Gateway(), "core/payout-binding")
    with pytest.raises(PurposeError):
        derived_key(_Gateway(), "core/anything")


@pytest.mark.parametrize("purpose", ["", "session", "/session", "tips/", "Tips/widget", "tips/Widget",
                                     "tips/a/b", "tips widget/x", "tips/\x00", "t" * 41 + "/x", "tips/" + "x" * 65,
                                     "1tips/x", None, b"tips/widget"])
def test_a_malformed_purpose_is_refused(purpose):
    with pytest.raises(PurposeError, match="<plugin>/<name>"):
        derived_key(_Gateway(), purpose)  # type: ignore[arg-type]


def test_no_purpose_key_is_a_dashboard_jwt_signature():
    """A dashboard JWT's HS256 signature is HMAC(jwt_secret, header.payload): if a plugin could choose the
    HMAC's input it could sign any merchant's token. Every input here has a NUL or a space, which a
    JWT's signing input (base64url and dots) never has, and a purpose is refused unless it is namespaced."""
    with pytest.raises(PurposeError):
        derived_key(_Gateway(), "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtXzEifQ")
