"""Example vendor skills for skillrack.

This package is the model a vendor copies: schemas shipped as package data
(``schemas/``), each published under a stable ``schema_uri`` and version; a
``register_skills`` hook found through the ``skillrack`` entry point in
``pyproject.toml``; async handlers.  No digest and no Skill Interface Document
are written by hand: the host assembles and digests them.

``evaluate_resource_condition`` reproduces the draft's end-to-end example
exactly, so its interface digest is the draft's test vector.  The other skills
work on the simulated inventory's interfaces and show one posture each:

* ``collect_interface_health`` (observe_only): streams one supporting record
  per interface with progress in between, and can be cancelled mid-run;
* ``propose_interface_configuration`` (recommend_only): asks for a missing
  maintenance window (input-required) and returns a structured change
  proposal, not a CLI string, with the baseline it rests on as a record;
* ``manage_interface`` (execute): the draft's alternative multi-operation
  design, a read and a side effect selected by a required ``operation``.

Beside them, ``help`` is a base-A2A skill (``BaseSkill``, :mod:`.help`): a plain
text help desk that lists the skills above and how to call them, for callers
that speak A2A without the schema-interface extension.
"""

from __future__ import annotations

from collections.abc import Callable

from skillrack import (
    Authority,
    BaseSkill,
    DomainSchema,
    Interaction,
    Operation,
    Skill,
    SupportingRecord,
    hookimpl,
)

from .delegation import assess_resource, summarize_condition
from .handlers import evaluate_resource_condition
from .health import collect_interface_health
from .help import help_skill
from .manage import known_interface, manage_interface
from .proposals import propose_interface_configuration

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


def _example(name: str) -> DomainSchema:
    """``schemas/<name>-1.0.json``, published as ``urn:skillrack:example:<name>:1.0``."""
    return _schema(f"{name}-1.0.json", f"urn:skillrack:example:{name}:1.0", "1.0")


COLLECT_INTERFACE_HEALTH = Skill(
    id="collect_interface_health",
    version="1.0",
    name="Collect interface health",
    description=(
        "Observes the state and statistics of a device's interfaces, publishing one "
        "interface-health-observation record per interface as it goes, and returns which "
        "interfaces are degraded. Reads only."
    ),
    tags=("assurance", "monitoring", "interfaces"),
    examples=(
        '{"device_id": "edge-router-1"}',
        '{"device_id": "core-router-1", "interfaces": ["eth0", "eth2"], "interval_ms": 0}',
    ),
    input_schema=_example("interface-health-input"),
    output_schema=_example("interface-health-output"),
    supporting_records=(
        SupportingRecord("interface-health-observation", _example("interface-health-observation")),
    ),
    interaction=Interaction(supported_response_modes=("sync", "stream", "poll"), cancellable=True),
    authority=Authority(default_mode="observe_only", approval_may_be_required=False),
    resources=("/device_id", "/interfaces"),
    handler=collect_interface_health,
)

PROPOSE_INTERFACE_CONFIGURATION = Skill(
    id="propose_interface_configuration",
    version="1.0",
    name="Propose interface configuration",
    description=(
        "Turns a desired interface configuration into a configuration-change proposal for the "
        "candidate datastore: typed YANG leaf edits with preconditions, rollback, maintenance "
        "window and risk. Asks for the maintenance window when none is given. Applies nothing."
    ),
    tags=("configuration", "change-management", "interfaces"),
    examples=(
        '{"device_id": "edge-router-1", "interface": "eth2", "desired": {"mtu": 9000}, '
        '"maintenance_window": {"start": "2030-01-15T01:00:00Z", "end": "2030-01-15T03:00:00Z"}}',
        '{"device_id": "access-switch-7", "interface": "eth1", '
        '"desired": {"admin_state": "down", "description": "decommissioned"}}',
    ),
    input_schema=_example("interface-configuration-intent"),
    output_schema=_example("interface-configuration-proposal"),
    supporting_records=(
        SupportingRecord("configuration-baseline", _example("configuration-baseline")),
    ),
    interaction=Interaction(supported_response_modes=("sync", "stream", "poll"), cancellable=False),
    authority=Authority(default_mode="recommend_only", approval_may_be_required=True),
    resources=("/device_id", "/interface"),
    constraints=("/maintenance_window",),
    handler=propose_interface_configuration,
)

