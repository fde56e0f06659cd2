"""manage_interface: the multi-operation design, its assembly rules and both operations."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import pytest
from fakes import FakeContext

from skillrack import Authority, ConditionError, DomainSchema, ErrorCode, Operation
from skillrack.testing import InterfaceError, assemble
from skillrack_example_vendor import MANAGE_INTERFACE
from skillrack_example_vendor.inventory import interface_state

INTERFACE = assemble(MANAGE_INTERFACE)
handler = MANAGE_INTERFACE.handler


def args(operation: str, **extra: Any) -> dict[str, Any]:
    return {"operation": operation, "device_id": "edge-router-1", "interface": "eth1", **extra}


async def run(arguments: dict[str, Any]) -> Any:
    assert INTERFACE.input.validate(arguments) == ()
    result = await handler(arguments, FakeContext(INTERFACE, operation=arguments["operation"]))
    assert INTERFACE.output.validate(result) == ()
    return result


def test_multi_operation_interface_assembles() -> None:
    document = INTERFACE.document
    assert document["authority"] == {"default_mode": "execute", "approval_may_be_required": True}
    assert document["supporting_record_schemas"] == []
    schema = document["input_schema"]["resolution"]["schema"]
    assert "operation" in schema["required"]
    selector = schema["properties"]["operation"]["oneOf"]
    assert [alt["const"] for alt in selector] == [op.name for op in MANAGE_INTERFACE.operations]
    assert all(alt["description"] for alt in selector)  # each effect is described


def test_selector_that_does_not_match_the_operations_is_refused() -> None:
    extra = dataclasses.replace(
        MANAGE_INTERFACE, operations=(*MANAGE_INTERFACE.operations, Operation("shutdown"))
    )
    with pytest.raises(InterfaceError) as info:
        assemble(extra)
    assert info.value.rule == "operation_selector"


def test_operation_needing_approval_requires_the_flag() -> None:
    unflagged = dataclasses.replace(MANAGE_INTERFACE, authority=Authority(default_mode="execute"))
    with pytest.raises(InterfaceError) as info:
        assemble(unflagged)
    assert info.value.rule == "approval_may_be_required"


def test_selector_must_be_required() -> None:
    schema = json.loads(json.dumps(INTERFACE.document["input_schema"]["resolution"]["schema"]))
    schema["required"].remove("operation")
    optional = dataclasses.replace(
        MANAGE_INTERFACE,
        input_schema=DomainSchema.inline(
            schema, schema_uri="urn:skillrack:example:test:1.0", version="1.0"
        ),
    )
    with pytest.raises(InterfaceError) as info:
        assemble(optional)
    assert info.value.rule == "operation_selector"


@pytest.mark.parametrize("example", MANAGE_INTERFACE.examples)
def test_examples_are_valid_input(example: str) -> None:
    assert INTERFACE.input.validate(json.loads(example)) == ()


def test_reset_counters_without_reason_fails_input_validation() -> None:
    details = INTERFACE.input.validate(args("reset_counters"))
    assert [d.instance_path for d in details] == ["/reason"]


@pytest.mark.parametrize(
    "arguments",
    [
        args("reset_counters", reason=""),
        args("get_status", reason="curious"),
        args("shutdown"),
        {"device_id": "edge-router-1", "interface": "eth1"},
        args("get_status", interface=""),
        {"operation": "get_status", "device_id": "edge-router-1"},
        args("get_status", force=True),
    ],
)
def test_invalid_input_is_refused_by_the_schema(arguments: dict[str, Any]) -> None:
    assert INTERFACE.input.validate(arguments) != ()


async def test_get_status_reports_state_and_counters() -> None:
    result = await run(args("get_status"))
    state = interface_state("edge-router-1", "eth1")
    assert (result["admin_status"], result["oper_status"]) == (
        state.admin_status,
        state.oper_status,
    )
    assert result["counters"]["in_errors"] == str(state.counters.in_errors)
    assert result["speed_bps"] == str(state.speed_bps)


async def test_get_status_is_deterministic_apart_from_the_timestamp() -> None:
    first, second = await run(args("get_status")), await run(args("get_status"))
    first.pop("observed_at"), second.pop("observed_at")
    assert first == second


async def test_reset_counters_reports_the_reset() -> None:
    before = dt.datetime.now(dt.UTC)
    result = await run(args("reset_counters", reason="baseline after optics swap"))
    assert {k: v for k, v in result.items() if k != "reset_at"} == {
        "operation": "reset_counters",
        "device_id": "edge-router-1",
        "interface": "eth1",
        "counters_reset": True,
    }
    reset_at = dt.datetime.fromisoformat(result["reset_at"])
    assert before - dt.timedelta(seconds=1) <= reset_at <= dt.datetime.now(dt.UTC)


def test_output_shapes_are_selected_by_operation() -> None:
    mixed = {
        "operation": "get_status",
        "device_id": "edge-router-1",
        "interface": "eth1",
        "counters_reset": True,
        "reset_at": "2099-01-01T00:00:00Z",
    }
    assert INTERFACE.output.validate(mixed) != ()


@pytest.mark.parametrize("operation", ["get_status", "reset_counters"])
@pytest.mark.parametrize(
    ("device", "interface"), [("no-such-device", "eth0"), ("edge-router-1", "eth9")]
)
async def test_unknown_resource_is_rejected(operation: str, device: str, interface: str) -> None:
    extra = {"reason": "test"} if operation == "reset_counters" else {}
    arguments = {"operation": operation, "device_id": device, "interface": interface, **extra}
    assert INTERFACE.input.validate(arguments) == ()
    with pytest.raises(ConditionError) as info:
        await handler(arguments, FakeContext(INTERFACE, operation=operation))
    assert info.value.code is ErrorCode.CONSTRAINT_REJECTED


@pytest.mark.parametrize(
    ("device", "interface", "pointer"),
    [("no-such-device", "eth0", "/device_id"), ("edge-router-1", "eth9", "/interface")],
)
async def test_the_precheck_refuses_an_unknown_resource_with_its_pointer(
    device: str, interface: str, pointer: str
) -> None:
    """The host runs it before the approval gate, so nobody approves a call that cannot work."""
    assert MANAGE_INTERFACE.precheck is not None
    arguments = args("reset_counters", device_id=device, interface=interface, reason="test")
    with pytest.raises(ConditionError) as info:
        await MANAGE_INTERFACE.precheck(arguments, None)
    assert info.value.code is ErrorCode.CONSTRAINT_REJECTED
    assert [d.instance_path for d in info.value.details] == [pointer]
    await MANAGE_INTERFACE.precheck(args("reset_counters", reason="test"), None)
