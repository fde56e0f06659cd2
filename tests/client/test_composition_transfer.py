"""Composition validates the transferred instance before delegating (issue 14, item 6).

The draft: "The orchestrating system or delegating agent MUST validate the
transferred instance mechanically against the downstream input schema before
delegation", and "Direct composition MUST require the Schema Reference for
the transferred upstream output payload and the Schema Reference accepted for
the corresponding downstream input to have the same schema_uri, version,
dialect, and digest".  A real agent on 127.0.0.1 counts what reaches it: a
refused composition sends no domain request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.tamper import Tamper

from skillrack import DomainSchema
from skillrack.client.composition import HopLog, check_eligibility, compose, delegate
from skillrack.client.skill_client import SkillClient
from skillrack.errors import ClientCode, SkillCallError
from skillrack.host.registry import Registry
from skillrack.interface.document import VerifiedInterface
from skillrack.interface.inline import compile_inline_schema
from skillrack.interface.schemaref import SchemaReference

MEASUREMENT = DomainSchema.inline(
    {
        "type": "object",
        "required": ["metric", "value"],
        "properties": {"metric": {"type": "string"}, "value": {"type": "number", "minimum": 0}},
        "additionalProperties": False,
    },
    schema_uri="urn:test:measurement:1.0",
    version="1.0",
)


async def _measure(arguments: Any, context: Any) -> Any:
    return {"metric": "utilization", "value": 42}


async def _judge(arguments: Any, context: Any) -> Any:
    return {"high": arguments["value"] > 80}


SKILLS = SkillsPlugin(
    simple_skill("measure", output_schema=MEASUREMENT, handler=_measure),
    simple_skill("judge", input_schema=MEASUREMENT.source, handler=_judge),  # other reference
    # the downstream input under the very Schema Reference of the upstream output
    replace(simple_skill("judge_measurement", handler=_judge), input_schema=MEASUREMENT),
)


@pytest.fixture(scope="module")
def registry() -> Registry:
    """Served behind a Tamper by the shared ``agent`` fixture (tests/conftest.py)."""
    return registry_of([("skills", SKILLS), ("allow", AllowAll())])


@pytest.fixture
async def client() -> AsyncIterator[SkillClient]:
    async with SkillClient() as c:
        yield c


async def _compose(
    client: SkillClient, base: str, hops: HopLog, instance: Any, **kwargs: Any
) -> Any:
    return await compose(
        client,
        hops,
        upstream_agent=base,
        upstream_skill="measure",
        upstream_task_id="upstream-task-1",
        instance=instance,
        downstream_agent=base,
        downstream_skill=kwargs.pop("downstream_skill", "judge_measurement"),
        **kwargs,
    )


@pytest.mark.parametrize(
    "instance, pointer",
    [
        ({"metric": "utilization", "value": -1}, "/value"),
        ({"metric": "utilization"}, "/value"),  # a required member missing
        ({"metric": "utilization", "value": 1, "unit": "percent"}, "/unit"),
        ("not an object", ""),
    ],
)
async def test_composition_validates_transferred_instance(
    agent: tuple[str, Tamper], tamper: Tamper, client: SkillClient, instance: Any, pointer: str
) -> None:
    hops = HopLog()
    with pytest.raises(SkillCallError) as info:
        await _compose(client, agent[0], hops, instance)
    error = info.value
    assert error.code == "input_invalid" and not error.remote
    assert pointer in [d["instance_path"] for d in error.details]
    assert tamper.domain_calls() == 0 and hops.recent() == []  # nothing was delegated


async def test_composition_transfers_a_valid_instance(
    agent: tuple[str, Tamper], tamper: Tamper, client: SkillClient
) -> None:
    hops = HopLog()
    result = await _compose(client, agent[0], hops, {"metric": "utilization", "value": 90})
    assert result.state == "TASK_STATE_COMPLETED" and result.result == {"high": True}
    assert tamper.domain_calls() == 1
    [hop] = hops.recent()
    assert hop.downstream_task_id == result.task_id != hop.upstream_task_id


async def test_composition_domain_check_rejects_before_delegation(
    agent: tuple[str, Tamper], tamper: Tamper, client: SkillClient
) -> None:
    def fresh_enough(instance: Any) -> str | None:
        return "the measurement is older than the request allows"

    with pytest.raises(SkillCallError) as info:
        await _compose(
            client,
            agent[0],
            HopLog(),
            {"metric": "utilization", "value": 90},
            domain_checks={"urn:test:measurement:1.0": fresh_enough},
        )
    assert info.value.code == "constraint_rejected" and tamper.domain_calls() == 0


async def test_composition_needs_the_same_schema_reference(
    agent: tuple[str, Tamper], tamper: Tamper, client: SkillClient
) -> None:
    """The same schema under another Schema Reference is not eligible, even for a valid instance."""
    with pytest.raises(SkillCallError) as info:
        await _compose(
            client,
            agent[0],
            HopLog(),
            {"metric": "utilization", "value": 90},
            downstream_skill="judge",
        )
    assert info.value.code == ClientCode.COMPOSITION_INELIGIBLE and tamper.domain_calls() == 0


def _interface(skill_id: str, slot: str, reference: SchemaReference) -> VerifiedInterface:
    """A verified interface whose ``slot`` (input or output) is ``reference``."""
    compiled = compile_inline_schema(reference.schema, DIALECT)
    return VerifiedInterface(
        document={"skill_id": skill_id, "skill_version": "1.0"},
        interface_digest="",
        input=compiled,
        output=compiled,
        records={},
        references={slot: reference},
    )


DIALECT = "https://json-schema.org/draft/2020-12/schema"
_OUTPUT = SchemaReference.build(
    MEASUREMENT.source, schema_uri=MEASUREMENT.schema_uri, version="1.0", dialect=DIALECT
)


@pytest.mark.parametrize("member", ["schema_uri", "version", "dialect", "digest", None])
def test_composition_compares_every_member_of_the_reference(member: str | None) -> None:
    """Each of schema_uri, version, dialect and digest alone makes composition ineligible.

    The downstream input differs from the upstream output in ``member`` only
    (``None``: in nothing, and composition is eligible), so leaving any one
    member out of the comparison lets its case through (R-112, R-114).
    """
    given = {
        "schema_uri": replace(_OUTPUT, schema_uri="urn:test:measurement:2.0"),
        "version": replace(_OUTPUT, version="1.1"),
        "dialect": replace(_OUTPUT, dialect="https://json-schema.org/draft/2019-09/schema"),
        "digest": SchemaReference.build(
            {**MEASUREMENT.source, "additionalProperties": True},
            schema_uri=_OUTPUT.schema_uri,
            version=_OUTPUT.version,
            dialect=DIALECT,
        ),
        None: replace(_OUTPUT, schema=dict(_OUTPUT.schema)),
    }[member]
    assert _differing(_OUTPUT, given) == ([member] if member else [])
    upstream = _interface("measure", "output", _OUTPUT)
    downstream = _interface("judge", "input", given)
    if member is None:
        check_eligibility(upstream, downstream)
        return
    with pytest.raises(SkillCallError) as info:
        check_eligibility(upstream, downstream)
    assert info.value.code == ClientCode.COMPOSITION_INELIGIBLE


def _differing(a: SchemaReference, b: SchemaReference) -> list[str]:
    members = ("schema_uri", "version", "dialect", "digest")
    return [m for m in members if getattr(a, m) != getattr(b, m)]


class _SlowPeer(SkillClient):
    """A client whose describe answers at once and whose call outlasts the deadline."""

    async def describe(self, url: str, skill_id: str, *, apply_trust: bool = True) -> Any:
        async with self._call_scope(url):  # joins the delegation's call, as describe does
            return type("Interface", (), {"skill_version": "1.0", "interface_digest": "sha256:x"})

    async def call(self, url: str, skill_id: str, arguments: Any, **options: Any) -> Any:
        async with self._call_scope(url):
            await asyncio.sleep(5)  # sent, the agent at work, the deadline runs out


async def test_a_delegation_past_its_deadline_is_recorded_as_such() -> None:
    """The hop says the call ran out of time, not that nothing was sent."""
    async with _SlowPeer(timeout=0.2) as client:
        hops = HopLog()
        with pytest.raises(SkillCallError) as refused:
            await delegate(
                client, hops, upstream_agent="http://127.0.0.1:1", upstream_task_id="t-up",
                downstream_agent="http://127.0.0.1:9", skill_id="probe", arguments={},
            )  # fmt: skip
    assert refused.value.code == "resource_limit_exceeded"
    (hop,) = hops.recent()
    assert hop.terminal_state == "local:resource_limit_exceeded"