MANAGE_INTERFACE = Skill(
    id="manage_interface",
    version="1.0",
    name="Manage interface",
    description=(
        "Multi-operation skill on one interface: get_status reads its state, MTU and counters "
        "(no side effect); reset_counters clears its statistics counters (side effect, may "
        "require approval, needs a reason). Prefer separate skills for new designs."
    ),
    tags=("operations", "interfaces", "counters"),
    examples=(
        '{"operation": "get_status", "device_id": "edge-router-1", "interface": "eth0"}',
        '{"operation": "reset_counters", "device_id": "edge-router-1", "interface": "eth1", '
        '"reason": "baseline after optics replacement"}',
    ),
    input_schema=_example("manage-interface-input"),
    output_schema=_example("manage-interface-output"),
    interaction=Interaction(supported_response_modes=("sync", "stream", "poll"), cancellable=False),
    authority=Authority(default_mode="execute", approval_may_be_required=True),
    operations=(
        Operation("get_status", "Read the interface's state, MTU and counters; no side effect."),
        Operation(
            "reset_counters",
            "Clear the interface's statistics counters; side effect, audited with a reason.",
            may_require_approval=True,
        ),
    ),
    resources=("/device_id", "/interface"),
    handler=manage_interface,
    precheck=known_interface,
)


SUMMARIZE_CONDITION = Skill(
    id="summarize_condition",
    version="1.0",
    name="Summarize a condition evaluation",
    description=(
        "Turns the result of evaluate_resource_condition into a severity and a headline. "
        "Its input is exactly evaluate_resource_condition's output schema, so the two "
        "compose directly."
    ),
    tags=("assurance", "composition"),
    input_schema=_schema(
        "resource-condition-output-1.0.json", "urn:example:resource-condition:output:1.0", "1.0"
    ),
    output_schema=_schema(
        "condition-summary-1.0.json", "urn:skillrack:example:condition-summary:1.0", "1.0"
    ),
    interaction=Interaction(supported_response_modes=("sync", "stream", "poll")),
    authority=Authority(default_mode="observe_only"),
    handler=summarize_condition,
)

ASSESS_RESOURCE = Skill(
    id="assess_resource",
    version="1.0",
    name="Assess a resource through the observer agent",
    description=(
        "Delegates the evaluation to the peer agent configured as 'observer' "
        "([peers] observer = URL), then composes its result into the observer's "
        "summarize_condition. Each step is a new downstream task."
    ),
    tags=("assurance", "delegation"),
    examples=(
        '{"resource_id": "network-resource-123", "metric": "utilization", '
        '"threshold": 80, "unit": "percent"}',
    ),
    input_schema=_schema(
        "resource-assessment-input-1.0.json",
        "urn:skillrack:example:resource-assessment-input:1.0",
        "1.0",
    ),
    output_schema=_schema(
        "resource-assessment-output-1.0.json",
        "urn:skillrack:example:resource-assessment-output:1.0",
        "1.0",
    ),
    interaction=Interaction(supported_response_modes=("sync", "stream", "poll")),
    authority=Authority(default_mode="observe_only"),
    resources=("/resource_id",),
    handler=assess_resource,
)


#: Every skill this package declares, in registration order.
SKILLS: tuple[Skill, ...] = (
    EVALUATE_RESOURCE_CONDITION,
    COLLECT_INTERFACE_HEALTH,
    PROPOSE_INTERFACE_CONFIGURATION,
    MANAGE_INTERFACE,
    SUMMARIZE_CONDITION,
    ASSESS_RESOURCE,
)


#: The base-A2A help desk: lists :data:`SKILLS` and how to call them.
HELP: BaseSkill = help_skill(SKILLS)


@hookimpl
def register_skills(register: Callable[[Skill | BaseSkill], None]) -> None:
    for skill in SKILLS:
        register(skill)
    register(HELP)
