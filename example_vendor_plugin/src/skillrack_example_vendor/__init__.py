"""Example vendor skills for skillrack.

This package is the model a vendor copies: schemas shipped as package data
(``schemas/``), each published under a stable ``schema_uri`` and version; a
``register_skills`` hook found through the ``skillrack`` entry point in
``pyproject.toml``; async handlers.  No digest and no Skill Interface Document
are written by hand: the host assembles and digests them.

``evaluate_resource_condition`` reproduces the draft's end-to-end example
exactly, so its interface digest is the draft's test vector.
"""

from __future__ import annotations

from collections.abc import Callable

from skillrack import Authority, DomainSchema, Interaction, Skill, SupportingRecord, hookimpl

from .handlers import evaluate_resource_condition

PACKAGE = __name__


def _schema(file: str, schema_uri: str, version: str) -> DomainSchema:
    return DomainSchema.from_package(
        PACKAGE, f"schemas/{file}", schema_uri=schema_uri, version=version
    )


EVALUATE_RESOURCE_CONDITION = Skill(
    id="evaluate_resource_condition",
    version="1.0",
    name="Evaluate resource condition",
    description=(
        "Evaluates whether an observed resource metric satisfies a caller-supplied "
        "threshold and returns the observation as a supporting record."
    ),
    tags=("assurance", "monitoring", "threshold"),
    examples=(
        '{"resource_id": "network-resource-123", "condition": {"metric": "utilization", '
        '"operator": "gte", "threshold": 80, "unit": "percent"}}',
    ),
    input_schema=_schema(
        "resource-condition-input-1.0.json", "urn:example:resource-condition:input:1.0", "1.0"
    ),
    output_schema=_schema(
        "resource-condition-output-1.0.json", "urn:example:resource-condition:output:1.0", "1.0"
    ),
    supporting_records=(
        SupportingRecord(
            "resource-observation",
            _schema("resource-observation-1.0.json", "urn:example:resource-observation:1.0", "1.0"),
        ),
    ),
    interaction=Interaction(supported_response_modes=("sync", "stream"), cancellable=True),
    authority=Authority(default_mode="observe_only", approval_may_be_required=False),
    resources=("/resource_id",),
    constraints=("/condition",),
    handler=evaluate_resource_condition,
)


@hookimpl
def register_skills(register: Callable[[Skill], None]) -> None:
    register(EVALUATE_RESOURCE_CONDITION)
