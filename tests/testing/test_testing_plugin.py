"""The pytest plugin vendors get (``skillrack.testing``), run as a vendor's suite would run it.

Each scenario is a small vendor suite written into a temporary directory and
run by a separate ``python -m pytest``: the plugin must arrive through its
``pytest11`` entry point, with nothing imported by hand.  A vendor
distribution is simulated by a ``*.dist-info`` directory on ``PYTHONPATH``
whose ``entry_points.txt`` names the ``skillrack`` entry point, so nothing is
installed into the running environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.fake_dist import PLUGIN_MODULE, fake_distribution, pythonpath

from skillrack.testing import registry_problems, registry_under_test

VENDOR_TESTS = """
import pytest

from skillrack.testing import assert_skill_examples
from acme_ping import PING


def test_ok_examples():
    assert_skill_examples(PING, inputs_invalid=[{}, {"target": ""}],
                          outputs=[{"target": "x", "reachable": False,
                                    "supporting_record_refs": []}],
                          records={"probe": [{"record_id": "p", "rtt_ms": 2}]})


def test_fails_bad_example():
    assert_skill_examples(PING, inputs_invalid=[{"target": "accepted"}])


async def test_ok_in_process(skillrack_agent, skillrack_client):
    assert not skillrack_agent.live
    assert [p.distribution for p in skillrack_agent.registry.plugins] == ["acme-ping"]
    outcome = await skillrack_client.invoke("ping", {"target": "edge-router-1"})
    assert outcome.result["reachable"] is True
    assert outcome.records == {"p1": {"record_id": "p1", "rtt_ms": 1.5}}


async def test_ok_stream_in_process(skillrack_client):
    outcome = await skillrack_client.invoke("ping", {"target": "r"}, mode="stream")
    assert outcome.state == "TASK_STATE_COMPLETED"


async def test_ok_check(skillrack_client):
    assert (await skillrack_client.check()).passed


@pytest.mark.skillrack_server
async def test_ok_server(skillrack_agent, skillrack_client):
    assert skillrack_agent.live and skillrack_agent.url.startswith("http://127.0.0.1:")
    outcome = await skillrack_client.invoke("ping", {"target": "r"}, mode="poll")
    assert outcome.result["target"] == "r"


def test_ok_live_agent_is_sync(skillrack_live_agent):
    import httpx

    card = httpx.get(skillrack_live_agent.url + "/.well-known/agent-card.json").json()
    assert [s["id"] for s in card["skills"]] == ["describe_skill", "ping"]


@pytest.mark.skillrack_plugins("not-installed-anywhere")
async def test_fails_unknown_distribution(skillrack_agent):
    pass


@pytest.mark.skillrack_plugins()
async def test_fails_nothing_under_test(skillrack_agent):
    pass


class TestObjects:
    @pytest.fixture
    def skillrack_plugin_objects(self):
        from skillrack import hookimpl
        from acme_ping import PING
        import dataclasses

        class Refused:
            @hookimpl
            def register_skills(self, register):
                register(dataclasses.replace(PING, id="pong", version="01.0"))

        return [("refusing", Refused())]

    async def test_fails_refused_skill(self, skillrack_agent):
        pass
