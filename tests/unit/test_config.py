"""Configuration: TOML plus environment overrides, validated with the bad key named."""

from __future__ import annotations

import pytest

from orbchain.core.infra.config import ConfigError, load_config


def write(tmp_path, text):
    path = tmp_path / "orbchain.toml"
    path.write_text(text)
    return path


def test_defaults_need_no_file():
    config = load_config(None, environ={})
    assert config.server.host == "127.0.0.1" and config.server.port == 8080
    assert config.database_url.startswith("sqlite+aiosqlite:////")  # absolute path: four slashes
    assert config.database_url.endswith("/var/orbchain.db")
    assert config.base_url == "http://127.0.0.1:8080"
    assert config.webhooks.allow_private_urls is False


def test_file_values_and_env_overrides(tmp_path):
    path = write(tmp_path, '[server]\nport = 9000\nbase_url = "https://pay.example.com/"\n'
                           '[plugin.prices]\nsource = "static"\n')
    config = load_config(path, environ={"ORBCHAIN_HOST": "0.0.0.0", "ORBCHAIN_WEBHOOKS__TIMEOUT_SECONDS": "3",
                                        "ORBCHAIN_ALLOW_PRIVATE_URLS": "1"})
    assert config.server.port == 9000 and config.server.host == "0.0.0.0"
    assert config.base_url == "https://pay.example.com"
    assert config.webhooks.timeout_seconds == 3 and config.webhooks.allow_private_urls is True
    assert config.plugin_config("prices") == {"source": "static"}
    assert config.plugin_config("absent") == {}


def test_env_port_wins_over_file(tmp_path):
    path = write(tmp_path, "[server]\nport = 9000\n")
    assert load_config(path, environ={"ORBCHAIN_PORT": "9100"}).server.port == 9100


@pytest.mark.parametrize(
    "text, env, named",
    [
        ("[server]\nprot = 1\n", {}, "server.prot"),
        ("[serverr]\nport = 1\n", {}, "serverr"),
        ('[server]\nport = "eighty"\n', {}, "server.port"),
        ("[server]\nport = 70000\n", {}, "server.port"),
        ('[server]\nenvironment = "staging"\n', {}, "server.environment"),
        ("", {"ORBCHAIN_PORT": "x"}, "server.port"),
        ('[fees]\ndefault_fee_percent = "abc"\n', {}, "fees.default_fee_percent"),
        ('[fees]\ndefault_fee_percent = "100"\n', {}, "fees.default_fee_percent"),
        ("[webhooks]\nallow_private_urls = 3\n", {}, "webhooks.allow_private_urls"),
        ("[webhooks]\nconcurrency = 0\n", {}, "webhooks.concurrency"),
        ('[database]\nurl = "mysql://x"\n', {}, "database.url"),
        ("[plugins]\nblocked = [1]\n", {}, "plugins.blocked"),
        ("[server]\nheader_timeout_seconds = 0\n", {}, "server.header_timeout_seconds"),
        ("", {"ORBCHAIN_SERVER__BODY_TIMEOUT_SECONDS": "-5"}, "server.body_timeout_seconds"),
        ("[server]\nkeepalive_seconds = 7200\n", {}, "server.keepalive_seconds"),
        ("[server]\nmax_pending_connections_per_ip = -1\n", {}, "server.max_pending_connections_per_ip"),
        ("[live]\nmax_page_share_percent = 0\n", {}, "live.max_page_share_percent"),
        ("[live]\nmax_page_share_percent = 101\n", {}, "live.max_page_share_percent"),
        ("[live]\nreserved_files = -1\n", {}, "live.reserved_files"),
        ("[live]\nmax_dashboard_streams_per_ip = -1\n", {}, "live.max_dashboard_streams_per_ip"),
    ],
)
def test_bad_values_name_the_key(tmp_path, text, env, named):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ=env)
    assert named in str(info.value)


