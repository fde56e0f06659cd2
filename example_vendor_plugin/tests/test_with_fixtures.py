"""The package tested the way a vendor tests theirs: skillrack's pytest fixtures and helpers.

``skillrack_client`` talks to an agent holding only this distribution, in
process (ASGI) unless a test is marked ``skillrack_server``; it has described
and verified every advertised skill before the test starts, and ``invoke``
runs the draft's whole client procedure (input, result and every record
validated).  ``assert_skill_examples`` checks representative examples against
the assembled interface without any agent.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from skillrack import Skill
from skillrack.testing import Agent, AgentClient, assert_skill_examples, check_examples
from skillrack_example_vendor import (
    COLLECT_INTERFACE_HEALTH,
    EVALUATE_RESOURCE_CONDITION,
    HELP,
    SKILLS,
    SUMMARIZE_CONDITION,
)
from skillrack_example_vendor.inventory import interfaces

pytestmark = pytest.mark.skillrack_plugins("skillrack-example-vendor")

DRAFT_ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
DRAFT_RESULT = {
    "result": "condition_not_met",
    "observed_value": 42,
    "unit": "percent",
    "supporting_record_refs": ["observation-7"],
}
DRAFT_RECORD = {
    "record_id": "observation-7",
    "resource_id": "network-resource-123",
    "metric": "utilization",
    "value": 42,
    "unit": "percent",
    "observed_at": "2026-08-11T12:00:01Z",
}


# Representative examples, no agent ---------------------------------------------------------------


@pytest.mark.parametrize("skill", SKILLS, ids=lambda s: s.id)
def test_shipped_and_card_examples_behave(skill: Skill) -> None:
    """examples/<skill id>/ (as `skillrack plugin check` runs them), the card's, and a few more."""
    assert_skill_examples(
        skill, package="skillrack_example_vendor", inputs_invalid=[{}, [], "arguments"]
    )


def test_the_draft_example_passes_every_schema() -> None:
    assert_skill_examples(
        EVALUATE_RESOURCE_CONDITION,
        inputs_valid=[DRAFT_ARGS],
        inputs_invalid=[{**DRAFT_ARGS, "condition": {"metric": "utilization"}}],
        outputs=[DRAFT_RESULT],
        records={"resource-observation": [DRAFT_RECORD]},
    )


def test_every_problem_is_reported_at_once() -> None:
    missing_unit = {k: v for k, v in DRAFT_RECORD.items() if k != "observed_at"}
    with pytest.raises(AssertionError) as info:
        assert_skill_examples(
            EVALUATE_RESOURCE_CONDITION,
            inputs_invalid=[DRAFT_ARGS],
            outputs=[{**DRAFT_RESULT, "result": "maybe"}],
            records={"resource-observation": [missing_unit], "unknown-kind": [{}]},
        )
    message = str(info.value)
    assert "4 example problem(s)" in message
    assert "invalid input #0: is accepted by input_schema" in message
    assert "output #0: fails at /result (enum)" in message
    assert "record resource-observation #0: fails at /observed_at (required)" in message
    assert "no supporting-record kind 'unknown-kind'" in message


def test_numbers_a2a_cannot_carry_are_problems() -> None:
    interface = assert_skill_examples(EVALUATE_RESOURCE_CONDITION)
    big = {**DRAFT_ARGS, "condition": {**DRAFT_ARGS["condition"], "threshold": 2**60}}
    [problem] = check_examples(interface, inputs_valid=[big])
    assert problem.role == "input" and "as a string" in problem.message


# The agent, in process ---------------------------------------------------------------------------


async def test_the_agent_holds_exactly_this_distribution(skillrack_agent: Agent) -> None:
    assert not skillrack_agent.live
    assert {info.distribution for info in skillrack_agent.registry.plugins} == {
        "skillrack-example-vendor"
    }
    assert set(skillrack_agent.registry.skills) == {s.id for s in SKILLS}


