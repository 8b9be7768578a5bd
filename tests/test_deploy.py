"""Deployment files (issue 22): checked without a Docker daemon or a systemd to run them.

The Dockerfile is parsed with dockerfile-parse (the parser of the container
build tooling, not ours) and held to the rules docs/operations.md states:
pinned base images, a non-root user, a read-only root file system (only the
data volume and /tmp written, no bytecode), secrets read from files, never
set as values. The compose file is read as YAML and held to the same rules.
The systemd unit is checked by ``systemd-analyze verify`` and its offline
security score where systemd-analyze exists, and by its hardening keys always.
"""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dockerfile_parse import DockerfileParser

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
SECRET_FILES = {
    "ORBCHAIN_SECRETS__JWT_SECRET_FILE": "/run/secrets/jwt_secret",
    "ORBCHAIN_SECRETS__SEED_FILE": "/run/secrets/seed",
    "ORBCHAIN_SECRETS__RECEIPT_SIGNING_KEY_FILE": "/run/secrets/receipt_signing_key",
    "ORBCHAIN_METRICS__TOKEN_FILE": "/run/secrets/metrics_token",
}
# Environment names that would carry a secret's value itself.
SECRET_VALUE = re.compile(r"(SECRET|SEED|MNEMONIC|PASSWORD|TOKEN|SIGNING_KEY)(?!.*_FILE$)")


@pytest.fixture(scope="module")
def dockerfile() -> DockerfileParser:
    parser = DockerfileParser(path=str(DEPLOY / "Dockerfile"))
    return parser


def final_stage(parser: DockerfileParser) -> list[dict]:
    instructions = parser.structure
    last_from = max(i for i, ins in enumerate(instructions) if ins["instruction"] == "FROM")
    return instructions[last_from:]


def test_dockerfile_base_images_are_pinned(dockerfile):
    """Break caught: a Dockerfile the parser reads no FROM from (the loop used to pass by running zero times)."""
    images = [ins["value"].split()[0] for ins in dockerfile.structure if ins["instruction"] == "FROM"]
    assert images, "no FROM instruction read from deploy/Dockerfile"
    for image in images:
        name, _, tag = image.partition(":")
        assert tag and tag != "latest" and re.search(r"\d", tag), f"unpinned base image {image}"


def test_dockerfile_runs_as_a_non_root_user(dockerfile):
    stage = final_stage(dockerfile)
    users = [ins for ins in stage if ins["instruction"] == "USER"]
    assert users, "the final stage never leaves root"
    user = users[-1]["value"].split(":")[0]
    assert user not in ("root", "0")
    order = [ins["instruction"] for ins in stage]
    assert order.index("USER") < order.index("ENTRYPOINT") and order.index("USER") < order.index("CMD")


def test_dockerfile_is_read_only_root_friendly(dockerfile):
    env = dockerfile.envs
    volumes = " ".join(ins["value"] for ins in final_stage(dockerfile) if ins["instruction"] == "VOLUME")
    assert env["ORBCHAIN_DATA_DIR"] in volumes  # the one writable place is a volume
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"  # no .pyc written next to the code
    assert env["ORBCHAIN_ENVIRONMENT"] == "production"  # never generates secrets into the image
    assert any(ins["instruction"] == "HEALTHCHECK" for ins in final_stage(dockerfile))
    assert not any(ins["instruction"] == "ADD" for ins in dockerfile.structure)


def test_dockerfile_takes_secrets_from_files(dockerfile):
    env = dockerfile.envs
    for name, path in SECRET_FILES.items():
        assert env.get(name) == path
    for name in env:
        assert not SECRET_VALUE.search(name), f"{name} would put a secret's value in the image"
    for ins in dockerfile.structure:
        assert ins["instruction"] != "ARG" or not SECRET_VALUE.search(ins["value"].split("=")[0])


