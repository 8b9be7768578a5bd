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


def test_compose_pgbouncer_override_splits_queries_from_sessions():
    """deploy/compose.pgbouncer.yaml: both gateway services query through PgBouncer and keep their sessions on
    PostgreSQL itself (the gateway refuses a transaction pooler without the direct URL: tests/test_pgbouncer.py);
    deploy/pgbouncer.ini pools per transaction with the settings the PgBouncer tests run (tests/pgbouncer.py)."""
    from tests.pgbouncer import INI

    override = yaml.safe_load((DEPLOY / "compose.pgbouncer.yaml").read_text())
    services = override["services"]
    for name in ("orbchain", "migrate"):
        environment = services[name]["environment"]
        assert environment["ORBCHAIN_DATABASE_URL"].startswith("postgresql://orbchain@pgbouncer:6432/")
        assert environment["ORBCHAIN_DATABASE_DIRECT_URL"].startswith("postgresql://orbchain@db:5432/")
    bouncer = services["pgbouncer"]
    assert bouncer["read_only"] is True and bouncer["cap_drop"] == ["ALL"]
    assert "./pgbouncer.ini:/etc/pgbouncer/pgbouncer.ini:ro" in bouncer["volumes"]
    ini = configparser.ConfigParser(interpolation=None)
    ini.read_string((DEPLOY / "pgbouncer.ini").read_text())
    tested = configparser.ConfigParser(interpolation=None)
    tested.read_string(INI.format(databases="* = host=db", port=6432, dir="/d", pool=4, mode="transaction"))
    for key in ("pool_mode", "server_reset_query", "ignore_startup_parameters"):
        assert ini["pgbouncer"][key] == tested["pgbouncer"][key], key
    assert ini["pgbouncer"]["auth_file"] == "/run/secrets/pgbouncer_userlist"
    assert set(bouncer["secrets"]) == {"pgbouncer_userlist"} and "file" in override["secrets"]["pgbouncer_userlist"]


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
    assert Path(sys.executable).with_name("orbchain").exists()
    assert _verify_unit(tmp_path, "orbchain.service") <= 2.0


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


def _serves_max_streams(open_files: int, workers: int) -> bool:
    """Whether a worker given ``open_files`` holds its share of the default ``max_streams`` (issue 42): the
    budget's arithmetic (web/stream_budget.py) with a generous count of files open at start."""
    from orbchain.core.infra.config import LiveConfig
    from orbchain.web.stream_budget import StreamBudget

    live = LiveConfig()
    share = -(-live.max_streams // workers)
    budget = StreamBudget(configured=share, file_limit=open_files, open_at_start=500, reserved=live.reserved_files,
                          page_share_percent=live.max_page_share_percent)
    return not budget.limited_by_files


def _workers(command: list[str]) -> int:
    return int(command[command.index("--workers") + 1]) if "--workers" in command else 1


def test_systemd_unit_gives_the_gateway_the_open_files_its_streams_need():
    """Without LimitNOFILE a service gets 1,024 open files: about 750 streams (issue 42)."""
    service = unit()["Service"]
    assert _serves_max_streams(int(service["LimitNOFILE"]), _workers(service["ExecStart"].split()))
    assert not _serves_max_streams(1024, _workers(service["ExecStart"].split()))  # what it had before


def test_compose_gives_the_gateway_the_open_files_its_streams_need():
    service = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]["orbchain"]
    nofile = service["ulimits"]["nofile"]
    assert nofile["soft"] == nofile["hard"]
    assert _serves_max_streams(nofile["soft"], _workers(service["command"]))


def test_systemd_unit_gives_the_stop_time_to_drain():
    """SIGTERM to the supervisor only (it passes the stop on; a worker signalled twice would just ignore the
    repeat), and a stop timeout longer than the gateway's own bound, so systemd never SIGKILLs a clean stop."""
    service = unit()["Service"]
    assert service["KillSignal"] == "SIGTERM" and service["KillMode"] == "mixed"
    assert _seconds(service["TimeoutStopSec"]) > _stop_bound()


def test_compose_gives_the_stop_time_to_drain():
    service = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]["orbchain"]
    assert service["stop_signal"] == "SIGTERM" and _seconds(service["stop_grace_period"]) > _stop_bound()


DOCS = DEPLOY.parent / "docs"
# A citation: docs/X.md#anchor, or docs/X.md followed by a quoted section name ("docs/X.md, \"Stopping\"").
CITATION = re.compile(r'docs/([\w.-]+\.md)(?:#([\w-]+)|,\s*"([^"]+)")?')


