"""``[plugins.<name>]`` tables of installed plugins: kept by the configuration, handed out once."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from skillrack import ConfigError, hookimpl
from skillrack.host.config import Config, load_config
from skillrack.host.plugins import PluginFailure, load_plugins
from skillrack.host.startup import configure_plugins


class Recorder:
    def __init__(self) -> None:
        self.settings: list[Mapping[str, Any]] = []

    @hookimpl
    def configure_plugin(self, settings: Mapping[str, Any], base_dir: Path) -> None:
        self.settings.append(settings)


class Refusing:
    @hookimpl
    def configure_plugin(self, settings: Mapping[str, Any], base_dir: Path) -> None:
        raise ConfigError('unknown key "netnss" (did you mean "netns"?)')


class Broken:
    @hookimpl
    def configure_plugin(self, settings: Mapping[str, Any], base_dir: Path) -> None:
        raise KeyError("devices")


def test_the_configuration_keeps_tables_of_plugins_it_does_not_know(tmp_path: Path) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text(
        '[plugins.linux.devices.r1]\nnetns = "r1"\n\n[plugins.api_keys]\nenv = "KEYS"\n',
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.plugin_settings == {"linux": {"devices": {"r1": {"netns": "r1"}}}}
    assert set(config.first_party) == {"api_keys"}


def test_each_plugin_gets_its_own_table_once_and_the_others_an_empty_one() -> None:
    alpha, beta = Recorder(), Recorder()
    loaded = load_plugins(use_entry_points=False, extra=[("alpha", alpha), ("beta", beta)])
    config = Config(plugin_settings={"alpha": {"x": 1}})
    configure_plugins(loaded, config, entry_points=True)
    assert alpha.settings == [{"x": 1}]
    assert beta.settings == [{}]


def test_a_table_naming_no_loaded_plugin_is_refused_with_a_suggestion() -> None:
    loaded = load_plugins(use_entry_points=False, extra=[("linux", Recorder())])
    config = Config(plugin_settings={"linx": {}})
    with pytest.raises(ConfigError, match=r'^\[plugins.linx\]: .*\(did you mean "linux"\?\)'):
        configure_plugins(loaded, config, entry_points=True)
    # Only the plugins under test were loaded (no entry points): nothing to compare with.
    configure_plugins(loaded, config, entry_points=False)


def test_a_plugins_refusal_is_one_line_naming_its_table() -> None:
    loaded = load_plugins(use_entry_points=False, extra=[("linux", Refusing())])
    with pytest.raises(ConfigError) as refused:
        configure_plugins(loaded, Config(), entry_points=False)
    assert str(refused.value) == '[plugins.linux]: unknown key "netnss" (did you mean "netns"?)'


def test_a_plugin_that_breaks_is_named_not_a_traceback() -> None:
    loaded = load_plugins(use_entry_points=False, extra=[("acme", Broken())])
    with pytest.raises(ConfigError, match=r"^\[plugins.acme\]: .*raised KeyError"):
        configure_plugins(loaded, Config(), entry_points=False)


class Partial:
    """Names only the argument it uses, as pluggy allows."""

    def __init__(self) -> None:
        self.seen: list[Mapping[str, Any]] = []

    @hookimpl
    def configure_plugin(self, settings: Mapping[str, Any]) -> None:
        self.seen.append(settings)


class Leaky:
    @hookimpl
    def configure_plugin(self, settings: Mapping[str, Any], base_dir: Path) -> None:
        int(settings["token"])  # ValueError: invalid literal ... 's3cr3t-value'


def test_an_implementation_may_name_only_the_arguments_it_uses() -> None:
    plugin = Partial()
    loaded = load_plugins(use_entry_points=False, extra=[("partial", plugin)])
    configure_plugins(loaded, Config(plugin_settings={"partial": {"a": 1}}), entry_points=True)
    assert plugin.seen == [{"a": 1}]


def test_a_settings_value_never_reaches_the_error() -> None:
    loaded = load_plugins(use_entry_points=False, extra=[("leaky", Leaky())])
    config = Config(plugin_settings={"leaky": {"token": "s3cr3t-value"}})
    with pytest.raises(ConfigError) as refused:
        configure_plugins(loaded, config, entry_points=True)
    message = str(refused.value)
    assert "s3cr3t-value" not in message
    assert message.startswith(
        "[plugins.leaky]: the plugin's configure_plugin raised ValueError at "
    )
    assert "test_configure_plugins.py:" in message


def test_a_table_of_a_plugin_that_failed_to_load_names_the_failure() -> None:
    loaded = load_plugins(use_entry_points=False, extra=[])
    loaded.failures.append(PluginFailure("linux", "skillrack-linux", "ImportError: no pyroute2"))
    with pytest.raises(ConfigError, match=r"^\[plugins.linux\]: the plugin did not load \(Import"):
        configure_plugins(loaded, Config(plugin_settings={"linux": {}}), entry_points=True)
