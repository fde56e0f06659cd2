"""collect_interface_health: records per interface, progress, cancellation, rejections."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fakes import FakeContext

from skillrack import ConditionError, ErrorCode
from skillrack.testing import assemble
from skillrack_example_vendor import COLLECT_INTERFACE_HEALTH
from skillrack_example_vendor.health import collect_interface_health
from skillrack_example_vendor.inventory import DEVICES, interface_state, interfaces

INTERFACE = assemble(COLLECT_INTERFACE_HEALTH)
handler = COLLECT_INTERFACE_HEALTH.handler


async def run(args: dict[str, Any], context: FakeContext | None = None) -> Any:
    assert INTERFACE.input.validate(args) == ()
    result = await handler(args, context or FakeContext(INTERFACE))
    assert INTERFACE.output.validate(result) == ()
    return result


def test_interface_assembles_with_its_posture() -> None:
    document = INTERFACE.document
    assert document["skill_id"] == "collect_interface_health"
    assert document["authority"] == {
        "default_mode": "observe_only",
        "approval_may_be_required": False,
    }
    assert document["interaction"] == {
        "supported_response_modes": ["sync", "stream", "poll"],
        "cancellable": True,
    }
    assert set(INTERFACE.records) == {"interface-health-observation"}
    assert document["input_schema"]["schema_uri"] == (
        "urn:skillrack:example:interface-health-input:1.0"
    )


@pytest.mark.parametrize("example", COLLECT_INTERFACE_HEALTH.examples)
def test_examples_are_valid_input(example: str) -> None:
    assert INTERFACE.input.validate(json.loads(example)) == ()


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"device_id": ""},
        {"device_id": "edge-router-1", "interval_ms": 1001},
        {"device_id": "edge-router-1", "interval_ms": -1},
        {"device_id": "edge-router-1", "interval_ms": 2.5},
        {"device_id": "edge-router-1", "interfaces": []},
        {"device_id": "edge-router-1", "interfaces": ["eth0", "eth0"]},
        {"device_id": "edge-router-1", "interfaces": "eth0"},
        {"device_id": "edge-router-1", "verbose": True},
    ],
)
def test_invalid_input_is_refused_by_the_schema(args: dict[str, Any]) -> None:
    assert INTERFACE.input.validate(args) != ()


@pytest.mark.parametrize("device", DEVICES)
async def test_one_record_per_interface(device: str) -> None:
    context = FakeContext(INTERFACE)
    result = await run({"device_id": device, "interval_ms": 0}, context)
    names = interfaces(device)
    assert len(context.records) == len(names) == result["interfaces_checked"]
    assert context.kinds() == ["interface-health-observation"] * len(names)
    assert result["observation_refs"] == [f"health-{device}-{name}" for name in names]
    assert result["observation_refs"] == context.publications
    for ref, name in zip(result["observation_refs"], names, strict=True):
        record = context.records[ref][1]
        assert (record["record_id"], record["interface"]) == (ref, name)
        assert record["source"]["system"] and record["producer"]["skill_id"] == INTERFACE.skill_id
    degraded = [
        record["interface"]
        for _, record in context.records.values()
        if record["assessment"]["health"] == "degraded"
    ]
    assert result["degraded"] == degraded


async def test_progress_after_each_record_ends_with_the_result() -> None:
    context = FakeContext(INTERFACE)
    result = await run({"device_id": "core-router-1", "interval_ms": 0}, context)
    assert [p["interfaces_checked"] for p in context.progress] == list(
        range(1, len(interfaces("core-router-1")) + 1)
    )
    assert context.progress[-1] == result
    # Progress is not validated by the host, but each partial has the result's shape.
    assert all(INTERFACE.output.validate(p) == () for p in context.progress)


async def test_assessment_follows_state_and_counters() -> None:
    context = FakeContext(INTERFACE)
    result = await run({"device_id": "core-router-1", "interval_ms": 0}, context)
    records = {r["interface"]: r for _, r in context.records.values()}
    # eth2 is administratively up but lower-layer-down; eth3 is disabled, not degraded.
    assert "oper_down" in records["eth2"]["assessment"]["reasons"]
    assert records["eth3"]["assessment"]["health"] == "admin_down"
    assert "eth2" in result["degraded"] and "eth3" not in result["degraded"]
    # eth0 has an input error ratio above the threshold.
    assert records["eth0"]["assessment"]["reasons"] == ["input_errors"]


async def test_counters_are_exact_64_bit_strings() -> None:
    context = FakeContext(INTERFACE)
    await run({"device_id": "edge-router-1", "interfaces": ["eth1"], "interval_ms": 0}, context)
    [(_, record)] = context.records.values()
    state = interface_state("edge-router-1", "eth1")
    assert record["counters"]["in_octets"] == str(state.counters.in_octets)
    assert int(record["counters"]["in_octets"]) > 2**53  # a double would have rounded it


async def test_selected_interfaces_in_the_given_order() -> None:
    context = FakeContext(INTERFACE)
    result = await run(
        {"device_id": "access-switch-7", "interfaces": ["eth3", "eth0"], "interval_ms": 0}, context
    )
    assert result["interfaces_checked"] == 2
    assert [r["interface"] for _, r in context.records.values()] == ["eth3", "eth0"]


async def test_a_replay_replaces_records_instead_of_repeating_them() -> None:
    context = FakeContext(INTERFACE)
    args = {"device_id": "edge-router-1", "interval_ms": 0}
    await run(args, context)
    await run(args, context)
    assert len(context.records) == len(interfaces("edge-router-1"))


async def test_cancellation_lands_between_interfaces() -> None:
    context = FakeContext(INTERFACE)
    args = {"device_id": "edge-router-1", "interval_ms": 200}
    task = asyncio.create_task(collect_interface_health(args, context))
    await asyncio.wait_for(context.published.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert 1 <= len(context.records) < len(interfaces("edge-router-1"))
    assert len(context.progress) == len(context.records)


async def test_cancelled_context_stops_before_the_next_interface() -> None:
    context = FakeContext(INTERFACE)
    context.cancel()
    with pytest.raises(asyncio.CancelledError):
        await handler({"device_id": "edge-router-1", "interval_ms": 0}, context)
    assert context.records == {}


@pytest.mark.parametrize(
    "args",
    [
        {"device_id": "no-such-device"},
        {"device_id": "edge-router-1", "interfaces": ["eth0", "eth99"]},
        {"device_id": "core-router-1", "interfaces": ["Ethernet0"]},
    ],
)
async def test_unknown_device_or_interface_is_rejected_before_any_record(
    args: dict[str, Any],
) -> None:
    context = FakeContext(INTERFACE)
    assert INTERFACE.input.validate(args) == ()
    with pytest.raises(ConditionError) as info:
        await handler(args, context)
    assert info.value.code is ErrorCode.CONSTRAINT_REJECTED
    assert context.records == {} and context.progress == []