async def test_invoke_validates_result_and_records(skillrack_client: AgentClient) -> None:
    outcome = await skillrack_client.invoke("evaluate_resource_condition", DRAFT_ARGS)
    assert outcome.state == "TASK_STATE_COMPLETED"
    [ref] = outcome.result["supporting_record_refs"]
    assert outcome.record_kinds[ref] == "resource-observation"
    assert outcome.records[ref]["value"] == outcome.result["observed_value"]


@pytest.mark.parametrize("mode", ["sync", "stream", "poll"])
async def test_every_response_mode(skillrack_client: AgentClient, mode: Any) -> None:
    outcome = await skillrack_client.invoke(
        "collect_interface_health", {"device_id": "edge-router-1", "interval_ms": 0}, mode=mode
    )
    assert sorted(r["interface"] for r in outcome.records.values()) == sorted(
        interfaces("edge-router-1")
    )


async def test_the_digest_is_the_draft_vector(skillrack_client: AgentClient) -> None:
    interface = await skillrack_client.interface("evaluate_resource_condition")
    assert interface.interface_digest == (
        "sha256:4dedea3f7ddf19e94d9fd0b30886624f50afb5aadc1b407508a05dd3c40f380d"
    )


async def test_the_agent_meets_every_client_checkable_requirement(
    skillrack_client: AgentClient,
) -> None:
    report = await skillrack_client.check()
    assert report.passed, [i.to_json() for i in report.items if i.passed is False]


async def test_input_required_round_trip(skillrack_client: AgentClient) -> None:
    intent = {"device_id": "edge-router-1", "interface": "eth2", "desired": {"mtu": 9000}}
    asked = await skillrack_client.invoke("propose_interface_configuration", intent)
    assert asked.state == "TASK_STATE_INPUT_REQUIRED"
    assert asked.input_request["needed"] == "maintenance_window"
    window = {"start": "2030-01-15T01:00:00Z", "end": "2030-01-15T03:00:00Z"}
    done = await skillrack_client.respond(
        skillrack_client.url,
        "propose_interface_configuration",
        asked.task_id,
        {"maintenance_window": window},
    )
    assert done.state == "TASK_STATE_COMPLETED"


# Only some skills: plugin objects instead of the distribution ------------------------------------


class _OnlySummarize:
    from skillrack import hookimpl

    @hookimpl
    def register_skills(self, register: Any) -> None:
        register(SUMMARIZE_CONDITION)


@pytest.mark.skillrack_plugins()
class TestPluginObjects:
    @pytest.fixture
    def skillrack_plugin_objects(self) -> list[tuple[str, object]]:
        return [("only-summarize", _OnlySummarize())]

    async def test_only_the_objects_are_loaded(self, skillrack_client: AgentClient) -> None:
        card = await skillrack_client.card(skillrack_client.url)
        assert [s["id"] for s in card["skills"]] == ["describe_skill", "summarize_condition"]
        outcome = await skillrack_client.invoke("summarize_condition", DRAFT_RESULT)
        assert outcome.state == "TASK_STATE_COMPLETED"


# A real server -----------------------------------------------------------------------------------


@pytest.mark.skillrack_server
async def test_streaming_over_a_real_socket(
    skillrack_agent: Agent, skillrack_client: AgentClient
) -> None:
    assert skillrack_agent.live and skillrack_agent.url.startswith("http://127.0.0.1:")
    outcome = await skillrack_client.invoke(
        "collect_interface_health", {"device_id": "core-router-1", "interval_ms": 0}, mode="stream"
    )
    assert len(outcome.records) == len(interfaces("core-router-1"))


def test_live_agent_without_an_event_loop(skillrack_live_agent: Agent) -> None:
    response = httpx.get(skillrack_live_agent.url + "/.well-known/agent-card.json")
    assert response.status_code == 200 and response.headers["etag"]
    assert {s["id"] for s in response.json()["skills"]} == {"describe_skill", HELP.id} | {
        s.id for s in SKILLS
    }


def test_the_collect_skill_streams_one_record_per_interface() -> None:
    interface = assert_skill_examples(COLLECT_INTERFACE_HEALTH)
    assert set(interface.records) == {"interface-health-observation"}
