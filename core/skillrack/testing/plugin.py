"""pytest plugin for vendors: an agent holding only the plugin under test, a client, example checks.

Installed with skillrack (``pytest11`` entry point), so a vendor's suite gets it
without any import.  Name the plugin under test once, in the pytest
configuration::

    [tool.pytest.ini_options]
    skillrack_plugins = ["acme-skills"]       # distribution name(s)

or per test with ``@pytest.mark.skillrack_plugins("acme-skills")``, or hand
plugin objects in by overriding the ``skillrack_plugin_objects`` fixture
(``[("name", module_or_object)]``).  Then::

    async def test_evaluate(skillrack_client):
        outcome = await skillrack_client.invoke("evaluate_x", {...})
        assert outcome.result["status"] == "ok"

    def test_examples():
        assert_skill_examples(MY_SKILL, inputs_invalid=[{}])

Fixtures:

``skillrack_agent``
    The composed agent, in-process over ASGI (fast; a stream arrives whole at
    its end).  ``@pytest.mark.skillrack_server`` serves it with uvicorn on
    127.0.0.1 instead.  An :class:`skillrack.ops.inprocess.Agent`: ``url``,
    ``registry``, ``config``, ``http()`` for raw requests.
``skillrack_live_agent``
    Always the real uvicorn server (no event loop needed).
``skillrack_client``
    An :class:`skillrack.ops.inprocess.AgentClient` (a ``SkillClient`` bound to
    the agent) that has already described and verified every advertised skill.
``skillrack_registry``, ``skillrack_config``, ``skillrack_distributions``,
``skillrack_plugin_objects``
    The pieces, each overridable.  A plugin that fails to load, a named
    distribution that is not installed, and a refused skill fail the test with
    the reason (override ``skillrack_registry`` to test refusals).

Without an authorization policy among the loaded plugins, the development
policy (allow every call) is added, as ``skillrack serve`` does on loopback.
``skillrack_agent`` and ``skillrack_client`` are async fixtures: they need
pytest-asyncio (``skillrack[test]`` has it).

The module imports nothing heavy and changes nothing when imported: every
pytest session in an environment with skillrack installed loads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from skillrack.testing.markers import PLUGINS_MARKER, SERVER_MARKER

if TYPE_CHECKING:
    from skillrack.host.config import Config
    from skillrack.host.registry import RegisteredSkill, Registry
    from skillrack.interface.declare import Skill
    from skillrack.interface.document import VerifiedInterface
    from skillrack.ops.inprocess import Agent

INI_PLUGINS = "skillrack_plugins"


# -- pytest hooks ---------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_PLUGINS,
        type="args",
        default=[],
        help="skillrack: distribution name(s) of the plugin(s) under test; skillrack_agent "
        "loads only these",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{SERVER_MARKER}: serve skillrack_agent with uvicorn on 127.0.0.1 instead of in-process",
    )
    config.addinivalue_line(
        "markers",
        f"{PLUGINS_MARKER}(*distributions): the skillrack plugin distributions this test loads "
        f"(instead of the {INI_PLUGINS} ini option)",
    )
    if config.pluginmanager.hasplugin("asyncio"):
        from skillrack.testing import _async

        config.pluginmanager.register(_async, "skillrack-testing-async")
    else:
        config.pluginmanager.register(_WithoutAsyncio(), "skillrack-testing-async")


class _WithoutAsyncio:
    """Stand-ins that say why the async fixtures are missing."""

    @pytest.fixture
    def skillrack_agent(self) -> None:
        pytest.fail("skillrack_agent is an async fixture: install pytest-asyncio", pytrace=False)

    @pytest.fixture
    def skillrack_client(self) -> None:
        pytest.fail("skillrack_client is an async fixture: install pytest-asyncio", pytrace=False)


# -- fixtures -------------------------------------------------------------------------------------


@pytest.fixture
def skillrack_distributions(request: pytest.FixtureRequest) -> list[str]:
    """Distributions to load: the ``skillrack_plugins`` marker's, else the ini option's."""
    marker = request.node.get_closest_marker(PLUGINS_MARKER)
    if marker is not None:
        return [str(name) for name in marker.args]
    return [str(name) for name in request.config.getini(INI_PLUGINS)]


@pytest.fixture
def skillrack_plugin_objects() -> list[tuple[str, object]]:
    """Plugin objects to load besides the distributions: override to return ``[(name, obj)]``."""
    return []


@pytest.fixture
def skillrack_plugin_settings() -> dict[str, dict[str, Any]]:
    """Plugins' settings tables, by name, as ``[plugins.<name>]`` of ``skillrack.toml`` gives them.

    Override to return ``{"<entry point name>": {...}}``: each plugin's
    ``configure_plugin`` receives its own table, as under ``skillrack serve``.
    """
    return {}


@pytest.fixture
def skillrack_config(
    tmp_path: Path, skillrack_plugin_settings: dict[str, dict[str, Any]]
) -> Config:
    """The agent's configuration (default values; approvals kept in ``tmp_path``)."""
    from skillrack.host.config import Config

    return Config(base_dir=tmp_path, plugin_settings=skillrack_plugin_settings)


