"""The evaluate_resource_condition handler, against the host's assembled interface."""

from __future__ import annotations

from typing import Any

import pytest

from skillrack import ConditionError, ErrorCode
from skillrack.testing import assemble
from skillrack_example_vendor import EVALUATE_RESOURCE_CONDITION
from skillrack_example_vendor.inventory import observe

DRAFT_DIGEST = "sha256:4dedea3f7ddf19e94d9fd0b30886624f50afb5aadc1b407508a05dd3c40f380d"
INTERFACE = assemble(EVALUATE_RESOURCE_CONDITION)


class RecordingContext:
    """Stands in for the host's handler context: validates and keeps published records."""

    task_id = "task-123"

    def __init__(self) -> None:
        self.records: dict[str, tuple[str, Any]] = {}

    async def publish_record(self, kind: str, record: Any, *, artifact_id: str) -> str:
        assert INTERFACE.records[kind].validate(record) == ()
        self.records[artifact_id] = (kind, record)
        return artifact_id


def arguments(threshold: float = 80, unit: str = "percent", metric: str = "utilization") -> Any:
    return {
        "resource_id": "network-resource-123",
        "condition": {"metric": metric, "operator": "gte", "threshold": threshold, "unit": unit},
    }


def test_interface_digest_is_the_draft_vector() -> None:
    assert INTERFACE.interface_digest == DRAFT_DIGEST


async def test_result_validates_and_references_its_record() -> None:
    context = RecordingContext()
    args = arguments()
    assert INTERFACE.input.validate(args) == ()
    result = await EVALUATE_RESOURCE_CONDITION.handler(args, context)
    assert INTERFACE.output.validate(result) == ()
    [ref] = result["supporting_record_refs"]
    kind, record = context.records[ref]
    assert kind == "resource-observation" and record["record_id"] == ref
    assert record["value"] == result["observed_value"]


@pytest.mark.parametrize("threshold", [0, 101])
async def test_result_follows_the_threshold(threshold: float) -> None:
    result = await EVALUATE_RESOURCE_CONDITION.handler(arguments(threshold), RecordingContext())
    assert result["result"] == ("condition_met" if threshold == 0 else "condition_not_met")


def test_inventory_is_deterministic() -> None:
    assert observe("r1", "cpu") == observe("r1", "cpu")
    assert observe("r1", "cpu").unit == "percent"


@pytest.mark.parametrize("args", [arguments(unit="fraction"), arguments(metric="vibes")])
async def test_unhonourable_constraint_is_rejected(args: Any) -> None:
    with pytest.raises(ConditionError) as info:
        await EVALUATE_RESOURCE_CONDITION.handler(args, RecordingContext())
    assert info.value.code is ErrorCode.CONSTRAINT_REJECTED
