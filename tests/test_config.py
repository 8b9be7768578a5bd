"""Configuration: TOML plus environment overrides, validated with the bad key named."""

from __future__ import annotations

import pytest

from orbchain.core.config import ConfigError, load_config


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
        ('[database]\nurl = "mysql://x"\n', {}, "database.url"),
        ("[plugins]\nblocked = [1]\n", {}, "plugins.blocked"),
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
    from orbchain.core.config import int_setting, seconds_setting

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
    from orbchain.core.config import text_setting

    assert text_setting({"k": "v"}, "plugin.x", "k") == "v"
    assert text_setting({}, "plugin.x", "k") is None
    for bad in ("", 1, True, ["v"]):
        with pytest.raises(ConfigError, match=r"^config key 'plugin\.x\.k' must be a non-empty string$"):
            text_setting({"k": bad}, "plugin.x", "k")


def test_checked_block_copies_the_block_and_names_the_first_unknown_key():
    from orbchain.core.config import checked_block

    config = load_config(environ={}).with_overrides(plugin={"x": {"b": 2, "a": 1}})
    block = checked_block(config, "x", ("b", "a", "c"))
    assert block == {"a": 1, "b": 2}
    block["a"] = 9  # a copy: the loaded config is not changed
    assert config.plugin_config("x") == {"a": 1, "b": 2}
    assert checked_block(config, "absent", ("a",)) == {}
    bad = config.with_overrides(plugin={"x": {"a": 1, "zz": 2, "yy": 3}})
    with pytest.raises(ConfigError, match=r"^unknown config key 'plugin\.x\.zz' \(known: b, a, c\)$"):
        checked_block(bad, "x", ("b", "a", "c"))
