"""Which orphaned tasks run again: the declaration, the assembly refusal, the decision.

``Skill(restartable=True)`` is accepted for an ``observe_only`` skill and for
one with ``changes_nothing``; any other is refused at assembly, in one line
naming the plugin and the skill.  When a task's process died,
:class:`~skillrack.serve.execution.restarts.Restarts` runs it again only when
its skill is restartable, it was run again fewer than ``task_restarts`` times,
it kept its caller, and (not ``observe_only``) ``changes_nothing`` says its
arguments change nothing; every other task is failed naming the lost replica.
The processes themselves are in ``tests/serve/stores/test_restarts.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from a2a.types import Message, Role, Task, TaskState, TaskStatus
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack import Authority
from skillrack.host.registry import Registry
from skillrack.interface.document import InterfaceError, assemble
from skillrack.protocol.task_metadata import RESTARTS_KEY, STARTED_KEY
from skillrack.protocol.values import data_part
from skillrack.serve.execution.input_deadline import InputDeadlines
from skillrack.serve.execution.restarts import RESTARTED_KEY, Restarts, restarts_of
from skillrack.serve.execution.stored_caller import caller_metadata, stored_caller
from skillrack.serve.security.caller import Caller


def _dry_run(arguments: Mapping[str, Any]) -> bool:
    return arguments.get("dry_run") is True


def _registry() -> Registry:
    return registry_of(
        [
            (
                "probe",
                SkillsPlugin(
                    simple_skill("look", restartable=True),
                    simple_skill("plain"),
                    simple_skill(
                        "change",
                        authority=Authority("execute"),
                        changes_nothing=_dry_run,
                        restartable=True,
                    ),
                ),
            )
        ]
    )


def test_restartable_is_refused_for_a_skill_that_may_change_something() -> None:
    skill = simple_skill("reboot", authority=Authority("execute"), restartable=True)
    with pytest.raises(InterfaceError) as refused:
        assemble(skill)
    assert refused.value.rule == "restartable"
    registry = registry_of([("acme", SkillsPlugin(skill))])
    [refusal] = registry.refused
    line = str(refusal)
    assert "\n" not in line and "acme" in line and "'reboot'" in line
    assert "observe_only" in line and "execute" in line
    assert registry.get("reboot") is None


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_restartable_must_be_a_boolean(value: Any) -> None:
    with pytest.raises(InterfaceError) as refused:
        assemble(simple_skill("look", restartable=value))
    assert refused.value.rule == "restartable"


def test_restartable_is_accepted_for_observe_only_and_changes_nothing() -> None:
    registry = _registry()
    assert registry.refused == ()
    assert {s.skill_id: s.skill.restartable for s in registry.skills.values()} == {
        "change": True,
        "look": True,
        "plain": False,
    }


CALLER = Caller(
    identity="alice",
    tenant="acme",
    authenticated=True,
    attributes={"roles": ["reader"], "auth": "api_keys", "opaque": object()},
    schemes={"apiKey": ()},
)


def _orphan(skill: str, arguments: Any = None, *, caller: Caller | None = CALLER) -> Task:
    request = {"skill": skill, "skill_version": "1.0", "interface_digest": "x"}
    request["arguments"] = arguments if arguments is not None else {}
    task = Task(
        id="t1",
        context_id="c1",
        status=TaskStatus(state=TaskState.TASK_STATE_WORKING),
        history=[
            Message(message_id="m1", role=Role.ROLE_USER, parts=[data_part(request)]),
        ],
    )
    task.metadata.update(
        {"skillrackSkill": skill, STARTED_KEY: {"identity": "alice", "tenant": "acme", "at": "x"}}
    )
    if caller is not None:
        task.metadata.update(caller_metadata(caller))
    return task


async def _nothing(task: Task, caller: Caller) -> None:
    return None


def _restarts(limit: int = 1) -> Restarts:
    restarts = Restarts(_registry(), InputDeadlines(), replica="b:2:bbb", limit=limit)
    restarts.bind(_nothing)
    return restarts


def _error(task: Task) -> str:
    message: str = task.status.message.parts[0].data.struct_value["error"]["message"]
    return message


def test_a_restartable_orphan_is_taken_over_as_working_with_a_notice() -> None:
    task = _orphan("look")
    assert _restarts().settle(task, "a:1:aaa") is True
    assert task.status.state == TaskState.TASK_STATE_WORKING
    notice = task.status.message.parts[0].data.struct_value[RESTARTED_KEY]
    assert notice["lost"] == "replica a:1:aaa" and notice["replica"] == "b:2:bbb"
    assert notice["restart"] == 1 and restarts_of(task) == 1
    assert task.metadata[RESTARTS_KEY] == 1
    # The caller it runs as is the stored one, JSON attributes only.
    again = stored_caller(task)
    assert again == Caller(
        identity="alice",
        tenant="acme",
        authenticated=True,
        attributes={"roles": ["reader"], "auth": "api_keys"},
        schemes={"apiKey": ()},
    )


@pytest.mark.parametrize(
    ("task", "limit", "says"),
    [
        (_orphan("plain"), 1, None),
        (_orphan("look"), 0, "task_restarts = 0"),
        (_orphan("look", caller=None), 1, "kept no caller"),
        (_orphan("change", {"dry_run": False}), 1, "changes_nothing"),
    ],
    ids=["not-restartable", "bound", "no-caller", "a-change"],
)
def test_other_orphans_end_failed_naming_the_lost_replica(
    task: Task, limit: int, says: str | None
) -> None:
    assert _restarts(limit).settle(task, "a:1:aaa") is False
    assert task.status.state == TaskState.TASK_STATE_FAILED
    message = _error(task)
    assert "replica a:1:aaa stopped" in message
    if says is None:
        assert "restartable" not in message
    else:
        assert says in message


def test_a_call_changes_nothing_says_changes_nothing_runs_again() -> None:
    task = _orphan("change", {"dry_run": True})
    assert _restarts().settle(task, "a:1:aaa") is True


def test_a_second_restart_past_the_bound_fails() -> None:
    task = _orphan("look")
    restarts = _restarts()
    assert restarts.settle(task, "a:1:aaa") is True
    assert restarts.settle(task, "b:2:bbb") is False
    assert "run again 1 time(s) already" in _error(task)
    assert restarts_of(task) == 1


def test_a_caller_that_does_not_match_the_starter_is_not_used() -> None:
    task = _orphan("look")
    task.metadata[STARTED_KEY]["scheme"] = "jwt"  # the record says api_keys
    assert stored_caller(task) is None
