"""Two real agents: a two-hop workflow, and a composition refused because references differ.

Agent A (the observer) and agent B (the assessor) are separate ``skillrack
serve`` processes.  B's configuration names A as its ``observer`` peer.  A
client calls B's ``assess_resource``; B delegates ``evaluate_resource_condition``
to A and composes its output into A's ``summarize_condition``: three tasks on
two agents, each with its own id, and B's hop records relate them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from serving import served

from skillrack import ClientCode, HopLog, SkillCallError, SkillClient, compose

HEADERS = {"A2A-Version": "1.0"}
ARGS = {"resource_id": "core-router-1", "metric": "cpu", "threshold": 10, "unit": "percent"}


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with served(tmp_path_factory.mktemp("observer")) as observer:
        config = f'[agent]\nname = "assessor"\n\n[peers]\nobserver = "{observer}"\n'
        with served(tmp_path_factory.mktemp("assessor"), config) as assessor:
            yield observer, assessor


def get_task(base: str, task_id: str) -> dict[str, object]:
    body = {"jsonrpc": "2.0", "id": "1", "method": "GetTask", "params": {"id": task_id}}
    answer = httpx.post(base + "/", json=body, headers=HEADERS).json()
    assert "result" in answer, answer
    result: dict[str, object] = answer["result"]
    return result


async def test_two_hop_workflow(agents: tuple[str, str]) -> None:
    observer, assessor = agents
    async with SkillClient() as client:
        outcome = await client.call(assessor, "assess_resource", ARGS)
    assert outcome.state == "TASK_STATE_COMPLETED"
    delegations = outcome.result["delegations"]
    assert [d["skill_id"] for d in delegations] == [
        "evaluate_resource_condition",
        "summarize_condition",
    ]
    task_ids = {outcome.task_id, *(d["task_id"] for d in delegations)}
    assert len(task_ids) == 3  # every hop is a new task: no id reused
    for delegation in delegations:  # the downstream tasks live on the observer
        downstream = get_task(observer, delegation["task_id"])
        assert downstream["status"] == {**downstream["status"], "state": "TASK_STATE_COMPLETED"}
    hops = httpx.get(assessor + "/-/hops").json()["hops"]
    mine = [h for h in hops if h["upstream_task_id"] == outcome.task_id]
    assert [h["skill_id"] for h in mine] == ["evaluate_resource_condition", "summarize_condition"]
    for hop, delegation in zip(mine, delegations, strict=True):
        assert hop["upstream_agent"] == assessor and hop["downstream_agent"] == observer
        assert hop["downstream_task_id"] == delegation["task_id"] != hop["upstream_task_id"]
        assert hop["terminal_state"] == "TASK_STATE_COMPLETED"
        assert hop["interface_digest"].startswith("sha256:") and hop["skill_version"] == "1.0"
        assert hop["started_at"] <= hop["ended_at"]


EVALUATE_ARGS = {
    "resource_id": "r1",
    "condition": {"metric": "cpu", "operator": "gt", "threshold": 1, "unit": "percent"},
}


def from_evaluation(observer: str, evaluation: Any) -> dict[str, Any]:
    """compose() arguments feeding the observer's evaluation into another of its skills."""
    return {
        "upstream_agent": observer,
        "upstream_skill": "evaluate_resource_condition",
        "upstream_task_id": evaluation.task_id,
        "instance": evaluation.result,
        "downstream_agent": observer,
    }


def health_tasks(base: str) -> int:
    """How many collect_interface_health invocations the agent has seen (describe_skill aside)."""
    body = {"jsonrpc": "2.0", "id": "1", "method": "ListTasks", "params": {"pageSize": 100}}
    tasks = httpx.post(base + "/", headers=HEADERS, json=body).json()["result"]["tasks"]
    return sum(
        1
        for t in tasks
        if t.get("metadata", {}).get("skillrackSkill") == "collect_interface_health"
    )


async def test_composition_with_differing_references_is_refused(agents: tuple[str, str]) -> None:
    observer, _ = agents
    async with SkillClient() as client:
        evaluation = await client.call(observer, "evaluate_resource_condition", EVALUATE_ARGS)
        hops = HopLog()
        before = health_tasks(observer)
        with pytest.raises(SkillCallError) as info:
            await compose(
                client,
                hops,
                **from_evaluation(observer, evaluation),
                downstream_skill="collect_interface_health",
            )
        after = health_tasks(observer)
    assert info.value.code == ClientCode.COMPOSITION_INELIGIBLE
    assert "urn:example:resource-condition:output:1.0" in info.value.message
    assert after == before and hops.recent() == []  # nothing was delegated


async def test_eligible_composition_by_a_client(agents: tuple[str, str]) -> None:
    observer, _ = agents
    async with SkillClient() as client:
        evaluation = await client.call(observer, "evaluate_resource_condition", EVALUATE_ARGS)
        hops = HopLog()
        summary = await compose(
            client,
            hops,
            **from_evaluation(observer, evaluation),
            downstream_skill="summarize_condition",
            domain_checks={},
        )
        assert summary.result["evidence"] == evaluation.result["supporting_record_refs"]
        [hop] = hops.recent()
        assert hop.upstream_task_id == evaluation.task_id != hop.downstream_task_id

        def too_old(instance: object) -> str:
            return "the observation is older than the 5 s this workflow accepts"

        with pytest.raises(SkillCallError) as info:
            await compose(
                client,
                hops,
                **from_evaluation(observer, evaluation),
                downstream_skill="summarize_condition",
                domain_checks={"urn:example:resource-condition:output:1.0": too_old},
            )
        assert info.value.code == "constraint_rejected"
