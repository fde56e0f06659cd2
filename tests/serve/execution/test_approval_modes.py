"""Approval checks in every mode, over HTTP against a real agent (issue 14, item 3).

The draft: "In every mode, the agent MUST perform the runtime authorization
and approval checks required below", and "The receiving agent MUST still
authorize the selected operation and enforce its applicable approval policy
for every request".  So an approver (``approve_invocation``) that refuses
ends the task ``TASK_STATE_REJECTED`` with ``authorization_failed`` whatever
the skill's ``default_mode`` (``observe_only``, ``recommend_only``,
``execute``), and the handler never runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack import Authority, Operation, hookimpl
from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.serve.security.authz import AuthorizationRequest, Decision
from skillrack.testing.serve import error_of, invoke, skill_request

#: Skill ids of the handlers that ran (a refused call must never get here).
ran: list[str] = []


async def _record_run(arguments: Any, context: Any) -> Any:
    ran.append(context.skill_id)
    return {}


def _skill(skill_id: str, authority: Authority, **overrides: Any) -> Any:
    return simple_skill(skill_id, authority=authority, handler=_record_run, **overrides)


SKILLS = [
    _skill("observe_gated", Authority("observe_only", approval_may_be_required=True)),
    _skill("recommend_gated", Authority("recommend_only", approval_may_be_required=True)),
    _skill("execute_plain", Authority("execute", approval_may_be_required=False)),
    _skill("observe_free", Authority("observe_only", approval_may_be_required=False)),
    _skill(
        "manage_ops",
        Authority("observe_only", approval_may_be_required=True),
        input_schema={
            "type": "object",
            "required": ["operation"],
            "properties": {"operation": {"enum": ["read", "delete"]}},
        },
        operations=(Operation("read"), Operation("delete", may_require_approval=True)),
    ),
]


class Approver:
    """An ``approve_invocation`` plugin whose answer the test sets; it records what it saw."""

    def __init__(self) -> None:
        self.answer: Decision | None = None
        self.seen: list[AuthorizationRequest] = []

    @hookimpl
    async def approve_invocation(self, request: AuthorizationRequest) -> Decision | None:
        self.seen.append(request)
        return self.answer


@pytest.fixture(scope="module")
def approver() -> Approver:
    return Approver()


@pytest.fixture(scope="module")
def second() -> Approver:
    """A second approver plugin: two requirements that both apply (issue 28)."""
    return Approver()


@pytest.fixture(scope="module")
def registry(approver: Approver, second: Approver) -> Registry:
    return registry_of(
        [
            ("skills", SkillsPlugin(*SKILLS)),
            ("allow", AllowAll()),
            ("approver", approver),
            ("second", second),
        ]
    )


@pytest.fixture(scope="module")
def base(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = Config(base_dir=Path(tmp_path_factory.mktemp("approvals")))
    with running_agent(registry, config) as url:
        yield url


@pytest.fixture(autouse=True)
def fresh(approver: Approver, second: Approver) -> Iterator[None]:
    approver.answer, approver.seen[:] = None, []
    second.answer, second.seen[:] = None, []
    ran.clear()
    yield
    approver.answer = second.answer = None


def call(base: str, registry: Registry, skill: str, arguments: Any = None) -> Any:
    registered = registry.skills[skill]
    data = skill_request(
        skill, {} if arguments is None else arguments, "1.0", registered.interface_digest
    )
    return invoke(base, data)


@pytest.mark.parametrize(
    "skill", ["observe_gated", "recommend_gated", "execute_plain", "manage_ops"]
)
def test_approval_checks_in_every_mode(
    base: str, registry: Registry, approver: Approver, skill: str
) -> None:
    """A denying approver refuses the call whatever the skill's default_mode."""
    approver.answer = Decision.deny("change freeze")
    arguments = {"operation": "read"} if skill == "manage_ops" else {}
    task = call(base, registry, skill, arguments)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(task)
    assert error["code"] == "authorization_failed"
    assert "freeze" not in str(task)  # the approver's reason stays in the log
    assert [r.skill_id for r in approver.seen] == [skill]
    assert ran == []  # the handler never ran