def test_invalid_toml_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[server\n"), environ={})
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.toml", environ={})


def test_with_overrides_revalidates():
    config = load_config(None, environ={})
    assert config.with_overrides(server={"port": 1234}).server.port == 1234
    with pytest.raises(ConfigError):
        config.with_overrides(server={"port": 0})


def test_plugin_setting_helpers_name_the_key():
    from orbchain.core.infra.config import int_setting, seconds_setting

    assert int_setting({"n": 3}, "plugin.x", "n", 1, minimum=1) == 3
    assert int_setting({}, "plugin.x", "n", None) is None
    assert seconds_setting({}, "plugin.x", "every", 2) == 2.0
    for bad in (0, True, "1", 1.5):
        with pytest.raises(ConfigError, match="plugin.x.n"):
            int_setting({"n": bad}, "plugin.x", "n", 1, minimum=1)
    for bad in (0, -1, False, "5", float("inf")):
        with pytest.raises(ConfigError, match="plugin.x.every"):
            seconds_setting({"every": bad}, "plugin.x", "every", 1)
    with pytest.raises(ConfigError, match="plugin.x.every"):
        seconds_setting({"every": 100_000}, "plugin.x", "every", 1, maximum=86_400)


def test_text_setting_is_a_non_empty_string_or_absent():
    from orbchain.core.infra.config import text_setting

    assert text_setting({"k": "v"}, "plugin.x", "k") == "v"
    assert text_setting({}, "plugin.x", "k") is None
    for bad in ("", 1, True, ["v"]):
        with pytest.raises(ConfigError, match=r"^config key 'plugin\.x\.k' must be a non-empty string$"):
            text_setting({"k": bad}, "plugin.x", "k")


def test_checked_block_copies_the_block_and_names_the_first_unknown_key():
    from orbchain.core.infra.config import checked_block

    config = load_config(environ={}).with_overrides(plugin={"x": {"b": 2, "a": 1}})
    block = checked_block(config, "x", ("b", "a", "c"))
    assert block == {"a": 1, "b": 2}
    block["a"] = 9  # a copy: the loaded config is not changed
    assert config.plugin_config("x") == {"a": 1, "b": 2}
    assert checked_block(config, "absent", ("a",)) == {}
    bad = config.with_overrides(plugin={"x": {"a": 1, "zz": 2, "yy": 3}})
    with pytest.raises(ConfigError, match=r"^unknown config key 'plugin\.x\.zz' \(known: b, a, c\)$"):
        checked_block(bad, "x", ("b", "a", "c"))


# -- environment overrides of plugin blocks, and variables that match nothing (issue 29 item 6) -------------


def env_config(tmp_path, **variables: str):
    """A config from the environment alone (no file), on a throwaway data folder."""
    return load_config(None, environ={"ORBCHAIN_DATA_DIR": str(tmp_path / "var"), **variables})


def test_plugin_blocks_take_environment_overrides(tmp_path):
    """Before, core/infra/config.py dropped every ORBCHAIN_PLUGIN__* variable: the blocks below stayed as in the file."""
    path = write(tmp_path, '[plugin.oidc]\nclient_id = "from-file"\n'
                           '[plugin.evm.ethereum]\nrpc_url = "http://file.example"\nconfirmations = 12\n')
    config = load_config(path, environ={
        "ORBCHAIN_PLUGIN__OIDC__CLIENT_SECRET": "s3cret",
        "ORBCHAIN_PLUGIN__OIDC__TIMEOUT_SECONDS": "5",
        "ORBCHAIN_PLUGIN__OIDC__SCOPES": '["openid", "email"]',
        "ORBCHAIN_PLUGIN__EVM__ETHEREUM__RPC_URL": "http://env.example:8545",
        "ORBCHAIN_PLUGIN__TELEGRAM__BOT_TOKEN": "123456:ABC-DEF",
    })
    assert config.plugin_config("oidc") == {"client_id": "from-file", "client_secret": "s3cret", "timeout_seconds": 5,
                                            "scopes": ["openid", "email"]}
    # A deeper block is merged key by key: the file's other keys stay.
    assert config.plugin_config("evm") == {"ethereum": {"rpc_url": "http://env.example:8545", "confirmations": 12}}
    assert config.plugin_config("telegram") == {"bot_token": "123456:ABC-DEF"}
    assert config.env_sources["plugin.oidc.client_secret"] == "ORBCHAIN_PLUGIN__OIDC__CLIENT_SECRET"
    assert config.with_overrides(server={"port": 9}).env_sources == config.env_sources


@pytest.mark.parametrize("text, value", [
    ("5", 5), ("-2", -2), ("0.5", 0.5), ("true", True), ("false", False), ('["a", "b"]', ["a", "b"]),
    ('{ a = 1 }', {"a": 1}), ('"12345"', "12345"), ("'x y'", "x y"),
    # Text stays text: tokens, URLs, hex-looking secrets, numbers TOML would not read, broken literals.
    ("123456:ABC-DEF", "123456:ABC-DEF"), ("0x4AAAAAAABCDEF", "0x4AAAAAAABCDEF"), ("007", "007"),
    ("https://x.example/a", "https://x.example/a"), ("[broken", "[broken"), ("", ""), ("True", "True"),
])
def test_plugin_values_from_the_environment_are_toml_literals_or_text(text, value):
    from orbchain.core.infra.config import env_value

    assert env_value(text) == value and type(env_value(text)) is type(value)


@pytest.mark.parametrize("variable", [
    "ORBCHAIN_SERVR__HOST", "ORBCHAIN_SERVER__HOTS", "ORBCHAIN_HOTS", "ORBCHAIN_PLUGIN__TELEGRAM",
    "ORBCHAIN_PLUGIN____BOT_TOKEN", "ORBCHAIN_", "ORBCHAIN_SERVER__PORT__X", "ORBCHAIN_CONFIG_FILE",
])
def test_an_environment_variable_that_matches_no_key_stops_the_start_naming_it(tmp_path, variable):
    """Before, each of these was ignored without a word (the setting silently stayed at its default)."""
    with pytest.raises(ConfigError, match=f"unknown environment variable {variable}:"):
        env_config(tmp_path, **{variable: "1"})


def test_aliases_and_the_variables_read_elsewhere_are_no_typos(tmp_path):
    config = env_config(tmp_path, ORBCHAIN_CONFIG="/nowhere.toml", ORBCHAIN_TEST_PG_DSN="postgresql://x",
                        ORBCHAIN_FAULT="after_sign", ORBCHAIN_NODE_TOOLS="/opt/tools", ORBCHAIN_PORT="9001",
                        ORBCHAIN_SERVER__TRUST_FORWARDED_FOR="true", PATH="/usr/bin", OTHER_APP_PORT="1")
    assert config.server.port == 9001 and config.server.trust_forwarded_for is True


@pytest.mark.parametrize("variables, named", [
    ({"ORBCHAIN_PORT": "x"}, "config key 'server.port'"),
    ({"ORBCHAIN_PLUGIN__CAPTCHA__SECRT": "x"}, "unknown config key 'plugin.captcha.secrt'"),
    ({"ORBCHAIN_PLUGIN__OIDC__TIMEOUT_SECONDS": "soon", "ORBCHAIN_PLUGIN__OIDC__CLIENT_ID": "x",
      "ORBCHAIN_PLUGIN__OIDC__CLIENT_SECRET": "y"}, "config key 'plugin.oidc.timeout_seconds'"),
    ({"ORBCHAIN_PLUGIN__TELEGRM__BOT_TOKEN": "1:A"}, "config block 'plugin.telegrm' names no installed plugin"),
    ({"ORBCHAIN_PLUGIN__AUDIT__ENABLED": "true"}, "config block 'plugin.audit': the audit plugin takes no"),
    ({"ORBCHAIN_PLUGIN__EVM__ETHEREM__RPC_URL": "http://x"}, "plugin.evm.etherem"),
])
def test_a_bad_setting_from_the_environment_stops_the_start_naming_key_and_variable(tmp_path, variables, named):
    """The plugin's own validation judges the value; the message names the key and the variable that set it.
    Before, the plugin variables were dropped (the start went on) and a section's error named only the key."""
    from orbchain.core.startup import build_gateway

    with pytest.raises(ConfigError) as info:
        build_gateway(env_config(tmp_path, **variables))
    message = str(info.value)
    setting = next(name for name in variables if name.endswith(("PORT", "SECRT", "SECONDS", "TOKEN", "ENABLED",
                                                                 "RPC_URL")))
    assert named in message and f"set by environment variable {setting})" in message, message


def test_every_plugin_block_is_checked_by_someone(tmp_path):
    """A [plugin.<name>] block (file or environment) is read by a plugin that refuses unknown keys, or stops
    the start. Before, subscriptions ignored unknown keys and plugins without a block ignored any block."""
    from orbchain.core.startup import build_gateway
    from orbchain.core.contract.plugins import get_plugin_manager

    pm = get_plugin_manager()
    for name, _ in pm.list_name_plugin():
        variable = f"ORBCHAIN_PLUGIN__{name.upper()}__ZZ_NOT_A_KEY"
        with pytest.raises(ConfigError, match=f"plugin.{name}") as info:
            build_gateway(env_config(tmp_path, **{variable: "1"}), get_plugin_manager())
        assert variable in str(info.value), (name, str(info.value))
    # A block for a plugin the operator blocked is kept, unread, without complaint.
    blocked = env_config(tmp_path, ORBCHAIN_PLUGINS__BLOCKED="audit", ORBCHAIN_PLUGIN__AUDIT__X="1")
    build_gateway(blocked)


@pytest.mark.parametrize("command", [["config", "check"], ["serve"]])
def test_config_check_and_serve_refuse_a_typod_variable(tmp_path, monkeypatch, capsys, command):
    from orbchain import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ORBCHAIN_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("ORBCHAIN_WEBHOOKS__TIMEOUT_SECOND", "5")
    assert cli.main(command) == 2
    assert "unknown environment variable ORBCHAIN_WEBHOOKS__TIMEOUT_SECOND" in capsys.readouterr().err
    monkeypatch.delenv("ORBCHAIN_WEBHOOKS__TIMEOUT_SECOND")
    monkeypatch.setenv("ORBCHAIN_PLUGIN__CAPTCHA__SECRET_KEY", "x")
    assert cli.main(["config", "check"]) == 2
    assert "ORBCHAIN_PLUGIN__CAPTCHA__SECRET_KEY" in capsys.readouterr().err


def test_every_orbchain_variable_the_project_names_is_known(tmp_path):
    """A variable read somewhere (a script, the test kit) or documented must not stop the start: each
    ORBCHAIN_ name in the code, scripts and docs is an alias, a config key or one of NON_CONFIG_VARIABLES."""
    import re
    from pathlib import Path

    from orbchain.core.infra.config import env_key

    root = Path(__file__).resolve().parents[2]
    folders = ("core", "web", "chains", "plugins", "scheduler", "orbchain", "scripts", "deploy", "docs", "tests")
    files = [root / "README.md", root / "Makefile", *(p for f in folders for p in (root / f).rglob("*")
                                                     if p.is_file() and p.suffix in ("", ".py", ".md", ".sh",
                                                                                     ".toml", ".yaml", ".yml"))]
    names = set()
    for path in files:
        if path.name == "test_config.py":
            continue  # the typos above
        names |= set(re.findall(r"\bORBCHAIN_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8", errors="replace")))
    assert {"ORBCHAIN_TEST_PG_DSN", "ORBCHAIN_PLUGIN__TELEGRAM__BOT_TOKEN"} <= names
    documented_typos = {"ORBCHAIN_PLUGIN__CAPTCHA__SECRT", "ORBCHAIN_SERVR__PORT"}  # README, docs/telegram.md
    from orbchain.core.contract.plugin_identity import NEEDS_CONFIG_ATTR, REQUIRES_ATTR

    plugin_module_attributes = {NEEDS_CONFIG_ATTR, REQUIRES_ATTR}  # a plugin module's declarations, not variables
    for name in sorted(names - documented_typos - plugin_module_attributes):
        env_key(name)  # raises ConfigError naming an unknown one
    from orbchain.core.startup import build_gateway

    for name in documented_typos:  # the docs say these stop the start: they do
        with pytest.raises(ConfigError, match=name):
            build_gateway(env_config(tmp_path, **{name: "1"}))


