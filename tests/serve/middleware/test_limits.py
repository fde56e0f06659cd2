"""Resource limits on a served agent: REJECTED before acceptance, FAILED during processing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, simple_skill

from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.interface.limits import Limits
from skillrack.testing.serve import error_of, invoke, skill_request


async def big_result(arguments: Any, context: Any) -> Any:
    return {"blob": "x" * 5000}


@pytest.fixture(scope="module")
def registry() -> Registry:
    plugins = [
        ("tests", SkillsPlugin(simple_skill("echo_big", handler=big_result))),
        ("allow", AllowAll()),
    ]
    limits = Limits(max_instance_bytes=2000, max_instance_depth=10)
    return build_registry(load_plugins(use_entry_points=False, extra=plugins), limits)


@pytest.fixture(scope="module")
def base(registry: Registry) -> Iterator[str]:
    with running_agent(registry) as url:
        yield url


def call(base: str, registry: Registry, arguments: Any) -> Any:
    skill = registry.skills["echo_big"]
    return invoke(base, skill_request("echo_big", arguments, "1.0", skill.interface_digest))


@pytest.mark.parametrize(
    "arguments",
    [
        {"blob": "y" * 3000},
        {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": {"j": {"k": {}}}}}}}}}}}},
    ],
)
def test_oversized_arguments_are_rejected_before_acceptance(
    base: str, registry: Registry, arguments: Any
) -> None:
    task = call(base, registry, arguments)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(task)["code"] == "resource_limit_exceeded"
    assert "2000" not in error_of(task)["message"]  # the threshold is not disclosed


def test_oversized_result_fails_during_processing(base: str, registry: Registry) -> None:
    task = call(base, registry, {})
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert error_of(task)["code"] == "resource_limit_exceeded"
