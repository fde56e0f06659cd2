"""Handlers: domain logic only.  Validation, digests and A2A framing are the host's job."""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Mapping
from typing import Any

from skillrack import ConditionError, ErrorCode, JsonValue, SkillContext

from .inventory import UnknownMetric, observe

_OPERATORS = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}


def evaluate(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return ``(result_without_refs, observation_record_without_id)`` for valid arguments.

    A unit the inventory does not report the metric in is a constraint the
    skill cannot honour; the draft forbids ignoring it silently, so it is
    refused with ``constraint_rejected``.
    """
    condition = arguments["condition"]
    try:
        seen = observe(arguments["resource_id"], condition["metric"])
    except UnknownMetric:
        raise ConditionError(
            ErrorCode.CONSTRAINT_REJECTED,
            f"metric {condition['metric']!r} is not observed by this agent",
        ) from None
    if seen.unit != condition["unit"]:
        raise ConditionError(
            ErrorCode.CONSTRAINT_REJECTED,
            f"metric {seen.metric!r} is reported in {seen.unit!r}, not {condition['unit']!r}",
        )
    met = _OPERATORS[condition["operator"]](seen.value, condition["threshold"])
    result = {
        "result": "condition_met" if met else "condition_not_met",
        "observed_value": seen.value,
        "unit": seen.unit,
    }
    record = {
        "resource_id": seen.resource_id,
        "metric": seen.metric,
        "value": seen.value,
        "unit": seen.unit,
        "observed_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return result, record


async def evaluate_resource_condition(
    arguments: Mapping[str, Any], context: SkillContext
) -> JsonValue:
    """Evaluate the condition; publish the observation as a supporting record; return the result.

    ``context.publish_record(kind, record, artifact_id=...)`` validates the
    record against its declared schema before it is sent and returns the
    Artifact id the result refers to.
    """
    result, record = evaluate(arguments)
    record_id = f"observation-{context.task_id}"
    record["record_id"] = record_id
    artifact_id = await context.publish_record(
        "resource-observation", record, artifact_id=record_id
    )
    return {**result, "supporting_record_refs": [artifact_id]}
