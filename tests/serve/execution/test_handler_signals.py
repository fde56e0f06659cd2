"""What a handler raises that is not an Exception: the question still parks, anything else fails.

``InputRequired`` derives from ``BaseException`` so that a handler's ``except
Exception`` cannot swallow it.  The executor must then tell it apart from
every other ``BaseException``: asked inside a task group it arrives wrapped in
a ``BaseExceptionGroup`` and still parks the task; any other non-Exception ends
the task FAILED like a failure, never leaving it running or the caller waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, simple_skill

from skillrack.host.config import Config, ServerSettings
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.testing.serve import error_of, invoke, skill_request


class Stop(BaseException):
    """A plugin's own BaseException (as some libraries define)."""


async def asks_in_a_task_group(arguments: Any, context: Any) -> Any:
    async def ask() -> None:
        await context.request_input({"question": "which interface?"})

    async with asyncio.TaskGroup() as group:
        group.create_task(ask())
    return {"never": "reached"}


async def swallows_exceptions(arguments: Any, context: Any) -> Any:
    try:
        return await context.request_input({"question": "which interface?"})
    except Exception:  # what a handler writes around its own device calls
        return {"swallowed": True}


async def raises_a_base_exception(arguments: Any, context: Any) -> Any:
    raise Stop("the library gave up")


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Registry]]:
    skills = SkillsPlugin(
        simple_skill("grouped", handler=asks_in_a_task_group),
        simple_skill("careless", handler=swallows_exceptions),
        simple_skill("stop", handler=raises_a_base_exception),
    )
    registry = build_registry(
        load_plugins(use_entry_points=False, extra=[("tests", skills), ("allow", AllowAll())])
    )
    config = Config(
        base_dir=tmp_path_factory.mktemp("signals"), server=ServerSettings(store="memory")
    )
    with running_agent(registry, config) as url:
        yield url, registry


def call(agent: tuple[str, Registry], skill_id: str) -> Any:
    url, registry = agent
    skill = registry.skills[skill_id]
    return invoke(url, skill_request(skill_id, {}, "1.0", skill.interface_digest))


@pytest.mark.parametrize("skill_id", ["grouped", "careless"])
def test_a_question_parks_the_task_however_the_handler_wraps_it(
    agent: tuple[str, Registry], skill_id: str
) -> None:
    task = call(agent, skill_id)
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    [part] = task["status"]["message"]["parts"]
    assert part["data"] == {"question": "which interface?"}


def test_another_base_exception_fails_the_task_and_says_nothing_of_it(
    agent: tuple[str, Registry], tmp_path: Path
) -> None:
    task = call(agent, "stop")
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    error = error_of(task)
    assert error["code"] == "output_invalid"
    assert "gave up" not in str(task)
