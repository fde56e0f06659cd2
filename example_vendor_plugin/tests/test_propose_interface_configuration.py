"""propose_interface_configuration: structured proposals, baseline record, input-required."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from fakes import FakeContext, InputRequired

from skillrack import ConditionError, ErrorCode
from skillrack.testing import assemble, compile_inline_schema
from skillrack_example_vendor import PROPOSE_INTERFACE_CONFIGURATION
from skillrack_example_vendor.inventory import interface_config

INTERFACE = assemble(PROPOSE_INTERFACE_CONFIGURATION)
handler = PROPOSE_INTERFACE_CONFIGURATION.handler
WINDOW = {"start": "2099-01-15T01:00:00Z", "end": "2099-01-15T03:00:00Z"}
PREFIX = "/ietf-interfaces:interfaces/interface[name='{}']/"


def args(
    desired: dict[str, Any],
    *,
    device: str = "edge-router-1",
    interface: str = "eth2",
    window: dict[str, Any] | None = WINDOW,
) -> dict[str, Any]:
    out: dict[str, Any] = {"device_id": device, "interface": interface, "desired": desired}
    if window is not None:
        out["maintenance_window"] = window
    return out


async def run(arguments: dict[str, Any], context: FakeContext | None = None) -> Any:
    assert INTERFACE.input.validate(arguments) == ()
    context = context or FakeContext(INTERFACE)
    result = await handler(arguments, context)
    assert INTERFACE.output.validate(result) == ()
    assert context.records[result["baseline_ref"]][0] == "configuration-baseline"
    return result


def apply(values: dict[str, Any], changes: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply changes to {path: value} the way a datastore would, checking current values."""
    values = dict(values)
    for change in changes:
        assert values.get(change["path"]) == change["current_value"]
        if change["operation"] == "delete":
            values[change["path"]] = None
        else:
            values[change["path"]] = change["proposed_value"]
    return values


def test_interface_assembles_with_its_posture() -> None:
    document = INTERFACE.document
    assert document["authority"] == {
        "default_mode": "recommend_only",
        "approval_may_be_required": True,
    }
    assert document["interaction"]["cancellable"] is False
    assert set(INTERFACE.records) == {"configuration-baseline"}


@pytest.mark.parametrize("example", PROPOSE_INTERFACE_CONFIGURATION.examples)
def test_examples_are_valid_input(example: str) -> None:
    assert INTERFACE.input.validate(json.loads(example)) == ()


@pytest.mark.parametrize(
    "arguments",
    [
        args({}),
        args({"mtu": 1279}),
        args({"mtu": 9217}),
        args({"mtu": "9000"}),
        args({"admin_state": "testing"}),
        args({"description": ""}),
        args({"speed": 10}),
        args({"mtu": 9000}, window={"start": "tomorrow", "end": "2099-01-15T03:00:00Z"}),
        args({"mtu": 9000}, window={"start": "2099-01-15T01:00:00Z"}),
        {"device_id": "edge-router-1", "desired": {"mtu": 9000}},
        {**args({"mtu": 9000}), "commit": True},
    ],
)
def test_invalid_input_is_refused_by_the_schema(arguments: dict[str, Any]) -> None:
    assert INTERFACE.input.validate(arguments) != ()


async def test_mtu_proposal_is_typed_leaf_edits_with_inverse_rollback() -> None:
    context = FakeContext(INTERFACE)
    result = await run(args({"mtu": 9000}), context)
    assert result["target_datastore"] == "candidate"
    assert [(c["path"], c["operation"], c["current_value"], c["proposed_value"]) for c in
            result["changes"]] == [
        (PREFIX.format("eth2") + "ietf-ip:ipv4/mtu", "merge", 1500, 9000),
        (PREFIX.format("eth2") + "ietf-ip:ipv6/mtu", "merge", 1500, 9000),
    ]  # fmt: skip
    assert (result["risk"], result["risk_factors"]) == ("medium", ["mtu_change"])
    assert result["requires_approval"] is True
    assert result["maintenance_window"] == {
        "start": "2099-01-15T01:00:00.000Z",
        "end": "2099-01-15T03:00:00.000Z",
    }

    # The baseline record holds the values the preconditions pin.
    [(kind, baseline)] = context.records.values()
    assert kind == "configuration-baseline" and baseline["record_id"] == result["baseline_ref"]
    values = {leaf["path"]: leaf["value"] for leaf in baseline["leaves"]}
    for precondition in result["preconditions"]:
        assert values[precondition["path"]] == precondition["expected_value"]

    # Semantics, not just structure: the changes reach the intent, the rollback the baseline.
    applied = apply(values, result["changes"])
    assert applied[PREFIX.format("eth2") + "ietf-ip:ipv4/mtu"] == 9000
    assert apply(applied, result["rollback"]["changes"]) == values


async def test_description_on_an_unconfigured_leaf_rolls_back_with_delete() -> None:
    assert interface_config("edge-router-1", "eth0").description is None
    result = await run(args({"description": "uplink to core"}, interface="eth0"))
    [change] = result["changes"]
    assert (change["operation"], change["current_value"]) == ("merge", None)
    [undo] = result["rollback"]["changes"]
    assert undo == {
        "path": PREFIX.format("eth0") + "description",
        "leaf": "description",
        "operation": "delete",
        "current_value": "uplink to core",
    }
    assert (result["risk"], result["risk_factors"]) == ("low", ["documentation_only"])


