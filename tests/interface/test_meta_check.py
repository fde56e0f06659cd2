"""The compiled meta-schema check says "valid" exactly when jsonschema's check does.

:mod:`skillrack.interface.meta_check` stands in for jsonschema's evaluation of
the 2020-12 meta-schema whenever it says "valid" (assembling 500 skills with
distinct schemas took about 9 s before it).  Only a pass is trusted, so the
property that matters is that it never passes a schema jsonschema refuses;
that it passes every schema jsonschema passes is what makes it worth having.
Both are checked here against jsonschema's own verdict (the clocked validator
the compilation falls back to), on generated schemas built from the
meta-schema's own keywords with values of every type, and on corners where
Python and JSON Schema (or Python's and ECMA-262's regular expressions) differ.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillrack.interface import inline, meta_check
from skillrack.interface.compile_clock import clocked_meta_validator
from skillrack.interface.inline import DRAFT_2020_12, compile_inline_schema
from skillrack.interface.schemaerror import InlineSchemaError
from skillrack.interface.schemawalk import SYNTHETIC_BASE, walk

ROOT = Path(__file__).resolve().parents[2]
VALIDATOR_CLASS = inline._VALIDATOR_CLASSES[DRAFT_2020_12]
CHECKER = inline._format_checker(VALIDATOR_CLASS)


def shipped_schemas() -> list[Path]:
    found = sorted((ROOT / "example_vendor_plugin").rglob("schemas/*.json"))
    found += sorted((ROOT / "examples").rglob("*.schema.json"))
    return found


SHIPPED = [json.loads(path.read_text()) for path in shipped_schemas()]


def jsonschema_says(schema: Any) -> bool:
    meta = clocked_meta_validator(VALIDATOR_CLASS, DRAFT_2020_12, CHECKER)
    return next(iter(meta.iter_errors(schema)), None) is None


def compiled_says(schema: Any) -> bool:
    size = len(json.dumps(schema))
    return meta_check.passes_meta_schema(schema, size, VALIDATOR_CLASS, CHECKER, 0.5)


def test_the_static_meta_schema_compiles() -> None:
    """Without a predicate every schema silently takes the slow path again."""
    static = meta_check.static_meta_schema()
    # ``compile_validity_check`` refuses ``$dynamicRef``, ``$dynamicAnchor`` and an
    # embedded ``$id``: a predicate at all means the rewrite left none of them.
    assert "allOf" not in static  # the vocabularies folded into one ``properties``
    assert {"type", "$ref", "$defs", "definitions", "minContains"} <= set(static["properties"])
    assert meta_check._predicate(VALIDATOR_CLASS, CHECKER) is not None


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, 1.0, 1.5, -1.0, 2**60])
    | st.sampled_from(
        [
            "", "a", "string", "integer", "#", "#/a", "x#y", "a\n", "1a", "_a.b-c", "[", "^a$",
            "(?<n>a)", "\\p{L}", "urn:x", "http://h/x", "http://[bad", "rel/x", "#frag", "a b",
        ]
    )
)  # fmt: skip
KEYWORDS = [*sorted(meta_check.static_meta_schema()["properties"]), "x-vendor", "name"]


def schemas(depth: int) -> Any:
    """Schema-like values: meta-schema keywords with values that are right, wrong or nested."""
    if depth == 0:
        return st.booleans() | st.fixed_dictionaries({}, optional={"type": SCALARS})
    inner = schemas(depth - 1)
    value = (
        SCALARS
        | inner
        | st.lists(SCALARS | inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["a", "b", "[", "urn:v", "rel"]), inner | SCALARS, max_size=2
        )
    )
    return st.booleans() | st.dictionaries(st.sampled_from(KEYWORDS), value, max_size=4)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas(3))
@pytest.mark.slow
def test_same_verdict_as_jsonschema(schema: Any) -> None:
    assert compiled_says(schema) == jsonschema_says(schema)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.slow
def test_same_verdict_on_shipped_schemas_with_one_change(data: st.DataObject) -> None:
    """Large, mostly valid schemas: one keyword somewhere set to a right or wrong value."""
    schema = copy.deepcopy(data.draw(st.sampled_from(SHIPPED)))
    nodes = [
        loc.node
        for loc in walk(schema, SYNTHETIC_BASE, DRAFT_2020_12)
        if isinstance(loc.node, dict)
    ]
    node = data.draw(st.sampled_from(nodes))
    node[data.draw(st.sampled_from(KEYWORDS))] = data.draw(
        SCALARS | schemas(1) | st.lists(SCALARS, max_size=3)
    )
    assert compiled_says(schema) == jsonschema_says(schema)


CORNERS: list[Any] = [
    True, False, {}, 1, None, [], "string",
    {"type": ["string", "string"]}, {"type": []}, {"type": "strung"}, {"type": ["null", "integer"]},
    {"required": ["a", "a"]}, {"required": []}, {"required": [1]},
    {"minLength": 1.0}, {"minLength": 1.5}, {"minLength": -1}, {"minLength": True},
    {"multipleOf": 0}, {"multipleOf": 0.5}, {"multipleOf": -1}, {"maximum": "1"},
    {"$id": "urn:x#frag"}, {"$id": "urn:x#"}, {"$id": "urn:x\n"}, {"$id": "http://[bad"},
    {"$anchor": "1a"}, {"$anchor": "a\n"}, {"$anchor": "a.b-c_"}, {"$dynamicAnchor": ""},
    {"pattern": "["}, {"pattern": "(?<n>a)"}, {"pattern": "(?P<n>a)"}, {"pattern": "\\p{L}+"},
    {"patternProperties": {"[": {}}}, {"patternProperties": {"^a": 1}},
    {"$ref": "http://[bad"}, {"$ref": "#/$defs/a b"}, {"$schema": "relative"},
    {"$schema": DRAFT_2020_12}, {"$vocabulary": {"rel": True}}, {"$vocabulary": {"urn:v": 1}},
    {"dependencies": {"a": ["b", "b"]}}, {"dependencies": {"a": "b"}}, {"dependencies": {"a": {}}},
    {"definitions": {"a": 1}}, {"$defs": {"a": {"type": 1}}}, {"enum": 1}, {"enum": []},
    {"items": 1}, {"prefixItems": []}, {"allOf": []}, {"oneOf": [True, {"not": 1}]},
    {"contentSchema": 3}, {"$recursiveAnchor": True}, {"$recursiveRef": "#"}, {"$comment": 1},
    {"deprecated": "yes"}, {"examples": {}}, {"uniqueItems": 1}, {"x-vendor": {"type": 1}},
    {"properties": {"a": {"properties": {"b": {"minItems": -1}}}}},
    {"if": {"const": 1}, "then": {"minimum": "0"}}, {"dependentRequired": {"a": ["b", 1]}},
    {"unevaluatedProperties": {"type": "strung"}}, {"propertyNames": {"pattern": "[a-"}},
]  # fmt: skip


@pytest.mark.parametrize("schema", CORNERS, ids=[json.dumps(c)[:40] for c in CORNERS])
def test_corners(schema: Any) -> None:
    assert compiled_says(schema) == jsonschema_says(schema)


@pytest.mark.parametrize("path", shipped_schemas(), ids=lambda p: p.name)
def test_every_shipped_schema_passes_without_jsonschema(path: Path) -> None:
    """The schemas vendors copy take the compiled path, not the slow one."""
    schema = json.loads(path.read_text())
    assert compiled_says(schema) and jsonschema_says(schema)


class SlowCheck:
    """Counts jsonschema's meta-schema checks during compilations."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self._check = inline._check_meta_schema
        monkeypatch.setattr(inline, "_check_meta_schema", self)
        inline.META_VERDICTS.clear()
        inline.COMPILED.clear()

    def __call__(self, *args: Any) -> None:
        self.calls += 1
        self._check(*args)


