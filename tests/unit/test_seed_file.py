"""The seed encrypted at rest (issue 45 item 1): a round trip, a wrong passphrase and any edit refused, the
passphrase from the environment or a systemd credential only, and config check saying which form it is."""

from __future__ import annotations

import base64
import json
import logging
import os

import pytest

from orbchain import cli
from orbchain.core.cli.ops import static_findings
from orbchain.core.infra.config import ConfigError, load_config
from orbchain.core.keys.secrets import load_secrets
from orbchain.core.keys.seed_file import (CREDENTIAL_NAME, PASSPHRASE_VARIABLE, SeedFileError, decrypt_seed,
                                          encrypt_seed, is_encrypted)
from orbchain.core.startup import build_gateway

MNEMONIC = " ".join(["abandon"] * 23 + ["art"])
PASSPHRASE = "correct horse battery staple"


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """No passphrase anywhere unless a test puts it there."""
    for name in [n for n in os.environ if n.startswith("ORBCHAIN_")] + ["CREDENTIALS_DIRECTORY"]:
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def production(tmp_path, seed_file, environment="production"):
    return load_config(None, environ={}).with_overrides(
        server={"data_dir": str(tmp_path / "var"), "environment": environment},
        secrets={"jwt_secret": "j" * 40, "receipt_signing_key": "A" * 43 + "=", "seed_file": str(seed_file)},
        signer={"key_file": str(tmp_path / "signer_key")})


def test_a_round_trip_keeps_no_seed_word_in_the_file():
    sealed = encrypt_seed(MNEMONIC, PASSPHRASE)
    assert is_encrypted(sealed) and "abandon" not in sealed and not is_encrypted(MNEMONIC)
    assert decrypt_seed(sealed, PASSPHRASE) == MNEMONIC
    assert encrypt_seed(MNEMONIC, PASSPHRASE) != sealed  # a fresh salt and nonce each time


def test_a_wrong_passphrase_is_refused():
    with pytest.raises(SeedFileError, match="wrong passphrase"):
        decrypt_seed(encrypt_seed(MNEMONIC, PASSPHRASE), PASSPHRASE + "!")
    with pytest.raises(SeedFileError, match="at least 12"):
        encrypt_seed(MNEMONIC, "short")