def test_read_url_is_a_postgresql_standby_beside_a_postgresql_url(tmp_path):
    """``[database] read_url`` (docs/operations.md, "Failover"): its alias sets it; refused beside SQLite."""
    config = env_config(tmp_path, ORBCHAIN_DATABASE_URL="postgresql://o@db1:5432/o",
                        ORBCHAIN_DATABASE_READ_URL="postgresql://o@db2:5432/o")
    assert config.database.read_url == "postgresql://o@db2:5432/o"
    from orbchain.core.cli.ops import database_urls_finding

    assert database_urls_finding(config).detail.endswith(  # doctor names it
        "; read_url postgresql://o@db2:5432/o: the analytics report reads this standby")
    for url, read in (("sqlite+aiosqlite:///x.db", "postgresql://o@db/o"), ("postgresql://o@p/o", "sqlite:///x.db")):
        with pytest.raises(ConfigError, match="database.read_url"):
            env_config(tmp_path, ORBCHAIN_DATABASE_URL=url, ORBCHAIN_DATABASE_READ_URL=read)


def test_direct_url_is_for_a_postgresql_url_behind_a_pooler(tmp_path):
    """``[database] direct_url`` (docs/operations.md, "Behind a connection pooler"): its alias sets it, and it
    is refused beside SQLite or when it is no PostgreSQL URL."""
    config = env_config(tmp_path, ORBCHAIN_DATABASE_URL="postgresql://o@pgbouncer:6432/o",
                        ORBCHAIN_DATABASE_DIRECT_URL="postgresql://o@db:5432/o")
    assert config.database.direct_url == "postgresql://o@db:5432/o"
    for url, direct in (("sqlite+aiosqlite:///x.db", "postgresql://o@db/o"), ("postgresql://o@p/o", "mysql://db")):
        with pytest.raises(ConfigError, match="database.direct_url"):
            env_config(tmp_path, ORBCHAIN_DATABASE_URL=url, ORBCHAIN_DATABASE_DIRECT_URL=direct)