def test_a_valid_schema_skips_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    slow = SlowCheck(monkeypatch)
    compile_inline_schema(
        {"type": "object", "properties": {"a": {"pattern": "^x$"}}}, DRAFT_2020_12
    )
    assert slow.calls == 0


def test_a_refusal_is_worded_by_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    slow = SlowCheck(monkeypatch)
    with pytest.raises(InlineSchemaError) as caught:
        compile_inline_schema({"properties": {"a": {"minLength": -1}}}, DRAFT_2020_12)
    assert slow.calls == 1
    assert (caught.value.rule, caught.value.pointer) == ("meta_schema", "/properties/a/minLength")


def test_a_large_schema_takes_the_clocked_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above FAST_CHECK_BYTES the compile-time limit must be able to stop the check midway."""
    slow = SlowCheck(monkeypatch)
    # Few nodes, long texts: over the size, yet quick for jsonschema on a loaded machine.
    big = {"properties": {f"p{n}": {"description": "x" * 4096} for n in range(20)}}
    assert len(json.dumps(big)) > meta_check.FAST_CHECK_BYTES
    compile_inline_schema(big, DRAFT_2020_12)
    assert slow.calls == 1


def test_a_pattern_out_of_time_is_not_a_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A match cut off by the time limit sends the schema to jsonschema, never through."""

    def out_of_time(pattern: str, string: str) -> bool:
        raise meta_check.patterns.PatternTimeLimit(pattern)

    monkeypatch.setattr(meta_check.patterns, "search", out_of_time)
    meta_check._predicate.cache_clear()
    try:
        assert not compiled_says({"$anchor": "fine"})
    finally:
        meta_check._predicate.cache_clear()


def test_patterns_share_a_time_budget() -> None:
    """A schema full of patterns cannot hold the compiled check past its budget."""
    schema = {"allOf": [{"pattern": f"^a{n}(b|c)*$"} for n in range(2000)]}
    size = len(json.dumps(schema))
    assert size < meta_check.FAST_CHECK_BYTES
    started = time.perf_counter()
    verdict = meta_check.passes_meta_schema(schema, size, VALIDATOR_CLASS, CHECKER, 0.01)
    assert time.perf_counter() - started < 1.0
    assert not verdict  # out of budget: jsonschema decides, never a pass
