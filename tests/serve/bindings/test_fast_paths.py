"""The per-request fast paths give exactly the answers of the slow ones they stand in for.

:func:`skillrack.interface.validity_check.compile_validity_check` answers "valid" without
jsonschema for the keywords domain schemas use, and
:func:`skillrack.interface.plain_json.measure_plain_json` measures an instance's JCS size
without building the bytes.  Both are shortcuts only: every error, every detail
and every refusal still comes from jsonschema and ``canonical_bytes``.  These
tests hold them to that, schema by schema and instance by instance, including
the corners where Python and JSON Schema disagree (``True == 1``, ``1.0`` as an
integer, ``-0.0``, floats JCS writes differently from ``repr``).  Likewise
:func:`skillrack.protocol.values.data_part` and
:func:`skillrack.protocol.values.from_value` build and read protobuf Values
without ``json_format``'s per-member bookkeeping and must give the same
messages, the same JSON (key order and int/float included) and the same errors.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from a2a.types import Part
from google.protobuf import json_format, struct_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillrack.errors import ConditionError, ErrorCode
from skillrack.interface.canonical import CanonicalizationError, canonical_bytes
from skillrack.interface.inline import DRAFT_2020_12, compile_inline_schema
from skillrack.interface.limits import Limits, json_depth
from skillrack.interface.plain_json import measure_plain_json
from skillrack.interface.validation import CompiledSchema
from skillrack.protocol.values import DATA_PART_DEPTH, _integral, data_part, from_value

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1.0, 26.0, 1e16, 1e21, 1e-7, 5e-324, 2.5, 80.0, -1e300])
    | st.text(max_size=8)
    | st.sampled_from(["up", "down", "gte", "percent", "2026-01-01T00:00:00Z", "x\n\u2028\x7f"])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["a", "b", "name", "kind", "x-1", "value", "items", ""])
            | st.text(max_size=3),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


_COMPILED: dict[str, CompiledSchema] = {}


def compile_(schema: Any) -> CompiledSchema:
    key = json.dumps(schema, sort_keys=True)
    if key not in _COMPILED:
        _COMPILED[key] = compile_inline_schema(schema, DRAFT_2020_12)
    return _COMPILED[key]


def jsonschema_says(compiled: CompiledSchema, instance: Any) -> bool:
    return next(iter(compiled._validator.iter_errors(instance)), None) is None


def fast_says(compiled: CompiledSchema, instance: Any) -> bool:
    assert compiled._fast is not None
    return compiled._fast(instance)


class Text(str):
    """A ``str`` subclass: the string-only ``enum`` compares it as jsonschema does."""


#: Every keyword the fast predicate implements, and the corners of each.
SCHEMAS: list[Any] = [
    {"type": "integer"},
    {"type": ["number", "null"]},
    {"type": "boolean"},
    {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 3}},
    {"enum": [1, True, "a", None, [1, 2], {"a": 1}, 0, False, 1.5]},
    {"enum": ["a", "", "1", "true", "null"]},
    {"const": {"a": [1, True]}},
    {"const": 0},
    {"type": "string", "pattern": "^[a-z]+-\\d$"},
    {"type": "string", "format": "date-time"},
    {"format": "ipv4"},
    {"minimum": 0, "maximum": 10, "exclusiveMaximum": 9.5, "exclusiveMinimum": -1},
    {"multipleOf": 0.5},
    {"multipleOf": 3},
    {"type": "array", "minItems": 1, "maxItems": 3, "uniqueItems": True},
    {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
    {"prefixItems": [{"const": 1}], "items": {"type": "boolean"}},
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": {"type": "boolean"},
    },
    {"patternProperties": {"^[a-b]$": {"type": "array"}}, "additionalProperties": False},
    {"propertyNames": {"maxLength": 1}, "minProperties": 1, "maxProperties": 2},
    {"dependentRequired": {"a": ["b"]}},
    {"allOf": [{"type": "object"}, {"required": ["kind"]}]},
    {"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 2}]},
    {"oneOf": [{"type": "number"}, {"type": "integer"}]},
    {"not": {"type": "array"}},
    {"if": {"required": ["kind"]}, "then": {"required": ["value"]}, "else": {"maxProperties": 1}},
    {
        "$defs": {"node": {"type": "object", "properties": {"items": {"$ref": "#/$defs/list"}}},
                  "list": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "$ref": "#/$defs/node",
    },
    {"properties": {"a": True, "b": False}, "items": True},
    {"$id": "urn:example:root", "properties": {"a": {"$ref": "#/$defs/a"}},
     "$defs": {"a": {"type": "integer"}}},
]  # fmt: skip


def test_every_corner_schema_gets_a_predicate() -> None:
    for schema in SCHEMAS:
        assert compile_(schema)._fast is not None, schema


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: json.dumps(s)[:60])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=JSON)
def test_predicate_agrees_with_jsonschema(schema: Any, instance: Any) -> None:
    compiled = compile_(schema)
    assert fast_says(compiled, instance) == jsonschema_says(compiled, instance)


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        ({"type": "integer"}, 1.0),
        ({"type": "integer"}, True),
        ({"type": "number"}, False),
        ({"enum": [1]}, True),
        ({"enum": [True]}, 1),
        ({"enum": ["a", "b"]}, "b"),
        ({"enum": ["1", "true"]}, 1),
        ({"enum": ["1", "true"]}, True),
        ({"enum": ["a"]}, Text("a")),
        ({"enum": ["a"]}, ["a"]),
        ({"const": [0]}, [False]),
        ({"uniqueItems": True}, [1, True]),
        ({"uniqueItems": True}, [1, 1.0]),
        ({"uniqueItems": True}, [{"a": 1}, {"a": True}]),
        ({"multipleOf": 0.1}, 0.3),
        ({"multipleOf": 0.5}, 1e308),
        ({"minLength": 2}, "\U0001f600"),
        ({"format": "date-time"}, "2026-13-01T00:00:00Z"),
        ({"format": "date-time"}, 12),
        ({"pattern": "a"}, "bab"),
        ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 2),
        ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 2.5),
    ],
)
def test_corners(schema: Any, instance: Any) -> None:
    compiled = compile_(schema)
    assert fast_says(compiled, instance) == jsonschema_says(compiled, instance)


def _example_schemas() -> list[tuple[str, Any]]:
    # Read from the checkout: the host's test env does not install the vendor plugin.
    folder = (
        Path(__file__).resolve().parents[3]
        / "example_vendor_plugin/src/skillrack_example_vendor/schemas"
    )
    return [
        (entry.name, json.loads(entry.read_text(encoding="utf-8")))
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".json")
    ]


EXAMPLE_SCHEMAS = _example_schemas()


STRINGS = [
    "",
    "0",
    "12",
    "1.0",
    "eth0",
    "ge-0/0/1",
    "a b",
    "18446744073709551615",
    "2026-01-01T00:00:00Z",
    "2026-01-01 00:00",
    "prop-0123456789abcdef",
    "sha256:" + "ab" * 32,
    "/ietf-interfaces:interfaces/interface[name='eth0']/description",
    "/ietf-interfaces:interfaces/interface[name='eth0']/ietf-ip:ipv4/mtu",
]
NUMBERS = [0, -1, 1, 80, 1500, 0.5, 1.0, 99.5, 1e20, True]


def _resolve(schema: Any, root: Any) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#").split("/")[1:]:
            target = target[part]
        schema = {**{k: v for k, v in schema.items() if k != "$ref"}, **target}
    return schema


def _merge(one: dict[str, Any], two: dict[str, Any]) -> dict[str, Any]:
    merged = {**one, **two}
    merged["properties"] = {**one.get("properties", {}), **two.get("properties", {})}
    merged["required"] = [*one.get("required", ()), *two.get("required", ())]
    return merged


def _instance(schema: Any, root: Any, draw: st.DrawFn, depth: int = 0) -> Any:
    """An instance shaped by the schema: mostly valid, now and then slightly off."""
    schema = _resolve(schema, root)
    if depth > 8 or not isinstance(schema, dict) or draw(st.integers(0, 150)) == 0:
        return draw(JSON)  # off: anything at all
    for combinator in ("oneOf", "anyOf"):
        if combinator in schema:
            branch = draw(st.sampled_from(schema[combinator]))
            merged = {k: v for k, v in schema.items() if k != combinator}
            return _instance(_merge(merged, _resolve(branch, root)), root, draw, depth + 1)
    if "allOf" in schema:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged = _merge(merged, _resolve(part, root))
        return _instance(merged, root, draw, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    kind = schema.get("type")
    kind = draw(st.sampled_from(kind)) if isinstance(kind, list) else kind
    if kind == "object" or "properties" in schema:
        required = set(schema.get("required", ()))
        out = {}
        for name, sub in schema.get("properties", {}).items():
            if name in required or draw(st.booleans()):
                out[name] = _instance(sub, root, draw, depth + 1)
        return out
    if kind == "array":
        low = schema.get("minItems", 0)
        count = draw(st.integers(low, low + 2))
        items = [_instance(schema.get("items", {}), root, draw, depth + 1) for _ in range(count)]
        if schema.get("uniqueItems"):
            unique: list[Any] = []
            for item in items:
                if item not in unique:
                    unique.append(item)
            items = unique
        return items
    if kind == "string":
        if schema.get("format") == "date-time":
            return draw(st.sampled_from(["2026-01-01T00:00:00Z"] * 9 + ["2026-02-30T00:00:00Z"]))
        fitting = [
            text
            for text in STRINGS
            if compile_({k: v for k, v in schema.items() if k != "format"}).is_valid(text)
        ]
        return draw(st.sampled_from(fitting or STRINGS))
    if kind in ("number", "integer", "boolean"):
        fitting = [n for n in [*NUMBERS, False] if compile_(schema).is_valid(n)]
        return draw(st.sampled_from(fitting or NUMBERS))
    return draw(JSON)


def _mutated(instance: Any, draw: st.DrawFn) -> Any:
    """One small change somewhere: a member dropped, added or replaced."""
    if isinstance(instance, dict) and instance and draw(st.booleans()):
        name = draw(st.sampled_from(sorted(instance)))
        change = draw(st.integers(0, 2))
        if change == 0:
            return {k: v for k, v in instance.items() if k != name}
        if change == 1:
            return {**instance, name: _mutated(instance[name], draw)}
        return {**instance, draw(st.text(max_size=3)): draw(JSON)}
    if isinstance(instance, list) and instance and draw(st.booleans()):
        index = draw(st.integers(0, len(instance) - 1))
        return [*instance[:index], _mutated(instance[index], draw), *instance[index + 1 :]]
    return draw(JSON)


@pytest.mark.parametrize(("name", "schema"), EXAMPLE_SCHEMAS, ids=[n for n, _ in EXAMPLE_SCHEMAS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.slow
def test_example_plugin_schemas(name: str, schema: Any, data: st.DataObject) -> None:
    compiled = compile_(schema)
    assert compiled._fast is not None, f"{name} would always take the slow path"
    instance = _instance(schema, schema, data.draw)
    if data.draw(st.integers(0, 3)) == 0:
        instance = _mutated(instance, data.draw)
    assert fast_says(compiled, instance) == jsonschema_says(compiled, instance)
    assert compiled.validate(instance) == () or not fast_says(compiled, instance)


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"a": {"$id": "urn:example:a", "type": "integer"}}},
        {"unevaluatedProperties": False},
        {"contains": {"type": "integer"}},
        {"dependentSchemas": {"a": {"required": ["b"]}}},
        {"$defs": {"x": {"$anchor": "x"}}, "$ref": "#x"},
    ],
)
def test_other_keywords_keep_to_jsonschema(schema: Any) -> None:
    compiled = compile_(schema)
    assert compiled._fast is None
    assert compiled.validate({"a": "b"}) == compiled.validate({"a": "b"})


def jcs_measure(value: Any, limit: int) -> tuple[str, int]:
    """What ``_admit`` did before: depth, then JCS (a refusal), then the size."""
    if json_depth(value, limit) > limit:
        return ("too deep", 0)
    try:
        return ("size", len(canonical_bytes(value)))
    except (CanonicalizationError, RecursionError):
        return ("not json", 0)


def fast_measure(value: Any, limit: int) -> tuple[str, int] | None:
    depth, size = measure_plain_json(value, limit)
    if depth is None:
        return None
    if depth > limit:
        return ("too deep", 0)
    return ("size", size) if size is not None else None


@settings(max_examples=300, deadline=None)
@given(value=JSON, limit=st.integers(1, 6))
def test_plain_measure_is_jcs(value: Any, limit: int) -> None:
    fast = fast_measure(value, limit)
    if fast is not None:
        assert fast == jcs_measure(value, limit)


@pytest.mark.parametrize(
    "value",
    [
        2**53 - 1,
        -(2**53) + 1,
        [1e16, 1e20, 1e21, 1.5e21, 123456789012345680000.0, 1e-6, 1e-7, 5e-324, -0.0, 0.1 + 0.2],
        {"k\u00e9y": 'v\u2028\x00\x1f"\\', "\U0001f600": ["\t\b\f\r\n"]},
        [[[[]]], {}, "", 0],
    ],
)
def test_plain_measure_exact(value: Any) -> None:
    assert fast_measure(value, 64) == jcs_measure(value, 64)


@pytest.mark.parametrize(
    "value",
    [2**53, {1: "a"}, math.inf, float("nan"), "\ud800", {"a": b"x"}, ("a",)],
)
def test_what_it_cannot_measure_goes_the_long_way(value: Any) -> None:
    assert fast_measure(value, 64) is None
    details = compile_({}).validate(value)
    if isinstance(value, tuple):  # JCS writes a tuple as an array
        assert details == ()
    else:
        assert [d.keyword for d in details] == ["json"]


def test_limits_are_still_enforced() -> None:
    compiled = compile_inline_schema(
        {}, DRAFT_2020_12, Limits(max_instance_depth=2, max_instance_bytes=10)
    )
    with pytest.raises(ConditionError):
        compiled.validate([[[]]])
    with pytest.raises(ConditionError):
        compiled.validate("x" * 20)
    assert compiled.validate("x" * 8) == ()
    assert compiled.validate({1: 2})[0].keyword == "json"


# -- protobuf Values: the same messages and the same JSON values as json_format ---------------


def old_data_part(value: Any) -> Part:
    part = Part(media_type="application/json")
    part.data.CopyFrom(json_format.ParseDict(value, struct_pb2.Value()))
    return part


def old_from_value(value: struct_pb2.Value) -> Any:
    return _integral(json_format.MessageToDict(value))


def outcome(call: Any, *args: Any) -> Any:
    try:
        return ("ok", call(*args))
    except Exception as exc:
        return ("raised", type(exc), str(exc))


WIRE_JSON = st.recursive(
    SCALARS | st.integers(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=WIRE_JSON)
def test_data_part_builds_what_parse_dict_builds(value: Any) -> None:
    new, old = outcome(data_part, value), outcome(old_data_part, value)
    assert new[0] == old[0]
    if new[0] == "ok":
        assert new[1] == old[1]
        assert new[1].SerializeToString(deterministic=True) == old[1].SerializeToString(
            deterministic=True
        )
        # the same JSON on the wire, key order included
        assert json.dumps(json_format.MessageToDict(new[1])) == json.dumps(
            json_format.MessageToDict(old[1])
        )
        # and back, key order and int/float included
        for message in (new[1].data, old[1].data):
            assert json.dumps(from_value(message)) == json.dumps(old_from_value(message))
    else:
        assert new == old


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = {"a": value} if level % 2 else [value]
    return value


@pytest.mark.parametrize("depth", [0, 1, 20, 23, 24, 25, 26, 40, 49, 50, 51, 60, 200])
def test_deep_values_fail_or_pass_as_before(depth: int) -> None:
    value = nested(depth, 1.5)
    if depth > DATA_PART_DEPTH:
        # Deeper than a2a-sdk carries: refused with the draft's code, never built.
        with pytest.raises(ConditionError) as refused:
            data_part(value)
        assert refused.value.code is ErrorCode.RESOURCE_LIMIT_EXCEEDED
    else:
        assert outcome(data_part, value)[:2] == outcome(old_data_part, value)[:2]
    message = struct_pb2.Value()
    message.null_value = 0  # type: ignore[assignment]
    built = outcome(old_data_part, value)
    if built[0] == "ok":
        assert outcome(from_value, built[1].data) == outcome(old_from_value, built[1].data)


@pytest.mark.parametrize(
    "value",
    [
        {"a": object()},
        {1: "a"},
        [2**2000],
        {"x": b"bytes"},
        float("nan"),
        [float("inf")],
        {"": {}},
        [],
        {},
        [[], {}],
        {"n": -0.0, "big": 2.0**53, "bigger": 2.0**53 + 2, "half": 0.5, "t": True, "z": None},
    ],
)
def test_wire_corners(value: Any) -> None:
    new, old = outcome(data_part, value), outcome(old_data_part, value)
    assert new[:2] == old[:2]
    if new[0] == "ok":
        assert new[1] == old[1]
        assert json.dumps(outcome(from_value, new[1].data)[1:], default=repr) == json.dumps(
            outcome(old_from_value, new[1].data)[1:], default=repr
        )


def test_non_finite_numbers_raise_as_before() -> None:
    for number in (math.inf, -math.inf, math.nan):
        message = struct_pb2.Value(number_value=number)
        assert outcome(from_value, message) == outcome(old_from_value, message)
        inside = struct_pb2.Value()
        inside.struct_value.fields["x"].number_value = number
        assert outcome(from_value, inside) == outcome(old_from_value, inside)
    assert from_value(struct_pb2.Value()) is None  # no kind set: null, as MessageToDict says
