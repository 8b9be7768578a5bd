"""``orbchain secrets init`` (issues 32, 42): production secret files, their permissions, no silent overwrite,
and all of them or none."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from orbchain import cli
from orbchain.core.cli.secrets_init import NAMES
from orbchain.core.infra.config import load_config
from orbchain.core.keys.secrets import load_secrets
from orbchain.core.keys.bip39 import mnemonic_to_seed


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """An operator's shell: no gateway variables, a loose umask that must not loosen the files."""
    for name in [n for n in os.environ if n.startswith("ORBCHAIN_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    old = os.umask(0o002)
    yield tmp_path
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def test_writes_every_secret_0600_in_a_0700_folder_that_production_loads(shell, capsys):
    folder = shell / "etc" / "credentials"
    assert cli.main(["secrets", "init", "--dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert mode(folder) == 0o700
    assert sorted(p.name for p in folder.iterdir()) == sorted(NAMES)
    for name in NAMES:
        assert mode(folder / name) == 0o600, name
        assert f"wrote    {folder / name} (0600)" in out
    # What to back up, and what losing each means, is printed for each file.
    backup = out.split("Back up now", 1)[1]
    for name in NAMES:
        assert f"  {name} " in backup
    assert "UNRECOVERABLE" in backup and "signs everyone out" in backup
    seed = (folder / "seed").read_text().split()
    assert len(seed) == 24 and len(mnemonic_to_seed(" ".join(seed))) == 64
    config = load_config(None, environ={
        "ORBCHAIN_ENVIRONMENT": "production", "ORBCHAIN_DATA_DIR": str(shell / "var"),
        "ORBCHAIN_SECRETS__SEED_FILE": str(folder / "seed"),
        "ORBCHAIN_SECRETS__JWT_SECRET_FILE": str(folder / "jwt_secret"),
        "ORBCHAIN_SECRETS__RECEIPT_SIGNING_KEY_FILE": str(folder / "receipt_signing_key"),
    })
    secrets = load_secrets(config)
    assert secrets.seed_material == " ".join(seed) and not secrets.receipt_key_generated
    assert not (shell / "var").exists()  # nothing was generated in its place


def test_an_existing_file_is_never_overwritten_silently(shell, capsys):
    folder = shell / "credentials"
    assert cli.main(["secrets", "init", "--dir", str(folder)]) == 0
    before = contents(folder)
    capsys.readouterr()

    assert cli.main(["secrets", "init", "--dir", str(folder)]) == 1
    err = capsys.readouterr().err
    assert contents(folder) == before
    assert f"{folder / 'seed'} exists, not overwritten" in err and "nothing written" in err

    (folder / "jwt_secret").unlink()
    assert cli.main(["secrets", "init", "--dir", str(folder), "--keep-existing"]) == 0
    out = capsys.readouterr().out
    after = contents(folder)
    assert {k: v for k, v in after.items() if k != "jwt_secret"} == {k: v for k, v in before.items()
                                                                      if k != "jwt_secret"}
    assert after["jwt_secret"] != before["jwt_secret"] and f"kept     {folder / 'seed'}" in out

    assert cli.main(["secrets", "init", "--dir", str(folder), "--replace", "seed"]) == 0
    out = capsys.readouterr().out
    replaced = [p for p in folder.iterdir() if p.name.startswith("seed.replaced-")]
    assert len(replaced) == 1 and replaced[0].read_text() == before["seed"] and mode(replaced[0]) == 0o600
    assert (folder / "seed").read_text() != before["seed"] and mode(folder / "seed") == 0o600
    assert "REPLACED" in out and "UNRECOVERABLE" in out.split("REPLACED", 1)[1].splitlines()[0]


def test_a_loose_existing_folder_is_tightened_and_said_so(shell, capsys):
    folder = shell / "credentials"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    assert cli.main(["secrets", "init", "--dir", str(folder)]) == 0
    assert mode(folder) == 0o700
    assert "permissions 0755 tightened to 0700" in capsys.readouterr().out


def test_an_unknown_name_to_replace_is_refused(shell, capsys):
    with pytest.raises(SystemExit):
        cli.main(["secrets", "init", "--dir", str(shell / "c"), "--replace", "passwords"])
    assert not (shell / "c").exists()


def test_processes_starting_together_in_development_share_one_generated_secret(shell):
    """CI break: two hosts on one data_dir started at once; the second died with FileExistsError on jwt_secret.

    Each generated file is written whole under a private name and linked into
    place, so every starter ends with the same complete secrets."""
    import threading

    config = load_config(None, environ={"ORBCHAIN_DATA_DIR": str(shell / "var")})
    barrier, found, failed = threading.Barrier(8), [], []

    def start() -> None:
        barrier.wait()
        try:
            found.append(load_secrets(config))
        except Exception as exc:  # noqa: BLE001 - the test reports any failure, whatever it is
            failed.append(exc)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failed and len(found) == 8
    assert len({(s.jwt_secret, s.seed_material, bytes(s.receipt_key)) for s in found}) == 1
    assert sorted(p.name for p in (shell / "var").iterdir()) == ["jwt_secret", "receipt_signing_key", "seed"]


# -- all or none (issue 42 item 8) ------------------------------------------------------------------------


def test_a_planted_symlink_for_the_third_file_stops_the_command_before_any_file_is_written(shell, capsys):
    """Break: seed and receipt key were written, then jwt_secret's planted link refused: two stray secrets."""
    folder = shell / "credentials"
    folder.mkdir(mode=0o700)
    elsewhere = shell / "attacker-reads-this"
    (folder / "jwt_secret").symlink_to(elsewhere)  # dangling: writing through it would create the target
    assert cli.main(["secrets", "init", "--dir", str(folder)]) == 1
    err = capsys.readouterr().err
    assert f"{folder / 'jwt_secret'} is a symbolic link" in err and "nothing written" in err
    assert sorted(p.name for p in folder.iterdir()) == ["jwt_secret"]  # nothing new, scratch files included
    assert not elsewhere.exists() and (folder / "jwt_secret").is_symlink()


def test_a_symlink_to_a_known_file_is_never_kept_as_a_secret(shell, capsys):
    """Break: --keep-existing kept a link to a file someone else knows: the gateway would sign sessions with it."""
    folder = shell / "credentials"
    assert cli.main(["secrets", "init", "--dir", str(folder)]) == 0
    known = shell / "known"
    known.write_text("a secret the attacker chose\n")
    (folder / "jwt_secret").unlink()
    (folder / "jwt_secret").symlink_to(known)
    before = {p.name: os.readlink(p) if p.is_symlink() else p.read_text() for p in folder.iterdir()}
    capsys.readouterr()
    for args in (["--keep-existing"], ["--replace", "jwt_secret"], ["--replace", "seed"]):
        assert cli.main(["secrets", "init", "--dir", str(folder), *args]) == 1, args
        assert "is a symbolic link" in capsys.readouterr().err
        assert {p.name: os.readlink(p) if p.is_symlink() else p.read_text() for p in folder.iterdir()} == before
    assert known.read_text() == "a secret the attacker chose\n"


def test_something_that_is_not_a_file_or_a_folder_of_files_is_refused(shell, capsys):
    folder = shell / "credentials"
    folder.mkdir()
    (folder / "metrics_token").mkdir()
    assert cli.main(["secrets", "init", "--dir", str(folder), "--keep-existing"]) == 1
    assert "metrics_token exists and is not a regular file" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["metrics_token"]
    not_a_folder = shell / "plain-file"
    not_a_folder.write_text("")
    assert cli.main(["secrets", "init", "--dir", str(not_a_folder)]) == 1
    assert "is not a folder" in capsys.readouterr().err


def test_a_failure_while_placing_the_files_puts_everything_back(shell, capsys, monkeypatch):
    """A file that appears between the check and the write (or a full disk) ends with nothing new, and a
    replaced file is back in its place."""
    folder = shell / "credentials"
    assert cli.main(["secrets", "init", "--dir", str(folder)]) == 0
    (folder / "metrics_token").unlink()
    before = contents(folder)
    real_link = os.link

    def link(src, dst, **kwargs):
        if Path(dst).name == "metrics_token":  # the last file: someone planted it meanwhile
            Path(dst).symlink_to(shell / "elsewhere")
        return real_link(src, dst, **kwargs)

    monkeypatch.setattr(os, "link", link)
    capsys.readouterr()
    assert cli.main(["secrets", "init", "--dir", str(folder), "--replace", "seed"]) != 0
    monkeypatch.undo()
    assert "File exists; nothing was written" in capsys.readouterr().err
    (folder / "metrics_token").unlink()  # the planted link, untouched
    assert contents(folder) == before  # the seed is the old one, no .replaced- copy, no scratch file
    assert not (shell / "elsewhere").exists()


def test_a_folder_made_for_nothing_is_removed_again(shell, capsys, monkeypatch):
    folder = shell / "new" / "credentials"

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device", str(folder / "seed"))

    monkeypatch.setattr("orbchain.core.cli.secrets_init.write_scratch", full_disk)
    assert cli.main(["secrets", "init", "--dir", str(folder)]) != 0
    assert "No space left on device; nothing was written" in capsys.readouterr().err
    assert not (shell / "new").exists()
