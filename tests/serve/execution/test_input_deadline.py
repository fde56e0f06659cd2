"""A question asked with a deadline: the host runs the handler on when nobody answers.

``SkillContext.request_input(q, deadline=...)`` parks the task like any
question; at the deadline, with no answer, the host sends the task its own
Message (no caller involved) and the handler's question raises
``InputDeadlinePassed``, so the task ends by itself.  An answer in time is an
answer; one that comes after the deadline counts as none.  The served tests
talk to a real agent over loopback and never send the follow-up.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a.types import Message, Role, Task, TaskState, TaskStatus
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, simple_skill

from skillrack import InputDeadlinePassed, SkillContext
from skillrack.host.config import Config, ServerSettings
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.protocol.values import data_part
from skillrack.serve.execution.input_deadline import (
    DEADLINE_METADATA_KEY,
    DEADLINE_PASSED_KEY,
    Asked,
    DeadlinePassed,
    InputDeadlines,
    deadline_message,
)
from skillrack.serve.execution.replay import replay, replay_turn
from skillrack.serve.execution.skill_context import SkillContext as HostContext
from skillrack.serve.security.caller import ANONYMOUS
from skillrack.testing.serve import (
    error_of,
    get_task,
    invoke,
    send,
    skill_request,
    task_of,
    wait_for_state,
)

ENDED = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"}


async def confirm_or_undo(arguments: Any, context: SkillContext) -> Any:
    """Waits for a yes until the caller-given deadline; on silence says what it undid."""
    deadline = dt.datetime.fromisoformat(arguments["deadline"])
    try:
        answer = await context.request_input({"needed": "confirmation"}, deadline=deadline)
    except InputDeadlinePassed as silence:
        return {"outcome": "undone", "deadline": silence.deadline}
    return {"outcome": "answered", "answer": answer}


async def leaves_silence_uncaught(arguments: Any, context: SkillContext) -> Any:
    deadline = dt.datetime.fromisoformat(arguments["deadline"])
    return await context.request_input({"needed": "anything"}, deadline=deadline)


@pytest.fixture(scope="module", params=["memory", "sqlite:///tasks.db"])
def agent(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Registry]]:
    """An agent on each kind of task store a single process uses (in memory, a SQLite file)."""
    skills = SkillsPlugin(
        simple_skill("confirm_or_undo", handler=confirm_or_undo),
        simple_skill("uncaught", handler=leaves_silence_uncaught),
    )
    registry = build_registry(
        load_plugins(use_entry_points=False, extra=[("tests", skills), ("allow", AllowAll())])
    )
    config = Config(
        base_dir=tmp_path_factory.mktemp("deadline"), server=ServerSettings(store=request.param)
    )
    with running_agent(registry, config) as url:
        yield url, registry


def in_seconds(seconds: float) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)).isoformat()


def start(agent: tuple[str, Registry], skill_id: str, deadline: str) -> Any:
    url, registry = agent
    skill = registry.skills[skill_id]
    return invoke(
        url, skill_request(skill_id, {"deadline": deadline}, "1.0", skill.interface_digest)
    )


def result_of(task: Any) -> Any:
    [artifact] = [a for a in task["artifacts"] if a["artifactId"] == "result"]
    return artifact["parts"][0]["data"]["result"]


def test_the_host_ends_the_task_at_the_deadline_with_no_message_from_the_caller(
    agent: tuple[str, Registry],
) -> None:
    url, _ = agent
    task = start(agent, "confirm_or_undo", in_seconds(1.0))
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    said = task["status"]["message"]["metadata"][DEADLINE_METADATA_KEY]
    assert said["question"] == 0
    deadline = dt.datetime.fromisoformat(said["deadline"])

    ended = wait_for_state(url, task["id"], ENDED, timeout=5)
    noticed = dt.datetime.now(dt.UTC)

    assert ended["status"]["state"] == "TASK_STATE_COMPLETED"
    assert result_of(ended) == {"outcome": "undone", "deadline": said["deadline"]}
    assert deadline <= noticed <= deadline + dt.timedelta(seconds=1)
    # The task's history says why it went on: the host's Message, after the question.
    host_said = [
        m["parts"][0]["data"][DEADLINE_PASSED_KEY]
        for m in ended["history"]
        if m["role"] == "ROLE_AGENT" and DEADLINE_PASSED_KEY in m["parts"][0].get("data", {})
    ]
    assert [(h["question"], h["deadline"]) for h in host_said] == [(0, said["deadline"])]
    assert [m["role"] for m in ended["history"]].count("ROLE_USER") == 1  # the request only


def test_an_answer_in_time_is_the_answer_and_the_deadline_then_changes_nothing(
    agent: tuple[str, Registry],
) -> None:
    url, _ = agent
    task = start(agent, "confirm_or_undo", in_seconds(1.0))
    answered = task_of(send(url, {"confirm": True}, task_id=task["id"]))
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert result_of(answered) == {"outcome": "answered", "answer": {"confirm": True}}
    time.sleep(1.5)  # past the deadline: the host's timer must not touch the ended task
    later = get_task(url, task["id"])
    assert later["status"] == answered["status"]
    assert len(later["history"]) == len(answered["history"])


def test_silence_a_handler_does_not_catch_fails_the_task_resource_limit_exceeded(
    agent: tuple[str, Registry],
) -> None:
    url, _ = agent
    task = start(agent, "uncaught", in_seconds(0.5))
    ended = wait_for_state(url, task["id"], ENDED, timeout=5)
    assert ended["status"]["state"] == "TASK_STATE_FAILED"
    error = error_of(ended)
    assert error["code"] == "resource_limit_exceeded"
    assert "did not answer the skill's question by its deadline" in error["message"]


# -- replay and the context, without a server ------------------------------------------------


def _user(data: Any) -> Message:
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[data_part(data)])


def test_replay_takes_a_late_answer_as_none_once_the_host_said_the_deadline_passed() -> None:
    request = _user(
        {"skill": "s", "skill_version": "1.0", "interface_digest": "d", "arguments": {}}
    )
    question = Message(
        message_id="q", role=Role.ROLE_AGENT, parts=[data_part({"needed": "confirmation"})]
    )
    late = _user({"confirm": True})
    asked = Asked(0, "2026-01-01T00:00:00.000Z")
    task = Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.TASK_STATE_WORKING),
        history=[request, question],
    )
    marker = deadline_message("t", "c", asked)
    _, answers = replay(task, late, marker)
    assert answers == [DeadlinePassed(asked.deadline)]
    # Without the host's Message the same history is an ordinary answer.
    assert replay(task, late)[1] == [{"confirm": True}]


async def _never(*_: Any) -> Any:
    raise AssertionError("not published")


def _context(answers: list[Any]) -> HostContext:
    return HostContext(
        task_id="t",
        context_id="c",
        skill_id="s",
        skill_version="1.0",
        caller=ANONYMOUS,
        publish_record=_never,
        publish_progress=_never,
        answers=answers,
    )


async def test_a_deadline_already_past_raises_at_once_and_a_naive_one_is_refused(
    tmp_path: Path,
) -> None:
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    with pytest.raises(InputDeadlinePassed) as raised:
        await _context([]).request_input({"q": 1}, deadline=past)
    assert raised.value.code.value == "resource_limit_exceeded"
    with pytest.raises(ValueError, match="aware datetime"):
        await _context([]).request_input({"q": 1}, deadline=dt.datetime(2030, 1, 1))


class _Updater:
    """Records the status updates ``replay_turn`` sends (the executor's ``TaskUpdater``)."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, Message]] = []

    async def update_status(self, state: Any, message: Message) -> None:
        self.sent.append((state, message))


async def test_an_answer_after_the_deadline_is_recorded_as_late_and_counts_as_none() -> None:
    request = _user(
        {"skill": "s", "skill_version": "1.0", "interface_digest": "d", "arguments": {}}
    )
    asked = Asked(0, "2026-01-01T00:00:00.000Z")  # long past
    question = Message(
        message_id="q", role=Role.ROLE_AGENT, parts=[data_part({"needed": "confirmation"})]
    )
    question.metadata.update(asked.metadata())
    task = Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.TASK_STATE_INPUT_REQUIRED, message=question),
        history=[request],
    )
    updater = _Updater()
    as_updater: Any = updater  # the one method replay_turn calls
    replayed = await replay_turn(task, _user({"confirm": True}), InputDeadlines(), as_updater)
    assert replayed is not None
    assert replayed[1] == [DeadlinePassed(asked.deadline)]
    [(state, said)] = updater.sent  # the task records why the answer was not taken
    assert state == TaskState.TASK_STATE_WORKING
    assert said.parts[0].data.struct_value.fields[DEADLINE_PASSED_KEY] is not None
    # The host's own turn for a question no longer waiting finds nothing to run.
    moved_on = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))
    host_said = deadline_message("t", "c", asked)
    assert await replay_turn(moved_on, host_said, InputDeadlines(), as_updater) is None
