"""A call its skill says changes nothing (a dry run) does not wait for an operator (issue 29).

An ``execute`` skill's call waits for an operator's approval when no approver
decides it.  ``Skill.changes_nothing(arguments)`` lets a skill say that this
call, with these arguments, changes nothing: it runs at once.  The same
skill's real change still waits; a predicate that raises counts as a change;
an approver that requires people still holds; and a predicate that is not a
function refuses the skill at assembly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack import Authority, hookimpl
from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.interface.document import InterfaceError, assemble
from skillrack.protocol.messages import APPROVAL_KEY
from skillrack.serve.security.authz import AuthorizationRequest, Decision
from skillrack.testing.serve import invoke, skill_request

#: Calls the handler ran, by their arguments' ``dry_run``.
ran: list[bool] = []


async def _handler(arguments: Any, context: Any) -> Any:
    ran.append(bool(arguments.get("dry_run")))
    return {"dry_run": bool(arguments.get("dry_run"))}


def _is_dry_run(arguments: Mapping[str, Any]) -> bool:
    return arguments.get("dry_run") is True


def _broken(arguments: Mapping[str, Any]) -> bool:
    raise KeyError("a plugin's bug")


INPUT = {
    "type": "object",
    "properties": {"dry_run": {"type": "boolean"}, "who": {"type": "string"}},
}


def _skill(skill_id: str, predicate: Any) -> Any:
    return simple_skill(
        skill_id,
        input_schema=INPUT,
        authority=Authority("execute", approval_may_be_required=True),
        handler=_handler,
        changes_nothing=predicate,
    )


class RequiresPeopleForBob:
    """An approver that requires an operator for whatever ``who: bob`` asks."""

    @hookimpl
    async def approve_invocation(self, request: AuthorizationRequest) -> Decision | None:
        if request.arguments.get("who") == "bob":
            return Decision.require(1, ("network-approver",))
        return None


@pytest.fixture(scope="module")
def registry() -> Registry:
    return registry_of(
        [
            ("skills", SkillsPlugin(_skill("change", _is_dry_run), _skill("buggy", _broken))),
            ("allow", AllowAll()),
            ("approver", RequiresPeopleForBob()),
        ]
    )


@pytest.fixture(scope="module")
def base(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = Config(base_dir=Path(tmp_path_factory.mktemp("changes-nothing")))
    with running_agent(registry, config) as url:
        yield url


def _call(base: str, registry: Registry, skill_id: str, arguments: dict[str, Any]) -> Any:
    digest = registry.skills[skill_id].interface_digest
    return invoke(base, skill_request(skill_id, arguments, "1.0", digest))


def _waits_for_an_operator(task: Any) -> bool:
    if task["status"]["state"] != "TASK_STATE_INPUT_REQUIRED":
        return False
    [part] = task["status"]["message"]["parts"]
    return APPROVAL_KEY in part["data"]


def test_a_dry_run_runs_at_once_and_the_change_waits(base: str, registry: Registry) -> None:
    ran.clear()
    dry = _call(base, registry, "change", {"dry_run": True})
    assert dry["status"]["state"] == "TASK_STATE_COMPLETED"
    assert ran == [True]
    change = _call(base, registry, "change", {"dry_run": False})
    assert _waits_for_an_operator(change)
    assert ran == [True]  # the change did not run


def test_a_predicate_that_raises_counts_as_a_change(base: str, registry: Registry) -> None:
    ran.clear()
    task = _call(base, registry, "buggy", {"dry_run": True})
    assert _waits_for_an_operator(task)
    assert ran == []


def test_an_approver_that_requires_people_still_holds_a_dry_run(
    base: str, registry: Registry
) -> None:
    ran.clear()
    task = _call(base, registry, "change", {"dry_run": True, "who": "bob"})
    assert _waits_for_an_operator(task)
    assert ran == []


@pytest.mark.parametrize("predicate", ["dry_run", True])
def test_a_predicate_that_is_not_a_function_refuses_the_skill(predicate: Any) -> None:
    with pytest.raises(InterfaceError) as refused:
        assemble(_skill("bad_predicate", predicate))
    assert refused.value.rule == "changes_nothing"
