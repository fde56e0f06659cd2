"""describe_skill answers from the document built at start-up, or interface_unavailable.

The draft: "The response MUST be the previously assembled and validated
document for the selected skill version.  The describe_skill operation MUST
NOT redefine the standard structure or invoke domain logic to construct or
modify the document while processing the request", and "If an advertised
interface cannot currently be returned, the agent MUST report
interface_unavailable" (a failed task: "A remote Task MUST reach
TASK_STATE_FAILED when an accepted operation cannot complete, including when
describe_skill cannot produce a valid advertised interface").

skillrack builds every describe_skill payload once, when the agent is
created (:func:`skillrack.serve.execution.describe.describe_payloads`).  The only way
an advertised interface cannot be returned is that its payload could not be
built then (the document does not convert to an A2A Data Part); that skill
stays advertised and its describe_skill fails with ``interface_unavailable``
while the rest of the agent serves on.  A payload that does not carry the
validated document (read back, its digest is not the advertised one) makes
that skill's describe_skill report ``interface_invalid`` ("If the available
document is malformed, inconsistent with the selected skill, versions, or
digest ... the agent MUST report interface_invalid").  The tests inject
exactly those failures at start-up, over HTTP against a real agent on
127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers.agent_harness import running_agent

from skillrack.client.skill_client import SkillClient
from skillrack.errors import SkillCallError
from skillrack.host.registry import Registry
from skillrack.serve.execution import describe as describe_module
from skillrack.testing.serve import error_of, invoke

SKILL = "evaluate_resource_condition"


def describe(base: str, skill_id: str) -> Any:
    return invoke(base, {"skill": "describe_skill", "arguments": {"skill_id": skill_id}})


def test_describe_skill_served_from_prebuilt_document(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After start-up nothing assembles, verifies or builds a document: describe still answers."""
    with running_agent(registry) as base:

        def forbidden(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("describe_skill assembled a document while answering")

        for target in (
            "skillrack.interface.document.assemble",
            "skillrack.interface.document.build_document",
            "skillrack.interface.document.verify_document",
            "skillrack.host.registry.assemble",
            "skillrack.serve.execution.describe.describe_payloads",
        ):
            monkeypatch.setattr(target, forbidden)
        for _ in range(2):
            task = describe(base, SKILL)
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
            [artifact] = task["artifacts"]
            result = artifact["parts"][0]["data"]["result"]
            registered = registry.skills[SKILL]
            assert result["interface_digest"] == registered.interface_digest
            assert result["interface"] == registered.interface.document


@pytest.fixture(scope="module")
def unavailable(registry: Registry) -> Iterator[str]:
    """An agent whose describe_skill payload of SKILL could not be built at start-up."""
    real = describe_module.data_part

    def failing(value: Any) -> Any:
        result = value.get("result") if isinstance(value, dict) else None
        if isinstance(result, dict) and result.get("interface", {}).get("skill_id") == SKILL:
            raise ValueError("cannot convert")  # injected: the payload cannot be built
        return real(value)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(describe_module, "data_part", failing)
        serving = running_agent(registry)
        base = serving.__enter__()  # the app (and its payloads) are built here
    try:
        yield base
    finally:
        serving.__exit__(None, None, None)


def test_interface_unavailable_when_the_payload_was_not_built(
    unavailable: str, registry: Registry
) -> None:
    task = describe(unavailable, SKILL)
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert error_of(task)["code"] == "interface_unavailable"
    assert "artifacts" not in task
    # the skill is still advertised, the others still described, the agent still serves
    other = describe(unavailable, "progressive")
    assert other["status"]["state"] == "TASK_STATE_COMPLETED"
    unknown = describe(unavailable, "no_such_skill")
    assert error_of(unknown)["code"] == "skill_not_advertised"


async def test_interface_unavailable_reaches_the_client(unavailable: str) -> None:
    async with SkillClient() as client:
        with pytest.raises(SkillCallError) as info:
            await client.describe(unavailable, SKILL)
    error = info.value
    assert error.code == "interface_unavailable" and error.remote
    assert error.state == "TASK_STATE_FAILED"


@pytest.fixture(scope="module")
def inconsistent(registry: Registry) -> Iterator[str]:
    """An agent whose describe_skill payload of SKILL carries a document other than the
    validated one (injected where the payload is built: one description changed)."""
    real = describe_module.data_part

    def altered(value: Any) -> Any:
        result = value.get("result") if isinstance(value, dict) else None
        if isinstance(result, dict) and result.get("interface", {}).get("skill_id") == SKILL:
            interface = dict(result["interface"], description="not what was validated")
            value = {**value, "result": {**result, "interface": interface}}
        return real(value)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(describe_module, "data_part", altered)
        serving = running_agent(registry)
        base = serving.__enter__()
    try:
        yield base
    finally:
        serving.__exit__(None, None, None)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_interface_invalid_when_the_payload_is_not_the_validated_document(
    inconsistent: str, binding: str
) -> None:
    request = {"skill": "describe_skill", "arguments": {"skill_id": SKILL}}
    task = invoke(inconsistent, request, binding)
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert error_of(task)["code"] == "interface_invalid"
    assert "artifacts" not in task  # no unvalidated substitute
    assert "not what was validated" not in str(task)
    other = describe(inconsistent, "progressive")
    assert other["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_interface_invalid_reaches_the_client(inconsistent: str) -> None:
    async with SkillClient() as client:
        with pytest.raises(SkillCallError) as info:
            await client.describe(inconsistent, SKILL)
    assert info.value.code == "interface_invalid" and info.value.remote
