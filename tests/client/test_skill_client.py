"""The client procedure against real agents, honest and deliberately broken."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers.builders import VECTOR_DIGEST
from helpers.tamper import Tamper

from skillrack.client.skill_client import SkillClient
from skillrack.errors import ClientCode, SkillCallError
from skillrack.host.registry import Registry
from skillrack.interface.canonical import digest_of
from skillrack.interface.limits import Limits
from skillrack.protocol.messages import EXTENSION_URI

ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
SKILL = "evaluate_resource_condition"


@pytest.fixture
def base(agent: tuple[str, Tamper]) -> str:
    return agent[0]


@pytest.fixture
async def client() -> AsyncIterator[SkillClient]:
    async with SkillClient() as c:
        yield c


async def failure(coro: Any) -> SkillCallError:
    with pytest.raises(SkillCallError) as info:
        await coro
    return info.value


# The honest agent --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "stream", "poll"])
async def test_call_returns_validated_result_and_records(
    client: SkillClient, base: str, tamper: Tamper, mode: Any
) -> None:
    outcome = await client.call(base, SKILL, ARGS, mode=mode)
    assert outcome.state == "TASK_STATE_COMPLETED"
    [ref] = outcome.result["supporting_record_refs"]
    assert outcome.records[ref]["record_id"] == ref
    assert outcome.record_kinds[ref] == "resource-observation"
    [describe, invoke] = tamper.sent
    assert describe == {"skill": "describe_skill", "arguments": {"skill_id": SKILL}}
    assert invoke["skill_version"] == "1.0" and invoke["interface_digest"] == VECTOR_DIGEST


async def test_describe_returns_the_verified_draft_document(client: SkillClient, base: str) -> None:
    interface = await client.describe(base, SKILL)
    assert interface.interface_digest == VECTOR_DIGEST


async def test_cache_makes_one_describe_per_agent_skill_digest(
    client: SkillClient, base: str, tamper: Tamper
) -> None:
    for _ in range(3):
        await client.call(base, SKILL, ARGS)
    assert tamper.describes() == 1 and tamper.domain_calls() == 3
    await client.call(base, "progressive", {})
    assert tamper.describes() == 2


async def test_changed_card_invalidates_the_cache(
    client: SkillClient, base: str, tamper: Tamper
) -> None:
    await client.call(base, SKILL, ARGS)
    tamper.card = lambda card: _set_binding(card, SKILL, skill_version="1.1")
    client._cards[base].fresh_for(None)  # its max-age has passed: the next use revalidates
    with pytest.raises(SkillCallError):
        await client.call(base, SKILL, ARGS)  # the new binding is retrieved again ...
    assert tamper.describes() == 2  # ... with a second describe_skill
    tamper.card = None
    client._cards[base].fresh_for(None)
    await client.call(base, SKILL, ARGS)
    assert tamper.describes() == 3


async def test_cache_is_bounded(base: str) -> None:
    async with SkillClient(limits=Limits(max_cache_entries=2)) as small:
        for skill in (SKILL, "progressive", "crash"):
            await small.describe(base, skill)
        assert len(small.cache) == 2


async def test_remote_errors_carry_task_state_and_id(client: SkillClient, base: str) -> None:
    error = await failure(client.call(base, "crash", {}))
    assert (error.code, error.remote, error.state) == ("output_invalid", True, "TASK_STATE_FAILED")
    assert error.task_id


async def test_input_required_and_respond(client: SkillClient, base: str) -> None:
    first = await client.call(base, "ask_twice", {})
    assert first.state == "TASK_STATE_INPUT_REQUIRED"
    assert first.input_request == {"needed": "maintenance_window"}
    second = await client.respond(base, "ask_twice", first.task_id, {"start": "now"})
    third = await client.respond(base, "ask_twice", second.task_id, "yes")
    assert third.result == {"window": {"start": "now"}, "confirmation": "yes"}


# Local conditions: nothing is sent ---------------------------------------------------------------


async def test_skill_not_advertised_is_local(
    client: SkillClient, base: str, tamper: Tamper
) -> None:
    error = await failure(client.call(base, "no_such_skill", {}))
    assert (error.code, error.remote, error.task_id, error.state) == (
        "skill_not_advertised",
        False,
        None,
        None,
    )
    assert tamper.sent == []


async def test_invalid_arguments_are_local(client: SkillClient, base: str, tamper: Tamper) -> None:
    error = await failure(client.call(base, SKILL, {"resource_id": 7}))
    assert error.code == "input_invalid" and not error.remote
    assert {d["instance_path"] for d in error.details} >= {"/resource_id", "/condition"}
    assert tamper.domain_calls() == 0


async def test_unsafe_integer_is_refused_locally(client: SkillClient, base: str) -> None:
    args = copy.deepcopy(ARGS)
    args["condition"]["threshold"] = 2**60
    assert (await failure(client.call(base, SKILL, args))).code == "input_invalid"


@pytest.mark.parametrize(
    "edit, code",
    [
        (lambda card: _drop_extension(card), ClientCode.NOT_SCHEMA_INTERFACE_AGENT),
        (lambda card: _drop_describe(card), ClientCode.NOT_SCHEMA_INTERFACE_AGENT),
        (lambda card: _params(card, interface_version="2.0"), "unsupported_interface_version"),
        (lambda card: _duplicate_binding(card), "interface_invalid"),
        (lambda card: _orphan_binding(card), "interface_invalid"),
        (lambda card: _set_binding(card, SKILL, skill_version="01.0"), "interface_invalid"),
    ],
)
async def test_bad_advertisements_are_caught_before_sending(
    client: SkillClient, base: str, tamper: Tamper, edit: Any, code: str
) -> None:
    tamper.card = edit
    error = await failure(client.call(base, SKILL, ARGS))
    assert error.code == code and not error.remote
    assert tamper.sent == []


# Tampering with describe_skill and results -------------------------------------------------------


async def test_advertised_digest_differs_from_document(
    client: SkillClient, base: str, tamper: Tamper
) -> None:
    tamper.card = lambda card: _set_binding(card, SKILL, interface_digest="sha256:" + "a" * 64)
    error = await failure(client.call(base, SKILL, ARGS))
    assert error.code == "interface_invalid" and "advertises" in error.message
    assert tamper.domain_calls() == 0


async def test_returned_digest_matches_but_document_differs(
    client: SkillClient, base: str, tamper: Tamper
) -> None:
    def edit(data: Any) -> Any:
        data["result"]["interface"]["authority"]["default_mode"] = "execute"
        return data

    tamper.describe = edit
    error = await failure(client.call(base, SKILL, ARGS))
    assert error.code == "interface_invalid" and "computed digest" in error.message
    assert tamper.domain_calls() == 0


async def test_embedded_schema_changed_without_its_digest(
    client: SkillClient, base: str, tamper: Tamper
) -> None:
    def edit(data: Any) -> Any:
        schema = data["result"]["interface"]["input_schema"]["resolution"]["schema"]
        schema["properties"]["resource_id"]["maxLength"] = 3
        return data

    tamper.describe = edit
    error = await failure(client.call(base, SKILL, ARGS))
    assert error.code == "interface_invalid" and "schema_digest" in error.message


async def test_a_document_with_a_reference_cycle_is_a_resource_limit(
    client: SkillClient, base: str, registry: Registry, tamper: Tamper
) -> None:
    """A remote document whose schema (digests all consistent) holds a reference cycle
    that consumes no instance is refused locally as resource_limit_exceeded: the draft
    ("Resource limits") lists reference cycles among the limits; nothing is delegated."""
    document = registry.skills[SKILL].interface.document_copy()
    reference = document["input_schema"]
    schema = reference["resolution"]["schema"]
    schema["$defs"] = {"loop": {"allOf": [{"$ref": "#/$defs/loop"}]}}
    reference["digest"] = digest_of(schema)
    digest = digest_of(document)

    def describe_edit(data: Any) -> Any:
        data["result"] = {"interface_digest": digest, "interface": document}
        return data

    tamper.card = lambda card: _set_binding(card, SKILL, interface_digest=digest)
    tamper.describe = describe_edit
    error = await failure(client.call(base, SKILL, ARGS))
    assert error.code == "resource_limit_exceeded" and not error.remote
    assert "reference_loop at /input_schema/resolution/schema/$defs/loop" in error.message
    assert tamper.describes() == 1 and tamper.domain_calls() == 0


async def test_document_of_another_skill(
    client: SkillClient, base: str, registry: Registry, tamper: Tamper
) -> None:
    other = registry.skills["progressive"]

    def card_edit(card: Any) -> Any:
        return _set_binding(card, SKILL, interface_digest=other.interface_digest)

    def describe_edit(data: Any) -> Any:
        data["result"] = {
            "interface_digest": other.interface_digest,
            "interface": other.interface.document_copy(),
        }
        return data

    tamper.card, tamper.describe = card_edit, describe_edit
    error = await failure(client.call(base, SKILL, ARGS))
    assert error.code == "interface_invalid" and "not of" in error.message


async def test_wrong_interface_version_in_document(
    client: SkillClient, base: str, tamper: Tamper
) -> None:
    def edit(data: Any) -> Any:
        data["result"]["interface"]["interface_version"] = "1.1"
        return data

    tamper.describe = edit
    assert (await failure(client.call(base, SKILL, ARGS))).code == ("unsupported_interface_version")


@pytest.mark.parametrize(
    "edit",
    [
        lambda task: task["artifacts"][1]["parts"][0]["data"]["result"].update(result="maybe"),
        lambda task: task["artifacts"][0]["parts"][0]["data"].pop("observed_at"),
        lambda task: task["artifacts"].pop(1),
        lambda task: task["artifacts"][0].update(name="undeclared-kind"),
    ],
)
async def test_invalid_output_after_completion_is_unusable(
    client: SkillClient, base: str, tamper: Tamper, edit: Any
) -> None:
    await client.describe(base, SKILL)
    tamper.result = edit
    error = await failure(client.call(base, SKILL, ARGS))
    assert error.code == "output_invalid" and not error.remote
    assert error.task_id and error.state == "TASK_STATE_COMPLETED"


async def test_hostile_agent_output_hits_client_limits(base: str, tamper: Tamper) -> None:
    async with SkillClient(limits=Limits(max_instance_bytes=100)) as small:
        error = await failure(small.call(base, SKILL, ARGS))
    assert error.code == "resource_limit_exceeded"


async def test_unreachable_agent_is_a_transport_error(client: SkillClient) -> None:
    error = await failure(client.call("http://127.0.0.1:9", SKILL, ARGS))
    assert error.code == ClientCode.TRANSPORT_ERROR


async def test_headers_pass_through(base: str, tamper: Tamper) -> None:
    seen: list[str] = []
    async with SkillClient(headers={"Authorization": "Bearer t0k3n"}) as authed:
        authed._http.event_hooks["request"].append(
            lambda request: _note(seen, request.headers.get("authorization"))
        )
        await authed.call(base, SKILL, ARGS)
    assert seen and set(seen) == {"Bearer t0k3n"}


async def _note(seen: list[str], value: str | None) -> None:
    seen.append(value or "")


# card edits --------------------------------------------------------------------------------------


def _extension(card: Any) -> Any:
    return next(e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI)


def _params(card: Any, **changes: Any) -> Any:
    _extension(card)["params"].update(changes)
    return card


def _set_binding(card: Any, skill_id: str, **changes: Any) -> Any:
    for entry in _extension(card)["params"]["skills"]:
        if entry["skill_id"] == skill_id:
            entry.update(changes)
    return card


def _drop_extension(card: Any) -> Any:
    card["capabilities"]["extensions"] = []
    return card


def _drop_describe(card: Any) -> Any:
    card["skills"] = [s for s in card["skills"] if s["id"] != "describe_skill"]
    return card


def _duplicate_binding(card: Any) -> Any:
    skills = _extension(card)["params"]["skills"]
    skills.append(dict(skills[0]))
    return card


def _orphan_binding(card: Any) -> Any:
    skills = _extension(card)["params"]["skills"]
    skills.append({**skills[0], "skill_id": "ghost"})
    return card