@pytest.fixture
def skillrack_registry(
    skillrack_distributions: list[str],
    skillrack_plugin_objects: list[tuple[str, object]],
    skillrack_config: Config,
) -> Registry:
    """The registry of the plugin(s) under test; fails the test if anything was refused."""
    if not skillrack_distributions and not skillrack_plugin_objects:
        pytest.fail(
            "skillrack: no plugin under test: set 'skillrack_plugins = <distribution>' in the "
            "pytest configuration, mark the test @pytest.mark.skillrack_plugins('<dist>'), or "
            "override the skillrack_plugin_objects fixture",
            pytrace=False,
        )
    registry = registry_under_test(
        skillrack_distributions, skillrack_plugin_objects, skillrack_config
    )
    problems = registry_problems(registry)
    if problems:
        pytest.fail("skillrack: the plugin under test is not clean:\n  " + "\n  ".join(problems))
    return registry


@pytest.fixture
def skillrack_live_agent(
    skillrack_registry: Registry, skillrack_config: Config, tmp_path: Path
) -> Iterator[Agent]:
    """The agent served by uvicorn on 127.0.0.1 (a free port), for the duration of the test."""
    from skillrack.ops.inprocess import threaded_agent

    with threaded_agent(skillrack_registry, skillrack_config, workdir=tmp_path) as agent:
        yield agent


# -- building blocks (also usable without the fixtures) -------------------------------------------


