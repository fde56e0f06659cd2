"""Skills that show composition across agents.

``summarize_condition`` accepts exactly the Schema Reference that
``evaluate_resource_condition`` produces (same file, URI and version), so the
output of one can be fed directly into the other under the draft's
exact-match rule.  ``assess_resource`` runs on one agent and delegates both
steps to the peer agent the operator configured as ``observer``: each step is
a new downstream task, and the hop is recorded by the host.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skillrack import JsonValue, SkillContext

OBSERVER = "observer"


async def summarize_condition(arguments: Mapping[str, Any], context: SkillContext) -> JsonValue:
    met = arguments["result"] == "condition_met"
    return {
        "severity": "attention" if met else "ok",
        "headline": (
            f"threshold {'met' if met else 'not met'}: observed {arguments['observed_value']} "
            f"{arguments['unit']}"
        ),
        "observed_value": arguments["observed_value"],
        "unit": arguments["unit"],
        "evidence": list(arguments["supporting_record_refs"]),
    }


async def assess_resource(arguments: Mapping[str, Any], context: SkillContext) -> JsonValue:
    evaluation = await context.delegate(
        OBSERVER,
        "evaluate_resource_condition",
        {
            "resource_id": arguments["resource_id"],
            "condition": {
                "metric": arguments["metric"],
                "operator": "gte",
                "threshold": arguments["threshold"],
                "unit": arguments["unit"],
            },
        },
    )
    summary = await context.compose(
        (OBSERVER, "evaluate_resource_condition"),
        evaluation.result,
        (OBSERVER, "summarize_condition"),
    )
    return {
        "resource_id": arguments["resource_id"],
        "severity": summary.result["severity"],
        "headline": summary.result["headline"],
        "delegations": [
            {
                "peer": OBSERVER,
                "skill_id": "evaluate_resource_condition",
                "task_id": evaluation.task_id,
            },
            {"peer": OBSERVER, "skill_id": "summarize_condition", "task_id": summary.task_id},
        ],
    }