@pytest.mark.parametrize("skill", ["observe_gated", "recommend_gated", "execute_plain"])
def test_approval_by_an_approver_in_every_mode(
    base: str, registry: Registry, approver: Approver, skill: str
) -> None:
    approver.answer = Decision.allow()
    task = call(base, registry, skill)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(approver.seen) == 1
    assert ran == [skill]


def test_approval_waits_for_an_operator_before_a_side_effect(
    base: str, registry: Registry, approver: Approver
) -> None:
    """No approver decides: an execute skill waits for an operator."""
    task = call(base, registry, "execute_plain")
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    [part] = task["status"]["message"]["parts"]
    assert part["data"]["skillrack_approval"]["state"] == "pending"
    assert ran == []


@pytest.mark.parametrize("skill", ["observe_gated", "recommend_gated"])
def test_approval_without_side_effect_needs_no_operator(
    base: str, registry: Registry, approver: Approver, skill: str
) -> None:
    """approval_may_be_required without a side effect: approvers asked, no operator waited for."""
    task = call(base, registry, skill)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [r.skill_id for r in approver.seen] == [skill]
    assert ran == [skill]


def test_approval_asked_in_every_mode(base: str, registry: Registry, approver: Approver) -> None:
    """observe_only without approval_may_be_required: the deployment's approvers are still
    asked (the draft: approval checks "in every mode"), and a refusal refuses (issue 28)."""
    approver.answer = Decision.deny()
    task = call(base, registry, "observe_free")
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(task)["code"] == "authorization_failed"
    assert [r.skill_id for r in approver.seen] == ["observe_free"] and ran == []


def test_approval_required_for_an_observe_only_skill(
    base: str, registry: Registry, approver: Approver
) -> None:
    """An approver may require people for an observe_only skill: the call waits for them."""
    approver.answer = Decision.require(2, ("network-lead",))
    task = call(base, registry, "observe_free")
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    waiting = task["status"]["message"]["parts"][0]["data"]["skillrack_approval"]
    assert waiting["approvals_required"] == 2 and waiting["approver_roles"] == ["network-lead"]
    assert ran == []


def test_two_requirements_combine_to_the_largest_count_and_common_roles(
    base: str, registry: Registry, approver: Approver, second: Approver
) -> None:
    """Two approvers' requirements both apply: the call waits for the larger count of
    approvers holding a role both name, whichever plugin answered first (issue 28)."""
    approver.answer = Decision.require(1, ("security", "network-lead"))
    second.answer = Decision.require(2, ("network-lead", "change-board"))
    task = call(base, registry, "observe_free")
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    waiting = task["status"]["message"]["parts"][0]["data"]["skillrack_approval"]
    assert waiting["approvals_required"] == 2 and waiting["approver_roles"] == ["network-lead"]
    # No role in common: nobody could meet both, so the call is refused at once.
    second.answer = Decision.require(1, ("change-board",))
    refused = call(base, registry, "observe_free")
    assert refused["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(refused)["code"] == "authorization_failed"
    assert ran == []


def test_approval_without_opinion_in_observe_only_goes_on(
    base: str, registry: Registry, approver: Approver
) -> None:
    """No approver opinion and no side effect: the call goes on (asked, not parked)."""
    task = call(base, registry, "observe_free")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [r.skill_id for r in approver.seen] == ["observe_free"] and ran == ["observe_free"]


def test_approval_of_unflagged_operation_needs_no_operator(
    base: str, registry: Registry, approver: Approver
) -> None:
    """An unflagged operation: approvers are asked, but without an opinion no operator is."""
    read = call(base, registry, "manage_ops", {"operation": "read"})
    assert read["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [r.operation for r in approver.seen] == ["read"]
    delete = call(base, registry, "manage_ops", {"operation": "delete"})
    assert delete["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert ran == ["manage_ops"]


def test_approval_deny_of_a_flagged_operation(
    base: str, registry: Registry, approver: Approver
) -> None:
    approver.answer = Decision.deny()
    task = call(base, registry, "manage_ops", {"operation": "delete"})
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(task)["code"] == "authorization_failed"
    assert ran == []