def _flip(text: str) -> str:
    raw = bytearray(base64.b64decode(text))
    raw[len(raw) // 2] ^= 1
    return base64.b64encode(bytes(raw)).decode()


@pytest.mark.parametrize("edit, words", [
    (lambda f: {**f, "ciphertext": _flip(f["ciphertext"])}, "does not authenticate"),
    (lambda f: {**f, "nonce": _flip(f["nonce"])}, "does not authenticate"),
    (lambda f: {**f, "salt": _flip(f["salt"])}, "does not authenticate"),
    (lambda f: {**f, "params": {**f["params"], "iterations": 2}}, "does not authenticate"),
    (lambda f: {**f, "params": {**f["params"], "memory_cost": 2 ** 40}}, "not a readable"),
    (lambda f: {**f, "version": 2}, "not a readable"),
    (lambda f: {k: v for k, v in f.items() if k != "nonce"}, "not a readable"),
])
def test_a_tampered_file_is_refused(edit, words):
    found = json.loads(encrypt_seed(MNEMONIC, PASSPHRASE))
    with pytest.raises(SeedFileError, match=words):
        decrypt_seed(json.dumps(edit(found)), PASSPHRASE)


def test_the_passphrase_comes_from_the_environment_or_a_credential_never_the_config(shell, monkeypatch):
    seed_file = shell / "seed"
    seed_file.write_text(encrypt_seed(MNEMONIC, PASSPHRASE) + "\n")
    config = production(shell, seed_file)
    with pytest.raises(SeedFileError, match=f"{PASSPHRASE_VARIABLE} or the systemd credential"):
        load_secrets(config)
    credentials = shell / "credentials"
    credentials.mkdir()
    (credentials / CREDENTIAL_NAME).write_text(PASSPHRASE + "\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(credentials))
    loaded = load_secrets(config)
    assert loaded.seed_material == MNEMONIC and loaded.seed_encrypted
    monkeypatch.setenv(PASSPHRASE_VARIABLE, "a wrong passphrase")  # the environment comes first
    with pytest.raises(SeedFileError, match="wrong passphrase"):
        load_secrets(config)
    with pytest.raises(ConfigError, match="unknown"):
        load_config(None, environ={}).with_overrides(secrets={"seed_file_passphrase": PASSPHRASE})


def test_encrypt_seed_rewrites_the_file_once_and_the_gateway_opens_it(shell, monkeypatch, capsys):
    seed_file = shell / "seed"
    seed_file.write_text(MNEMONIC + "\n")
    os.chmod(seed_file, 0o600)
    monkeypatch.setenv(PASSPHRASE_VARIABLE, PASSPHRASE)
    assert cli.main(["secrets", "encrypt-seed", "--file", str(seed_file)]) == 0
    assert "encrypted" in capsys.readouterr().out
    assert is_encrypted(seed_file.read_text()) and os.stat(seed_file).st_mode & 0o077 == 0
    assert [p.name for p in shell.iterdir()] == ["seed"]  # no scratch file left
    assert load_secrets(production(shell, seed_file)).seed_material == MNEMONIC
    assert cli.main(["secrets", "encrypt-seed", "--file", str(seed_file)]) == 2
    assert "encrypted already" in capsys.readouterr().err


def test_change_passphrase_seals_the_same_seed_again_and_refuses_what_it_cannot_open(shell, monkeypatch, capsys):
    """Issue 45: a passphrase can be rotated without a new seed; the old one stops opening the file."""
    seed_file = shell / "seed"
    seed_file.write_text(encrypt_seed(MNEMONIC, PASSPHRASE))
    os.chmod(seed_file, 0o600)
    before = seed_file.read_text()
    new = "a different passphrase entirely"
    monkeypatch.setenv(PASSPHRASE_VARIABLE, PASSPHRASE + "!")  # wrong current passphrase: nothing changes
    monkeypatch.setenv("ORBCHAIN_SEED_FILE_NEW_PASSPHRASE", new)
    assert cli.main(["secrets", "change-passphrase", "--file", str(seed_file)]) == 2
    assert "wrong passphrase" in capsys.readouterr().err and seed_file.read_text() == before
    monkeypatch.setenv(PASSPHRASE_VARIABLE, PASSPHRASE)
    monkeypatch.setenv("ORBCHAIN_SEED_FILE_NEW_PASSPHRASE", PASSPHRASE)
    assert cli.main(["secrets", "change-passphrase", "--file", str(seed_file)]) == 2
    assert "is the current one" in capsys.readouterr().err and seed_file.read_text() == before
    monkeypatch.setenv("ORBCHAIN_SEED_FILE_NEW_PASSPHRASE", new)
    assert cli.main(["secrets", "change-passphrase", "--file", str(seed_file)]) == 0
    assert "sealed" in capsys.readouterr().out and [p.name for p in shell.iterdir()] == ["seed"]
    assert os.stat(seed_file).st_mode & 0o077 == 0
    assert decrypt_seed(seed_file.read_text(), new) == MNEMONIC
    with pytest.raises(SeedFileError):
        decrypt_seed(seed_file.read_text(), PASSPHRASE)
    monkeypatch.setenv(PASSPHRASE_VARIABLE, new)
    assert load_secrets(production(shell, seed_file)).seed_material == MNEMONIC
    plain = shell / "plain"
    plain.write_text(MNEMONIC + "\n")
    assert cli.main(["secrets", "change-passphrase", "--file", str(plain)]) == 2
    assert "not encrypted" in capsys.readouterr().err and plain.read_text() == MNEMONIC + "\n"


def test_config_check_says_whether_the_seed_is_encrypted_and_production_warns_plaintext(shell, monkeypatch, caplog):
    plain = shell / "plain"
    plain.write_text(MNEMONIC + "\n")
    sealed = shell / "sealed"
    sealed.write_text(encrypt_seed(MNEMONIC, PASSPHRASE))

    def seed_line(path, environment="production"):
        findings = {f.check: f for f in static_findings(build_gateway(production(shell, path, environment)))}
        return findings.get("seed") or findings["secrets"]

    assert (seed_line(plain).level, "plaintext at rest" in seed_line(plain).detail) == ("WARN", True)
    assert seed_line(plain, "development").level == "OK"
    failed = seed_line(sealed)
    assert failed.check == "secrets" and failed.level == "FAIL" and PASSPHRASE_VARIABLE in failed.detail
    monkeypatch.setenv(PASSPHRASE_VARIABLE, PASSPHRASE)
    assert (seed_line(sealed).level, "encrypted at rest" in seed_line(sealed).detail) == ("OK", True)
    with caplog.at_level(logging.WARNING):
        load_secrets(production(shell, plain))
    assert "the seed is stored in plaintext" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        load_secrets(production(shell, sealed))
    assert "plaintext" not in caplog.text