def _headings(doc: Path) -> list[str]:
    """The headings of a Markdown file, outside fenced code blocks."""
    found, fenced = [], False
    for line in doc.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6} (.+)", line)):
            found.append(heading.group(1).strip())
    return found


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_every_doc_section_the_deploy_files_cite_exists():
    """Issue 32: the unit, compose file and nginx config cited sections nobody had written."""
    cited = [(path.name, match) for path in sorted(DEPLOY.iterdir()) if path.is_file()
             for match in CITATION.finditer(path.read_text())]
    assert len([c for c in cited if c[1].group(2) or c[1].group(3)]) >= 4, cited  # the walk reads them
    for source, match in cited:
        doc = DOCS / match.group(1)
        assert doc.is_file(), f"{source} cites {match.group(0)}: no such file"
        headings = _headings(doc)
        if match.group(2):
            assert match.group(2) in {_anchor(h) for h in headings}, f"{source} cites {match.group(0)}"
        if match.group(3):
            assert match.group(3) in headings, f"{source} cites {match.group(0)}: no such section"


def test_the_units_documentation_is_a_file_the_package_installs():
    """``Documentation=file://<prefix>/share/doc/orbchain/X.md`` is docs/X.md shipped by setup.cfg data_files."""
    documentation = unit()["Unit"]["Documentation"]
    match = re.fullmatch(r"file:///opt/orbchain/(share/doc/orbchain)/([\w.-]+\.md)", documentation)
    assert match, documentation
    assert (DOCS / match.group(2)).is_file()
    setup = configparser.ConfigParser()
    setup.read(DEPLOY.parent / "setup.cfg")
    shipped = [line.strip() for line in setup["options.data_files"][match.group(1)].splitlines() if line.strip()]
    assert f"docs/{match.group(2)}" in shipped


def test_nginx_accepts_the_example_config(tmp_path):
    """``nginx -t`` on deploy/nginx.conf as conf.d includes it, with test certificates in place of Let's Encrypt's.

    The example must work on the nginx Debian 12 ships (1.22, which knows no ``http2 on;``);
    scripts/ensure_nginx.sh installs it for ``make test``."""
    import trustme

    cert = trustme.CA().issue_cert("pay.example.com")
    cert.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    site = (DEPLOY / "nginx.conf").read_text()
    site = site.replace("/etc/letsencrypt/live/pay.example.com/fullchain.pem", str(tmp_path / "cert.pem"))
    site = site.replace("/etc/letsencrypt/live/pay.example.com/privkey.pem", str(tmp_path / "key.pem"))
    (tmp_path / "site.conf").write_text(site)
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\n  access_log off;\n  include {tmp_path}/site.conf;\n}}\n")
    nginx = next((p for p in ("/usr/sbin/nginx", "/usr/bin/nginx") if Path(p).exists()), "nginx")
    check = subprocess.run([nginx, "-e", str(tmp_path / "error.log"), "-p", str(tmp_path), "-t",
                            "-c", str(tmp_path / "nginx.conf")], capture_output=True, text=True)
    assert check.returncode == 0 and "test is successful" in check.stderr, check.stderr
    assert "[warn]" not in check.stderr and "[emerg]" not in check.stderr, check.stderr


def _verify_unit(tmp_path: Path, name: str) -> float:
    """``systemd-analyze verify`` clean and the offline security exposure of ``deploy/<name>``."""
    orbchain = Path(sys.executable).with_name("orbchain")
    copy = tmp_path / name
    copy.write_text((DEPLOY / name).read_text().replace("/opt/orbchain/bin/orbchain", str(orbchain)))
    verify = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True)
    assert verify.returncode == 0 and not verify.stdout.strip() and not verify.stderr.strip(), verify.stderr
    security = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(copy)], capture_output=True,
                              text=True)
    match = re.search(rf"Overall exposure level for {re.escape(name)}: ([\d.]+)", security.stdout)
    assert match, security.stdout[-500:]
    return float(match.group(1))


def test_the_signer_unit_verifies_and_is_no_more_exposed_than_the_web_unit(tmp_path):
    """Issue 45: the signer shipped as a unit of its own, as hardened as the web service's."""
    assert _verify_unit(tmp_path, "orbchain-signer.service") <= 2.0


def test_the_signer_unit_holds_the_seed_and_the_web_unit_can_be_seedless():
    """The signer loads the seed and its passphrase as credentials (never environment values), listens on
    a socket only its group reaches, and runs ``orbchain signer``; the channel key is the file both hold."""
    signer = configparser.ConfigParser(strict=False, interpolation=None)
    signer.optionxform = str  # type: ignore[assignment,method-assign]
    signer.read(DEPLOY / "orbchain-signer.service")
    text = (DEPLOY / "orbchain-signer.service").read_text()
    service = signer["Service"]
    assert service["ExecStart"] == "/opt/orbchain/bin/orbchain signer"
    assert service["UMask"] == "0077" and service["DynamicUser"] == "yes" and service["LimitCORE"] == "0"
    for credential in ("seed", "seed_file_passphrase", "jwt_secret", "signer_key"):
        assert f"LoadCredential={credential}:" in text
    assert "PASSPHRASE" not in text  # the passphrase is a credential, never an environment value
    assert "Environment=ORBCHAIN_SIGNER__LISTEN=unix:///run/orbchain-signer/" in text
    assert "RuntimeDirectory=orbchain-signer" in text
    from orbchain.core.keys.seed_file import CREDENTIAL_NAME
    assert CREDENTIAL_NAME == "seed_file_passphrase"
