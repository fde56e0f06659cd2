"""Plugin discovery, attribution, isolation of failures, and duplicate skill ids."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack import hookimpl
from skillrack.errors import StartupError
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import build_registry
from skillrack.host.selection import selected_distributions


def test_skills_are_attributed_to_their_plugin() -> None:
    registry = registry_of(
        [
            ("alpha", SkillsPlugin(simple_skill("a1"), simple_skill("a2"))),
            ("beta", SkillsPlugin(simple_skill("b1"))),
        ]
    )
    assert {s.skill_id: s.plugin for s in registry} == {"a1": "alpha", "a2": "alpha", "b1": "beta"}
    assert all(s.interface_digest.startswith("sha256:") for s in registry)


def test_two_plugins_with_one_skill_id_stop_startup_naming_both() -> None:
    with pytest.raises(StartupError) as info:
        registry_of(
            [
                ("alpha", SkillsPlugin(simple_skill("same"))),
                ("beta", SkillsPlugin(simple_skill("same"))),
            ]
        )
    message = str(info.value)
    assert "'same'" in message and "'alpha'" in message and "'beta'" in message
    assert "SKILLRACK_LOAD_PLUGINS" in message
    assert "\n" not in message


def test_same_plugin_registering_twice_stops_startup() -> None:
    with pytest.raises(StartupError, match="twice by plugin 'alpha'"):
        registry_of([("alpha", SkillsPlugin(simple_skill("x"), simple_skill("x")))])


def test_refused_skill_does_not_hide_the_plugins_other_skills() -> None:
    registry = registry_of(
        [("alpha", SkillsPlugin(simple_skill("good"), simple_skill("bad", version="1.0.0")))]
    )
    assert list(registry.skills) == ["good"]
    [refused] = registry.refused
    assert (refused.plugin, refused.skill_id, refused.rule) == ("alpha", "bad", "skill_version")


def test_registering_something_that_is_not_a_skill_is_refused() -> None:
    registry = registry_of([("alpha", SkillsPlugin({"id": "dict"}))])
    assert registry.refused[0].rule == "not_a_skill"


class Exploding:
    @hookimpl
    def register_skills(self, register: object) -> None:
        register(simple_skill("half"))  # type: ignore[operator]
        raise RuntimeError("vendor bug")


def test_plugin_whose_registration_raises_is_dropped_whole() -> None:
    registry = registry_of([("broken", Exploding()), ("good", SkillsPlugin(simple_skill("ok")))])
    assert list(registry.skills) == ["ok"]
    [failure] = registry.failures
    assert failure.name == "broken" and "RuntimeError: vendor bug" in failure.reason
    assert [p.name for p in registry.plugins] == ["good"]


class Misspelt:
    @hookimpl
    def register_skill(self, register: object) -> None:  # missing the "s"
        raise AssertionError("never called")


def test_misspelt_hook_fails_loudly_but_others_load() -> None:
    registry = registry_of([("typo", Misspelt()), ("good", SkillsPlugin(simple_skill("ok")))])
    assert list(registry.skills) == ["ok"]
    assert registry.failures[0].name == "typo"
    assert "register_skill" in registry.failures[0].reason


class WrongArgs:
    @hookimpl
    def register_skills(self, registrar: object) -> None:
        raise AssertionError("never called")


def test_hookimpl_with_unknown_argument_is_reported() -> None:
    registry = registry_of([("wrong", WrongArgs())])
    assert registry.failures[0].name == "wrong"
    assert "registrar" in registry.failures[0].reason


# Entry points, through real *.dist-info directories on sys.path ---------------------------------


def install_fake_distribution(
    root: Path, dist: str, module: str, body: str, ep_name: str | None = None
) -> None:
    (root / f"{module}.py").write_text(textwrap.dedent(body))
    info = root / f"{dist.replace('-', '_')}-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text(f"[skillrack]\n{ep_name or module} = {module}\n")


GOOD_PLUGIN = """
    from skillrack import hookimpl
    from helpers.builders import simple_skill

    @hookimpl
    def register_skills(register):
        register(simple_skill("{skill}"))
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    install_fake_distribution(
        tmp_path, "acme-skills", "acme_plugin", GOOD_PLUGIN.format(skill="acme_skill")
    )
    install_fake_distribution(
        tmp_path, "zeta-skills", "zeta_plugin", GOOD_PLUGIN.format(skill="zeta_skill")
    )
    install_fake_distribution(
        tmp_path,
        "broken-skills",
        "broken_plugin",
        "raise ImportError('missing dependency: netmiko')\n",
    )
    return tmp_path


def test_entry_points_load_one_by_one_and_a_broken_one_is_reported(site: Path) -> None:
    loaded = load_plugins(load_env=None)
    registry = build_registry(loaded)
    assert {"acme_skill", "zeta_skill"} <= set(registry.skills)
    failure = next(f for f in registry.failures if f.distribution == "broken-skills")
    assert "missing dependency: netmiko" in failure.reason
    info = next(p for p in registry.plugins if p.name == "acme_plugin")
    assert (info.distribution, info.version) == ("acme-skills", "1.2")


def test_load_plugins_env_selects_distributions(site: Path) -> None:
    registry = build_registry(load_plugins(load_env="Acme_Skills, not-installed"))
    assert "acme_skill" in registry.skills and "zeta_skill" not in registry.skills
    assert not registry.failures  # the broken one was never imported
    assert registry.unknown_plugins == ("not-installed",)


def test_empty_load_plugins_env_loads_none(site: Path) -> None:
    registry = build_registry(load_plugins(load_env=""))
    assert not registry.plugins and not registry.skills and not registry.failures


def test_two_distributions_with_one_skill_id(site: Path) -> None:
    install_fake_distribution(
        site, "copycat-skills", "copycat_plugin", GOOD_PLUGIN.format(skill="acme_skill")
    )
    with pytest.raises(StartupError) as info:
        build_registry(load_plugins(load_env="acme-skills,copycat-skills"))
    assert "'acme_plugin'" in str(info.value) and "'copycat_plugin'" in str(info.value)


def test_selected_distributions_parsing() -> None:
    assert selected_distributions(None) is None
    assert selected_distributions("") == set()
    assert selected_distributions(" A.b_c , d ") == {"a-b-c", "d"}
