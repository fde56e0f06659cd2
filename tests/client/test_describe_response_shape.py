"""The client checks the shape of a describe_skill response (issue 14, item 6).

The draft: "On success, the A2A task MUST reach the completed state and
contain exactly one Artifact.  The Artifact name MUST be describe_skill, and
the Artifact MUST contain exactly one Data Part.  Its data value MUST be the
following object ... { "skill": "describe_skill", "result": {
"interface_digest": ..., "interface": <Skill Interface Document> } }", and
the agent "MUST NOT accept or return an unvalidated opaque payload as a
substitute".  A real agent on 127.0.0.1, made hostile by rewriting its
describe_skill Task, gets each malformed shape past the wire; the client
stops locally with ``interface_invalid`` and never invokes the skill.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from helpers.agent_harness import running_wrapped
from helpers.tamper import Tamper
from starlette.types import ASGIApp

from skillrack.client.skill_client import SkillClient
from skillrack.errors import SkillCallError
from skillrack.host.registry import Registry

SKILL = "evaluate_resource_condition"
ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
TaskEdit = Callable[[dict[str, Any]], None]


class DescribeTaskTamper(Tamper):
    """A :class:`Tamper` that may also rewrite the whole describe_skill Task (its Artifacts)."""

    def __init__(self, app: ASGIApp) -> None:
        super().__init__(app)
        self.describe_task: TaskEdit | None = None

    def _edit(self, path: str, body: bytes) -> bytes:
        edit = self.describe_task
        if edit is not None and not path.endswith("agent-card.json"):
            try:
                value = json.loads(body)
            except ValueError:
                return body
            task = value.get("result", value).get("task") if isinstance(value, dict) else None
            artifacts = task.get("artifacts", []) if isinstance(task, dict) else []
            if artifacts and artifacts[0].get("name") == "describe_skill":
                assert isinstance(task, dict)
                edit(task)
                return json.dumps(value).encode()
        return super()._edit(path, body)


@pytest.fixture(scope="module")
def agent(registry: Registry) -> Iterator[tuple[str, DescribeTaskTamper]]:
    with running_wrapped(registry, DescribeTaskTamper) as served:
        yield served


@pytest.fixture
def tamper(agent: tuple[str, DescribeTaskTamper]) -> Iterator[DescribeTaskTamper]:
    agent[1].clear()
    agent[1].describe_task = None
    yield agent[1]
    agent[1].clear()
    agent[1].describe_task = None


@pytest.fixture
async def client() -> AsyncIterator[SkillClient]:
    async with SkillClient() as c:  # a fresh client: nothing cached from another case
        yield c


def _data(task: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = task["artifacts"][0]["parts"][0]["data"]
    return data


def _twice(task: dict[str, Any]) -> None:
    task["artifacts"].append(json.loads(json.dumps(task["artifacts"][0])))


def _renamed(task: dict[str, Any]) -> None:
    task["artifacts"][0]["name"] = "interface"


def _two_parts(task: dict[str, Any]) -> None:
    task["artifacts"][0]["parts"].append({"text": "and more"})


def _text_part(task: dict[str, Any]) -> None:
    task["artifacts"][0]["parts"] = [{"text": json.dumps(_data(task))}]


def _no_artifact(task: dict[str, Any]) -> None:
    task["artifacts"] = []


def _wrong_skill(task: dict[str, Any]) -> None:
    _data(task)["skill"] = "describe"


def _no_digest(task: dict[str, Any]) -> None:
    del _data(task)["result"]["interface_digest"]


def _extra_member(task: dict[str, Any]) -> None:
    _data(task)["result"]["note"] = "trust me"


def _opaque_interface(task: dict[str, Any]) -> None:
    result = _data(task)["result"]
    result["interface"] = json.dumps(result["interface"])  # a string, not the document


def _not_completed(task: dict[str, Any]) -> None:
    task["status"]["state"] = "TASK_STATE_WORKING"


@pytest.mark.parametrize(
    "edit",
    [
        _twice,
        _renamed,
        _two_parts,
        _text_part,
        _no_artifact,
        _wrong_skill,
        _no_digest,
        _extra_member,
        _opaque_interface,
        _not_completed,
    ],
)
async def test_describe_response_shape_is_checked(
    agent: tuple[str, DescribeTaskTamper],
    tamper: DescribeTaskTamper,
    client: SkillClient,
    edit: TaskEdit,
) -> None:
    tamper.describe_task = edit
    with pytest.raises(SkillCallError) as info:
        await client.call(agent[0], SKILL, ARGS)
    error = info.value
    assert error.code == "interface_invalid" and not error.remote
    assert tamper.describes() == 1 and tamper.domain_calls() == 0


async def test_describe_response_shape_honest_agent_passes(
    agent: tuple[str, DescribeTaskTamper], tamper: DescribeTaskTamper, client: SkillClient
) -> None:
    result = await client.call(agent[0], SKILL, ARGS)
    assert result.state == "TASK_STATE_COMPLETED"