"""

INI = """
[pytest]
addopts = --strict-markers --strict-config -p no:cacheprovider
filterwarnings = error
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
skillrack_plugins = acme-ping
"""


def run_suite(directory: Path, *args: str) -> dict[str, str]:
    """Run pytest in ``directory``; return {test name: 'passed' | failure message}."""
    report = directory / "report.xml"
    env = {**os.environ, "PYTHONPATH": pythonpath(directory / "site")}
    env.pop("SKILLRACK_LOAD_PLUGINS", None)
    env.pop("PYTEST_ADDOPTS", None)
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", f"--junitxml={report}", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.exists(), completed.stdout + completed.stderr
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        name = case.get("name", "")
        outcomes[name] = (
            "passed" if problem is None else (problem.get("message", "") + (problem.text or ""))
        )
    return outcomes


@pytest.fixture(scope="module")
def vendor_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("vendor")
    site = directory / "site"
    site.mkdir()
    fake_distribution(site, "acme-ping", "acme_ping", PLUGIN_MODULE)
    (directory / "pytest.ini").write_text(INI)
    (directory / "test_vendor.py").write_text(VENDOR_TESTS)
    return directory


@pytest.fixture(scope="module")
def outcomes(vendor_suite: Path) -> dict[str, str]:
    return run_suite(vendor_suite)


@pytest.mark.slow
def test_the_fixtures_serve_the_plugin_under_test(outcomes: dict[str, str]) -> None:
    passing = {name: result for name, result in outcomes.items() if name.startswith("test_ok")}
    assert passing and all(result == "passed" for result in passing.values()), passing


@pytest.mark.slow
def test_a_bad_example_is_named(outcomes: dict[str, str]) -> None:
    message = outcomes["test_fails_bad_example"]
    assert "ping: invalid input #0: is accepted by input_schema" in message


@pytest.mark.slow
def test_an_absent_distribution_fails_with_its_name(outcomes: dict[str, str]) -> None:
    message = outcomes["test_fails_unknown_distribution"]
    assert "'not-installed-anywhere' is not installed or has no 'skillrack' entry point" in message


@pytest.mark.slow
def test_nothing_under_test_says_how_to_name_it(outcomes: dict[str, str]) -> None:
    message = outcomes["test_fails_nothing_under_test"]
    assert "no plugin under test: set 'skillrack_plugins" in message


@pytest.mark.slow
def test_a_refused_skill_fails_with_its_rule(outcomes: dict[str, str]) -> None:
    message = outcomes["test_fails_refused_skill"]
    assert "refusing: skill 'pong' refused (skill_version at /skill_version)" in message


def test_the_plugin_is_inert_without_pytest_asyncio(tmp_path: Path) -> None:
    """Every pytest session loads the plugin: it must not break one that uses nothing of it."""
    (tmp_path / "site").mkdir()
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\naddopts = --strict-markers --strict-config -p no:asyncio -p no:cacheprovider\n"
        "filterwarnings = error\n"
    )
    (tmp_path / "test_plain.py").write_text(
        textwrap.dedent(
            """
            import pytest

            def test_ok_plain():
                assert True

            @pytest.mark.skillrack_server
            def test_ok_markers_are_registered():
                pass

            def test_fails_needs_asyncio(skillrack_agent):
                pass
            """
        )
    )
    outcomes = run_suite(tmp_path)
    assert outcomes["test_ok_plain"] == outcomes["test_ok_markers_are_registered"] == "passed"
    assert "async fixture: install pytest-asyncio" in outcomes["test_fails_needs_asyncio"]


def test_markers_and_ini_option_are_documented(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    markers = subprocess.run(
        [sys.executable, "-m", "pytest", "--markers", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "@pytest.mark.skillrack_server:" in markers
    assert "@pytest.mark.skillrack_plugins(*distributions):" in markers


def test_registry_problems_in_process() -> None:
    registry = registry_under_test(["no-such-distribution"])
    assert registry_problems(registry) == [
        "distribution 'no-such-distribution' is not installed or has no 'skillrack' entry point"
    ]
    # The development policy is added when no policy is loaded, as serve does on loopback.
    assert registry.manager is not None
    assert registry.manager.hook.authorize_invocation.get_hookimpls()


def test_shipped_examples_are_run_as_plugin_check_runs_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers.builders import draft_skill

    from skillrack.testing import assert_skill_examples

    examples = tmp_path / "acme_shipped" / "examples" / "evaluate_resource_condition"
    examples.mkdir(parents=True)
    (tmp_path / "acme_shipped" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    good = {
        "resource_id": "r1",
        "condition": {"metric": "cpu", "operator": "gt", "threshold": 1, "unit": "percent"},
    }
    (examples / "input-valid-cpu.json").write_text(json.dumps(good))
    assert_skill_examples(draft_skill(), package="acme_shipped")

    (examples / "input-invalid-but-fine.json").write_text(json.dumps(good))
    (examples / "inptu-valid-typo.json").write_text("{}")
    with pytest.raises(AssertionError) as info:
        assert_skill_examples(draft_skill(), package="acme_shipped")
    message = str(info.value)
    assert "2 example problem(s)" in message
    assert "input-invalid-but-fine.json: is named invalid" in message
    assert "inptu-valid-typo.json: the file name says neither" in message

    with pytest.raises(AssertionError, match="no representative examples"):
        assert_skill_examples(draft_skill(id="other_skill"), package="acme_shipped")


def test_a_plugin_of_base_skills_only_registered_something() -> None:
    from helpers.builders import SkillsPlugin

    from skillrack import BaseSkill

    async def hello(message: object, context: object) -> str:
        return "hello"

    skill = BaseSkill(id="hello", name="Hello", description="says hello", handler=hello)
    registry = registry_under_test([], [("base_only", SkillsPlugin(skill))])
    assert list(registry.base_skills) == ["hello"]
    assert registry_problems(registry) == []
    assert registry_problems(registry_under_test([], [("empty", SkillsPlugin())])) == [
        "no skill was registered"
    ]
