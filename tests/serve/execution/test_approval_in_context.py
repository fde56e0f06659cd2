"""A handler sees what approved its call (``context.approval``), for its change records.

A stored approval that operators granted gives its id, the granting
identities and when; an approver plugin that allowed the call gives its
name; a call nobody had to approve gives ``None``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack import Authority, SkillContext, hookimpl
from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.protocol.messages import APPROVAL_KEY
from skillrack.serve.security.approvals import ApprovalStore, Decider
from skillrack.serve.security.authz import AuthorizationRequest, Decision
from skillrack.testing.serve import invoke, send, skill_request, task_of


async def _cites_its_approval(arguments: Any, context: SkillContext) -> Any:
    approval = context.approval
    return {"approval": approval.to_json() if approval is not None else None}


def _skill(skill_id: str, mode: Any) -> Any:
    return simple_skill(
        skill_id,
        authority=Authority(mode, approval_may_be_required=mode == "execute"),
        handler=_cites_its_approval,
    )


class AllowsTheAllowed:
    """Approves calls of ``allowed`` and has no opinion on anything else."""

    @hookimpl
    async def approve_invocation(self, request: AuthorizationRequest) -> Decision | None:
        return Decision.allow("test") if request.skill_id == "allowed" else None


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(tmp_path_factory.mktemp("approval-in-context"))


@pytest.fixture(scope="module")
def registry() -> Registry:
    skills = SkillsPlugin(
        _skill("allowed", "execute"), _skill("operated", "execute"), _skill("read", "observe_only")
    )
    return registry_of([("skills", skills), ("allow", AllowAll()), ("lenient", AllowsTheAllowed())])


@pytest.fixture(scope="module")
def base(registry: Registry, workdir: Path) -> Iterator[str]:
    with running_agent(registry, Config(base_dir=workdir)) as url:
        yield url


def _call(base: str, registry: Registry, skill_id: str) -> Any:
    digest = registry.skills[skill_id].interface_digest
    return invoke(base, skill_request(skill_id, {}, "1.0", digest))


def _result(task: Any) -> Any:
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    [artifact] = [a for a in task["artifacts"] if a["artifactId"] == "result"]
    return artifact["parts"][0]["data"]["result"]


def test_an_operators_grant_is_cited_with_its_id_and_approver(
    base: str, registry: Registry, workdir: Path
) -> None:
    parked = _call(base, registry, "operated")
    assert parked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    store = ApprovalStore(workdir / Config().server.approvals_store)
    [pending] = [a for a in store.list("pending") if a.task_id == parked["id"]]
    granted = store.decide(pending.id, granted=True, by=Decider("noc-alice"), reason="window")
    nudge = {APPROVAL_KEY: {"approval_id": pending.id, "check": True}}
    done = task_of(send(base, nudge, task_id=parked["id"]))
    assert _result(done)["approval"] == {
        "via": "operator",
        "approvers": ["noc-alice"],
        "approval_id": pending.id,
        "decided_at": granted.decided_at,
    }


def test_an_approver_plugins_allow_is_cited_by_its_name(base: str, registry: Registry) -> None:
    done = _call(base, registry, "allowed")
    assert _result(done)["approval"] == {"via": "policy", "approvers": ["lenient"]}


def test_a_call_nobody_had_to_approve_cites_nothing(base: str, registry: Registry) -> None:
    assert _result(_call(base, registry, "read"))["approval"] is None
