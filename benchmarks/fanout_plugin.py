"""The orchestrator of the fan-out benchmark: one skill that delegates to every peer at once.

Registered with ``[plugins] builtin = ["fanout_plugin"]`` (``fanout.py`` puts
this directory on ``PYTHONPATH``).  ``fan_out`` calls
``evaluate_resource_condition`` at the peers ``a000`` ... (as many as its
``peers`` argument says, named in ``[peers]``) through
``SkillContext.delegate``, all concurrently, and returns how many answered
and how many found the condition met: the host's client does the whole
procedure (card, ``describe_skill``, validation) for each delegation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from skillrack import DomainSchema, JsonValue, Skill, SkillContext, hookimpl

ARGUMENTS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}


def peer_name(index: int) -> str:
    return f"a{index:03d}"


async def fan_out(arguments: Mapping[str, Any], context: SkillContext) -> JsonValue:
    names = [peer_name(i) for i in range(arguments["peers"])]
    results = await asyncio.gather(
        *(context.delegate(name, "evaluate_resource_condition", ARGUMENTS) for name in names)
    )
    met = sum(1 for r in results if r.result.get("result") == "condition_met")
    return {"calls": len(results), "met": met}


FAN_OUT = Skill(
    id="fan_out",
    version="1.0",
    name="Fan out",
    description="Calls evaluate_resource_condition at N peers concurrently (benchmark).",
    input_schema=DomainSchema.inline(
        {
            "type": "object",
            "properties": {"peers": {"type": "integer", "minimum": 1, "maximum": 1000}},
            "required": ["peers"],
            "additionalProperties": False,
        },
        schema_uri="urn:skillrack:benchmark:fan-out-input:1.0",
        version="1.0",
    ),
    output_schema=DomainSchema.inline(
        {
            "type": "object",
            "properties": {"calls": {"type": "integer"}, "met": {"type": "integer"}},
            "required": ["calls", "met"],
        },
        schema_uri="urn:skillrack:benchmark:fan-out-output:1.0",
        version="1.0",
    ),
    handler=fan_out,
)


@hookimpl
def register_skills(register: Callable[[Skill], None]) -> None:
    register(FAN_OUT)
