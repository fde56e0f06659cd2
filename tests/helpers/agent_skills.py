"""Skills and policies the server tests compose into one agent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ClassVar

from helpers.builders import draft_skill, simple_skill
from skillrack import (
    Authority,
    ConditionError,
    DomainSchema,
    ErrorCode,
    Interaction,
    JsonValue,
    Operation,
    Skill,
    SkillContext,
    SupportingRecord,
    hookimpl,
)
from skillrack.serve.security.authz import AuthorizationRequest, Decision

OBJECT = {"type": "object"}
WAIT_INPUT = {
    "type": "object",
    "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 30}},
    "additionalProperties": False,
}
#: Set by tests to let a slow handler finish.
RELEASE: dict[str, asyncio.Event] = {}


async def evaluate(arguments: Any, context: SkillContext) -> JsonValue:
    record_id = "observation-7"
    await context.publish_record(
        "resource-observation",
        {
            "record_id": record_id,
            "resource_id": arguments["resource_id"],
            "metric": arguments["condition"]["metric"],
            "value": 42,
            "unit": "percent",
            "observed_at": "2026-08-11T12:00:01Z",
        },
        artifact_id=record_id,
    )
    if arguments["condition"]["unit"] != "percent":
        raise ConditionError(ErrorCode.CONSTRAINT_REJECTED, "only percent is observed")
    met = arguments["condition"]["threshold"] <= 42
    return {
        "result": "condition_met" if met else "condition_not_met",
        "observed_value": 42,
        "unit": "percent",
        "supporting_record_refs": [record_id],
    }


async def slow(arguments: Any, context: SkillContext) -> JsonValue:
    await asyncio.sleep(arguments.get("seconds", 1))
    return {"slept": True}


async def progress(arguments: Any, context: SkillContext) -> JsonValue:
    for step in range(3):
        await context.publish_record("step", {"n": step}, artifact_id=f"step-{step}")
        await context.publish_progress({"done": step + 1})
    return {"done": 3, "complete": True}


async def ask(arguments: Any, context: SkillContext) -> JsonValue:
    window = await context.request_input({"needed": "maintenance_window"})
    second = await context.request_input({"needed": "confirmation"})
    return {"window": window, "confirmation": second}


async def crash(arguments: Any, context: SkillContext) -> JsonValue:
    secret = "hunter" + str(2)  # built at run time: only a leak could put it in a log
    raise RuntimeError(f"secret database password is {secret}")


async def bad_output(arguments: Any, context: SkillContext) -> JsonValue:
    await context.publish_progress({"partial": True})
    return {"unexpected": "shape"}


async def huge_number(arguments: Any, context: SkillContext) -> JsonValue:
    return {"counter": 2**60}


async def bad_record(arguments: Any, context: SkillContext) -> JsonValue:
    await context.publish_record("step", {"n": "not a number"})
    return {}


async def manage(arguments: Any, context: SkillContext) -> JsonValue:
    return {"operation": context.operation}


def _schema(value: Any, name: str) -> DomainSchema:
    return DomainSchema.inline(value, schema_uri=f"urn:test:{name}:1.0", version="1.0")


STEP = SupportingRecord(
    "step",
    _schema(
        {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}, "step"
    ),
)

SKILLS: list[Skill] = [
    draft_skill(handler=evaluate, resources=("/resource_id",), constraints=("/condition",)),
    simple_skill(
        "slow_cancellable",
        input_schema=WAIT_INPUT,
        handler=slow,
        interaction=Interaction(cancellable=True),
    ),
    simple_skill(
        "slow_uncancellable",
        input_schema=WAIT_INPUT,
        handler=slow,
        interaction=Interaction(cancellable=False),
    ),
    simple_skill(
        "progressive",
        handler=progress,
        supporting_records=(STEP,),
        output_schema=_schema(
            {"type": "object", "required": ["done", "complete"]}, "progressive-out"
        ),
    ),
    simple_skill("ask_twice", handler=ask),
    simple_skill("crash", handler=crash),
    simple_skill(
        "bad_output",
        handler=bad_output,
        output_schema=_schema(
            {"type": "object", "required": ["ok"], "additionalProperties": False}, "bad-out"
        ),
    ),
    simple_skill("huge_number", handler=huge_number),
    simple_skill("bad_record", handler=bad_record, supporting_records=(STEP,)),
    simple_skill(
        "with_secret",
        input_schema={
            "type": "object",
            "properties": {"password": {"type": "string", "minLength": 12}},
        },
        sensitive=("/password",),
    ),
    simple_skill(
        "manage",
        input_schema={
            "type": "object",
            "required": ["operation"],
            "properties": {"operation": {"enum": ["read", "delete"]}},
        },
        operations=(Operation("read"), Operation("delete", may_require_approval=True)),
        authority=Authority("execute", approval_may_be_required=True),
        handler=manage,
    ),
]


class TestSkills:
    @hookimpl
    def register_skills(self, register: Callable[[Skill], None]) -> None:
        for skill in SKILLS:
            register(skill)


class AllowAll:
    @hookimpl
    def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
        return Decision.allow()


class DenyForbidden:
    """Denies any call whose resource is 'forbidden', and deleting with 'manage'."""

    seen: ClassVar[list[AuthorizationRequest]] = []

    @hookimpl
    async def authorize_invocation(self, request: AuthorizationRequest) -> Decision | None:
        DenyForbidden.seen.append(request)
        if "forbidden" in request.resources.values():
            return Decision.deny("resource is forbidden (internal policy rule 17)")
        if request.operation == "delete":
            return Decision.deny("no deletes")
        return None
