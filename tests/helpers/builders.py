"""Builders shared by the tests: the draft's test vector, skills and plugins."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from skillrack import (
    Authority,
    DomainSchema,
    Interaction,
    JsonValue,
    Skill,
    SkillContext,
    SupportingRecord,
    hookimpl,
)
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry

DATA = Path(__file__).parent / "data"
VECTOR_DIGEST = "sha256:4dedea3f7ddf19e94d9fd0b30886624f50afb5aadc1b407508a05dd3c40f380d"


def load_json(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


async def _noop_handler(arguments: Any, context: SkillContext) -> JsonValue:
    return {}


def draft_skill(**overrides: Any) -> Skill:
    """The draft example's skill, declared through the vendor API with inline schemas."""
    fields: dict[str, Any] = dict(
        id="evaluate_resource_condition",
        version="1.0",
        name="Evaluate resource condition",
        description="draft example",
        input_schema=DomainSchema.inline(
            load_json("resource-condition-input-1.0.json"),
            schema_uri="urn:example:resource-condition:input:1.0",
            version="1.0",
        ),
        output_schema=DomainSchema.inline(
            load_json("resource-condition-output-1.0.json"),
            schema_uri="urn:example:resource-condition:output:1.0",
            version="1.0",
        ),
        supporting_records=(
            SupportingRecord(
                "resource-observation",
                DomainSchema.inline(
                    load_json("resource-observation-1.0.json"),
                    schema_uri="urn:example:resource-observation:1.0",
                    version="1.0",
                ),
            ),
        ),
        interaction=Interaction(supported_response_modes=("sync", "stream"), cancellable=True),
        authority=Authority(default_mode="observe_only", approval_may_be_required=False),
        handler=_noop_handler,
    )
    fields.update(overrides)
    return Skill(**fields)


def simple_skill(skill_id: str, *, input_schema: Any = None, **overrides: Any) -> Skill:
    """A minimal valid skill whose input schema can be swapped for a hostile one."""
    schema = {"type": "object"} if input_schema is None else input_schema
    fields: dict[str, Any] = dict(
        id=skill_id,
        version="1.0",
        name=skill_id,
        description="test skill",
        input_schema=DomainSchema.inline(
            schema, schema_uri=f"urn:test:{skill_id}:in", version="1.0"
        ),
        output_schema=DomainSchema.inline(
            {"type": "object"}, schema_uri=f"urn:test:{skill_id}:out", version="1.0"
        ),
        handler=_noop_handler,
    )
    fields.update(overrides)
    return Skill(**fields)


class SkillsPlugin:
    """A plugin object registering the given skills, as a vendor module would."""

    def __init__(self, *skills: object) -> None:
        self.skills = skills

    @hookimpl
    def register_skills(self, register: Callable[[Skill], None]) -> None:
        for skill in self.skills:
            register(skill)  # type: ignore[arg-type]


def registry_of(plugins: Iterable[tuple[str, object]]) -> Registry:
    """A registry built from in-process plugins only (no installed entry points)."""
    return build_registry(load_plugins(use_entry_points=False, extra=plugins))
