"""A skill's ``precheck`` refuses a call after authorization and before any approval (issue 29).

The measured problem: an operator granted an approval for a device the agent
does not manage, and the call was refused only after the grant.  A skill's
``precheck`` runs once the call is authorized and before the approval gate,
so such a call ends ``TASK_STATE_REJECTED`` with ``constraint_rejected`` and
the pointer, nobody is asked, and the handler never runs; a call the precheck
lets through waits for its approval as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack import Authority, ConditionError, ErrorCode, hookimpl
from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.serve.security.authz import AuthorizationRequest, Decision
from skillrack.testing.serve import error_of, invoke, skill_request

KNOWN = {"r1"}
#: What ran, in order: "precheck:<device>", "approver", "handler".
events: list[str] = []


async def _precheck(arguments: Mapping[str, Any], caller: Any) -> None:
    events.append(f"precheck:{arguments['device_id']}")
    if arguments["device_id"] not in KNOWN:
        raise ConditionError(
            ErrorCode.CONSTRAINT_REJECTED,
            f"device {arguments['device_id']!r} is not managed here",
            pointer="/device_id",
        )


async def _handler(arguments: Any, context: Any) -> Any:
    events.append("handler")
    return {}


SKILL = simple_skill(
    "change_device",
    input_schema={
        "type": "object",
        "required": ["device_id"],
        "properties": {"device_id": {"type": "string"}},
    },
    authority=Authority("execute", approval_may_be_required=True),
    handler=_handler,
    precheck=_precheck,
)


class Approver:
    """Approves every call it is asked about, and remembers that it was asked."""

    @hookimpl
    async def approve_invocation(self, request: AuthorizationRequest) -> Decision | None:
        events.append("approver")
        return Decision.allow("test")


@pytest.fixture(scope="module")
def registry() -> Registry:
    return registry_of(
        [("skills", SkillsPlugin(SKILL)), ("allow", AllowAll()), ("approver", Approver())]
    )


@pytest.fixture(scope="module")
def base(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = Config(base_dir=Path(tmp_path_factory.mktemp("precheck")))
    with running_agent(registry, config) as url:
        yield url


def _call(base: str, registry: Registry, device_id: str) -> Any:
    digest = registry.skills["change_device"].interface_digest
    return invoke(base, skill_request("change_device", {"device_id": device_id}, "1.0", digest))


def test_an_unknown_device_is_refused_before_any_approval(base: str, registry: Registry) -> None:
    events.clear()
    task = _call(base, registry, "r9")
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(task)
    assert error["code"] == "constraint_rejected"
    assert error["details"] == [{"instance_path": "/device_id"}]
    assert events == ["precheck:r9"]  # no approver asked, no handler run


def test_a_known_device_goes_on_to_the_approval_and_the_handler(
    base: str, registry: Registry
) -> None:
    events.clear()
    task = _call(base, registry, "r1")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert events == ["precheck:r1", "approver", "handler"]