async def test_disabling_a_live_interface_is_high_risk() -> None:
    result = await run(args({"admin_state": "down"}, interface="eth1"))
    [change] = result["changes"]
    assert change["path"].endswith("/enabled") and change["proposed_value"] is False
    assert (result["risk"], result["risk_factors"]) == ("high", ["traffic_interruption"])


async def test_enabling_after_setting_the_mtu() -> None:
    # core-router-1 eth3 is disabled with MTU 9000.
    result = await run(
        args({"admin_state": "up", "mtu": 1500}, device="core-router-1", interface="eth3")
    )
    assert [c["leaf"] for c in result["changes"]] == ["ipv4-mtu", "ipv6-mtu", "enabled"]
    assert [c["leaf"] for c in result["rollback"]["changes"]] == ["enabled", "ipv6-mtu", "ipv4-mtu"]
    assert result["risk"] == "medium"


async def test_desired_state_already_in_place_proposes_nothing() -> None:
    result = await run(args({"mtu": 1500, "admin_state": "up"}))
    assert result["changes"] == result["preconditions"] == result["rollback"]["changes"] == []
    assert (result["risk"], result["requires_approval"]) == ("low", False)


async def test_proposal_id_is_stable_for_the_same_proposal() -> None:
    first = await run(args({"mtu": 9000}))
    second = await run(args({"mtu": 9000}))
    other = await run(args({"mtu": 9216}))
    assert first["proposal_id"] == second["proposal_id"] != other["proposal_id"]


async def test_missing_window_asks_for_input_before_any_side_effect() -> None:
    context = FakeContext(INTERFACE)
    with pytest.raises(InputRequired) as info:
        await handler(args({"mtu": 9000}, window=None), context)
    request = info.value.request
    assert request["needed"] == "maintenance_window" and request["message"]
    assert context.records == {}
    # The request carries a usable schema for the answer.
    answer_schema = compile_inline_schema(
        request["schema"], "https://json-schema.org/draft/2020-12/schema"
    )
    assert answer_schema.validate(WINDOW) == ()
    assert answer_schema.validate({"start": "now"}) != ()


async def test_replay_with_the_answer_completes() -> None:
    answer = {"start": "2099-03-01T22:00:00+01:00", "end": "2099-03-02T02:00:00+01:00"}
    context = FakeContext(INTERFACE, answers=[answer])
    result = await run(args({"mtu": 9000}, window=None), context)
    assert result["maintenance_window"] == {
        "start": "2099-03-01T21:00:00.000Z",
        "end": "2099-03-02T01:00:00.000Z",
    }
    assert len(context.requests) == 1 and len(context.records) == 1


@pytest.mark.parametrize(
    "answer", [{"maintenance_window": WINDOW}, json.dumps(WINDOW)], ids=["wrapped", "text"]
)
async def test_answer_forms_accepted(answer: Any) -> None:
    result = await run(args({"mtu": 9000}, window=None), FakeContext(INTERFACE, answers=[answer]))
    assert result["maintenance_window"]["start"] == "2099-01-15T01:00:00.000Z"


@pytest.mark.parametrize(
    "answer",
    [
        "next tuesday",
        42,
        {"start": "2099-01-15T01:00:00Z"},
        {"start": "soon", "end": "later"},
        {"start": "2099-01-15T01:00:00", "end": "2099-01-15T03:00:00"},
        {"start": "2099-01-15T03:00:00Z", "end": "2099-01-15T01:00:00Z"},
        {"start": "2001-01-15T01:00:00Z", "end": "2001-01-15T03:00:00Z"},
    ],
)
async def test_unusable_answer_is_rejected(answer: Any) -> None:
    context = FakeContext(INTERFACE, answers=[answer])
    with pytest.raises(ConditionError) as info:
        await handler(args({"mtu": 9000}, window=None), context)
    assert info.value.code is ErrorCode.CONSTRAINT_REJECTED
    assert context.records == {}


async def test_window_in_the_arguments_that_cannot_be_honoured_is_rejected() -> None:
    past = {"start": "2001-01-15T01:00:00Z", "end": "2001-01-15T03:00:00Z"}
    backwards = {"start": WINDOW["end"], "end": WINDOW["start"]}
    for window in (past, backwards):
        arguments = args({"mtu": 9000}, window=window)
        assert INTERFACE.input.validate(arguments) == ()
        with pytest.raises(ConditionError) as info:
            await handler(arguments, FakeContext(INTERFACE))
        assert info.value.code is ErrorCode.CONSTRAINT_REJECTED


@pytest.mark.parametrize(
    ("device", "interface"), [("no-such-device", "eth0"), ("edge-router-1", "eth42")]
)
async def test_unknown_resource_is_rejected_without_asking(device: str, interface: str) -> None:
    context = FakeContext(INTERFACE)
    with pytest.raises(ConditionError) as info:
        await handler(args({"mtu": 9000}, device=device, interface=interface, window=None), context)
    assert info.value.code is ErrorCode.CONSTRAINT_REJECTED
    assert context.requests == [] and context.records == {}


async def test_schema_catches_a_mistyped_proposal() -> None:
    result = await run(args({"mtu": 9000}))
    broken = copy.deepcopy(result)
    broken["changes"][0]["proposed_value"] = "9000"  # an MTU must be an integer
    assert INTERFACE.output.validate(broken) != ()
    broken = copy.deepcopy(result)
    broken["changes"][0]["path"] = PREFIX.format("eth2") + "enabled"  # path and leaf disagree
    assert INTERFACE.output.validate(broken) != ()
    broken = copy.deepcopy(result)
    broken["rollback"]["changes"][0]["operation"] = "delete"  # delete carries no new value
    assert INTERFACE.output.validate(broken) != ()