def test_compose_file():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert services["db"]["image"].startswith("postgres:") and "POSTGRES_PASSWORD_FILE" in services["db"]["environment"]
    for name in ("orbchain", "migrate"):
        service = services[name]
        assert service["read_only"] is True and "/tmp" in service["tmpfs"]
        assert service["cap_drop"] == ["ALL"] and "no-new-privileges:true" in service["security_opt"]
        assert service["environment"]["ORBCHAIN_DATABASE_URL"].startswith("postgresql://")
        assert ":" not in service["environment"]["ORBCHAIN_DATABASE_URL"].split("//")[1].split("@")[0]  # no password
        for key in service["environment"]:
            assert not SECRET_VALUE.search(key), key
        assert set(service["secrets"]) >= {"jwt_secret", "seed", "receipt_signing_key", "pgpass"}
    assert services["migrate"]["command"] == ["migrate"]
    depends = services["orbchain"]["depends_on"]["migrate"]["condition"]
    assert depends == "service_completed_successfully"
    assert all("file" in spec for spec in compose["secrets"].values())


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(DEPLOY / "orbchain.service")
    return parser


def test_systemd_unit_hardening():
    service = unit()["Service"]
    for key, expected in {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
                          "PrivateTmp": "yes", "PrivateDevices": "yes", "DynamicUser": "yes",
                          "CapabilityBoundingSet": "", "RestrictNamespaces": "yes", "LockPersonality": "yes",
                          "UMask": "0077"}.items():
        assert service[key] == expected, key
    text = (DEPLOY / "orbchain.service").read_text()
    for credential in ("jwt_secret", "seed", "receipt_signing_key"):
        assert f"LoadCredential={credential}:" in text
    assert "ExecStartPre=/opt/orbchain/bin/orbchain migrate --check" in text


def test_systemd_analyze_verify(tmp_path):
    # Only the install prefix changes: verify checks that the commands exist.
    orbchain = Path(sys.executable).with_name("orbchain")
    assert orbchain.exists()
    copy = tmp_path / "orbchain.service"
    copy.write_text((DEPLOY / "orbchain.service").read_text().replace("/opt/orbchain/bin/orbchain", str(orbchain)))
    verify = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True)
    assert verify.returncode == 0 and not verify.stdout.strip() and not verify.stderr.strip(), verify.stderr
    security = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(copy)], capture_output=True,
                              text=True)
    match = re.search(r"Overall exposure level for orbchain\.service: ([\d.]+)", security.stdout)
    assert match and float(match.group(1)) <= 2.0, security.stdout[-500:]


def _seconds(value: str) -> float:
    """A systemd or compose duration ("35", "35s", "1min", "1m30s") in seconds."""
    units = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}
    parts = re.findall(r"(\d+)\s*([a-z]*)", str(value))
    assert parts and "".join(n + u for n, u in parts) == str(value).replace(" ", ""), value
    return sum(int(number) * units[unit] for number, unit in parts)


def _stop_bound() -> float:
    """How long ``serve --workers N`` may take to stop with the default drain (issue 34): the supervisor
    kills workers still alive after it, its own backstop ends it a second later."""
    from orbchain.core.infra.config import ServerConfig
    from orbchain.web.workers import SUPERVISOR_MARGIN_SECONDS

    return ServerConfig().drain_seconds + SUPERVISOR_MARGIN_SECONDS + 1


def test_systemd_unit_gives_the_stop_time_to_drain():
    """SIGTERM to the supervisor only (it passes the stop on; a worker signalled twice would just ignore the
    repeat), and a stop timeout longer than the gateway's own bound, so systemd never SIGKILLs a clean stop."""
    service = unit()["Service"]
    assert service["KillSignal"] == "SIGTERM" and service["KillMode"] == "mixed"
    assert _seconds(service["TimeoutStopSec"]) > _stop_bound()


def test_compose_gives_the_stop_time_to_drain():
    service = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]["orbchain"]
    assert service["stop_signal"] == "SIGTERM" and _seconds(service["stop_grace_period"]) > _stop_bound()
