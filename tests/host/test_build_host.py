"""build_host: the one way every command and the pytest plugin compose the host."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import SkillsPlugin, simple_skill

from skillrack import hookimpl
from skillrack.errors import StartupError
from skillrack.host import startup
from skillrack.host.config import DEVELOPMENT_POLICY, Config
from skillrack.host.startup import build_host
from skillrack.serve.security.authz import AuthorizationRequest, Decision

VENDOR = ("vendor", SkillsPlugin(simple_skill("ping")))


class Policy:
    @hookimpl
    def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
        return Decision.deny()


def has_development_policy(host: startup.Host) -> bool:
    assert host.registry.manager is not None
    return host.registry.manager.get_plugin(DEVELOPMENT_POLICY) is not None


@pytest.fixture(autouse=True)
def no_installed_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "")


def test_described_hosts_get_no_development_policy() -> None:
    host = build_host(Config(), plugins=[VENDOR])
    assert list(host.registry.skills) == ["ping"]
    assert host.development_policy is None and not has_development_policy(host)


def test_loopback_without_policy_gets_the_development_policy_and_says_why() -> None:
    host = build_host(Config(), listen_host="127.0.0.1", plugins=[VENDOR])
    assert has_development_policy(host)
    assert host.development_policy == (
        "no policy configured; allowing every call because 127.0.0.1 is loopback"
    )


def test_elsewhere_without_policy_refuses_to_start_unless_told_to_allow_all() -> None:
    with pytest.raises(StartupError, match=r"0\.0\.0\.0 is not a loopback address"):
        build_host(Config(), listen_host="0.0.0.0", plugins=[VENDOR])
    host = build_host(Config(), listen_host="0.0.0.0", insecure_allow_all=True, plugins=[VENDOR])
    assert has_development_policy(host)
    assert host.development_policy == "--insecure-allow-all: every caller may call every skill"


def test_a_configured_policy_means_no_development_policy() -> None:
    host = build_host(Config(), listen_host="0.0.0.0", plugins=[VENDOR, ("policy", Policy())])
    assert host.development_policy is None and not has_development_policy(host)


def test_configured_first_party_plugins_are_loaded(tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text('[[rule]]\neffect = "allow"\nskills = ["*"]\n')
    config = Config(first_party={"policy": {"file": "policy.toml"}}, base_dir=tmp_path)
    host = build_host(config, listen_host="0.0.0.0")
    assert [p.name for p in host.registry.plugins] == ["policy"]
    assert not has_development_policy(host)


def test_distributions_select_installed_plugins_instead_of_the_environment() -> None:
    host = build_host(Config(), distributions=["no-such-distribution"], plugins=[VENDOR])
    assert host.registry.unknown_plugins == ("no-such-distribution",)
    host = build_host(Config(), distributions=[], plugins=[VENDOR])
    assert [p.name for p in host.registry.plugins] == ["vendor"]


def test_the_startup_checks_run_before_any_plugin_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise RuntimeError("format checker 'ipv4' is not available")

    monkeypatch.setattr(startup, "ensure_format_checkers", missing)

    class Loud:
        @hookimpl
        def register_skills(self, register: object) -> None:
            raise AssertionError("loaded before the start-up checks")

    with pytest.raises(RuntimeError, match="format checker 'ipv4'"):
        build_host(Config(), plugins=[("loud", Loud())])