def registry_under_test(
    distributions: Sequence[str],
    objects: Iterable[tuple[str, object]] = (),
    config: Config | None = None,
    *,
    plugin_settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> Registry:
    """The registry of the plugin(s) under test: only ``distributions`` and ``objects``.

    Composed as ``skillrack serve`` composes it on 127.0.0.1
    (:func:`skillrack.host.startup.build_host`): the start-up checks run,
    first-party plugins the configuration enables are loaded too, and without
    an authorization policy the development policy is added (allow every call).
    Installed distributions not named here, and ``SKILLRACK_LOAD_PLUGINS``,
    are ignored.  ``plugin_settings`` are the ``[plugins.<name>]`` tables each
    plugin's ``configure_plugin`` receives (replacing ``config``'s).
    """
    import dataclasses

    from skillrack.host.config import Config
    from skillrack.host.startup import build_host

    config = config or Config()
    if plugin_settings is not None:
        config = dataclasses.replace(config, plugin_settings=plugin_settings)
    host = build_host(
        config,
        listen_host="127.0.0.1",
        distributions=distributions,
        plugins=objects,
    )
    return host.registry


def registry_problems(registry: Registry) -> list[str]:
    """Every reason the registry is not what a vendor meant: failures, absences, refusals."""
    problems = [
        f"plugin {f.name} ({f.distribution or 'no distribution'}) failed: {f.reason}"
        for f in registry.failures
    ]
    problems += [
        f"distribution {name!r} is not installed or has no 'skillrack' entry point"
        for name in registry.unknown_plugins
    ]
    problems += [str(refused) for refused in registry.refused]
    if not registry.skills and not registry.base_skills and not problems:
        problems.append("no skill was registered")
    return problems


# -- representative examples ----------------------------------------------------------------------


@dataclass(frozen=True)
class ExampleProblem:
    """One representative example that does not behave as its role says."""

    skill_id: str
    role: str  # "input", "invalid input", "output", "record <kind>", "declared example"
    index: int | None  # None: the role names the example (a shipped file)
    message: str

    def __str__(self) -> str:
        number = "" if self.index is None else f" #{self.index}"
        return f"{self.skill_id}: {self.role}{number}: {self.message}"


def _first_failure(details: Sequence[Any]) -> str:
    first = details[0]
    where = first.instance_path or "/"
    return f"fails at {where} ({first.keyword or 'schema'}); {len(details)} error(s)"


def check_examples(
    interface: VerifiedInterface,
    *,
    inputs_valid: Iterable[Any] = (),
    inputs_invalid: Iterable[Any] = (),
    outputs: Iterable[Any] = (),
    records: Mapping[str, Iterable[Any]] | None = None,
) -> list[ExampleProblem]:
    """Check representative examples against a skill's interface; return every problem.

    ``inputs_valid`` must pass ``input_schema`` and ``inputs_invalid`` must
    not; ``outputs`` must pass ``output_schema``; ``records`` maps a
    supporting-record kind to records that must pass its schema.  Every value
    that must pass must also travel through A2A unchanged (no integer beyond
    2**53: A2A carries numbers as doubles).
    """
    from skillrack.protocol.values import UnsafeNumber, check_numbers

    skill = interface.skill_id
    problems: list[ExampleProblem] = []

    def valid(role: str, index: int, schema: Any, value: Any) -> None:
        try:
            check_numbers(value)
        except UnsafeNumber as exc:
            problems.append(ExampleProblem(skill, role, index, f"{exc}; send it as a string"))
            return
        details = schema.validate(value)
        if details:
            problems.append(ExampleProblem(skill, role, index, _first_failure(details)))

    for index, value in enumerate(inputs_valid):
        valid("input", index, interface.input, value)
    for index, value in enumerate(inputs_invalid):
        if interface.input.is_valid(value):
            problems.append(
                ExampleProblem(
                    skill,
                    "invalid input",
                    index,
                    "is accepted by input_schema, but the example says it must be refused",
                )
            )
    for index, value in enumerate(outputs):
        valid("output", index, interface.output, value)
    for kind, values in (records or {}).items():
        schema = interface.records.get(kind)
        if schema is None:
            problems.append(
                ExampleProblem(
                    skill,
                    f"record {kind}",
                    0,
                    f"the skill declares no supporting-record kind {kind!r} "
                    f"(declared: {', '.join(sorted(interface.records)) or 'none'})",
                )
            )
            continue
        for index, value in enumerate(values):
            valid(f"record {kind}", index, schema, value)
    return problems


def assert_skill_examples(
    skill: Skill | RegisteredSkill | VerifiedInterface,
    *,
    package: str | None = None,
    declared: bool = True,
    inputs_valid: Iterable[Any] = (),
    inputs_invalid: Iterable[Any] = (),
    outputs: Iterable[Any] = (),
    records: Mapping[str, Iterable[Any]] | None = None,
) -> VerifiedInterface:
    """Assemble ``skill`` (if needed) and assert that every example behaves; return its interface.

    ``package``: also run the examples the package ships for the skill, in
    ``examples/<skill id>/`` (or ``Skill.examples_path``), exactly as
    ``skillrack plugin check`` runs them (``input-valid-*``, ``input-invalid-*``,
    ``output-*``, ``record-<kind>-*``); shipping none fails.  ``declared``: the
    skill's own ``examples`` (the strings the Agent Card shows callers) that
    are JSON objects must pass ``input_schema``.  The values given here are
    checked as :func:`check_examples` does.  The message lists every problem.
    """
    from skillrack.host.registry import RegisteredSkill
    from skillrack.interface.declare import Skill
    from skillrack.interface.document import InterfaceError, VerifiedInterface, assemble

    declaration: Skill | None = None
    if isinstance(skill, RegisteredSkill):
        declaration, interface = skill.skill, skill.interface
    elif isinstance(skill, Skill):
        declaration = skill
        try:
            interface = assemble(skill)
        except InterfaceError as exc:
            where = f" at {exc.pointer}" if exc.pointer else ""
            raise AssertionError(
                f"{skill.id}: the skill is refused ({exc.rule}{where}): {exc.message}"
            ) from None
    elif isinstance(skill, VerifiedInterface):
        interface = skill
    else:
        raise TypeError(f"expected a Skill, RegisteredSkill or VerifiedInterface, not {skill!r}")
    if package is not None and declaration is None:
        raise TypeError("package= needs the Skill (or RegisteredSkill), not only its interface")
    problems: list[ExampleProblem] = []
    if declared and declaration is not None:
        for index, text in enumerate(declaration.examples):
            try:
                value = json.loads(text)
            except ValueError:
                continue  # a prose example: nothing to validate
            if isinstance(value, Mapping):
                problems += [
                    ExampleProblem(p.skill_id, "declared example", index, p.message)
                    for p in check_examples(interface, inputs_valid=[value])
                ]
    problems += check_examples(
        interface,
        inputs_valid=inputs_valid,
        inputs_invalid=inputs_invalid,
        outputs=outputs,
        records=records,
    )
    if package is not None and declaration is not None:
        problems += _shipped(declaration, interface, package)
    if problems:
        raise AssertionError(
            f"{len(problems)} example problem(s):\n  " + "\n  ".join(map(str, problems))
        )
    return interface


def _shipped(skill: Skill, interface: VerifiedInterface, package: str) -> list[ExampleProblem]:
    """The release pipeline's check of the shipped examples: its errors, and "none shipped"."""
    from skillrack.release import examples as release_examples

    examples = release_examples.load_examples(skill, package)
    return [
        ExampleProblem(skill.id, problem.file or "examples", None, problem.message)
        for problem in release_examples.check_shipped_examples(skill, interface, examples)
        if (problem.is_error and problem.rule != "card_example_rejected")
        or problem.rule == "examples_missing"
    ]


__all__ = [
    "ExampleProblem",
    "assert_skill_examples",
    "check_examples",
    "registry_problems",
    "registry_under_test",
]
