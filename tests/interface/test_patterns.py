"""Schema patterns are matched under a time limit: a hostile pattern cannot stall validation.

A pattern such as ``^(a|a)*$`` takes exponential time in a backtracking
engine: against forty ``a`` and a ``b`` Python's ``re`` would run for hours.
Such a schema may come from a vendor's plugin (the host validates requests
against it) or from a remote agent (the client validates that agent's answers
against it); either way the match is cut off and the value treated as not
matching, with a detail that points at it.  Each test below would hang
without ``skillrack.interface.patterns``; the time bound asserted is far above the
limits (0.05 s per match, 0.5 s per validation) and far below a hang.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack.errors import ErrorCode
from skillrack.interface import patterns
from skillrack.interface.bounded_validator import TIMED_OUT
from skillrack.interface.inline import DRAFT_2020_12, compile_inline_schema
from skillrack.interface.schemaerror import InlineSchemaError
from skillrack.testing.serve import error_of, invoke, skill_request

EVIL = "^(a|a)*$"
#: Matches nothing of EVIL's language, and makes a backtracking engine try every split.
ATTACK = "a" * 40 + "b"
#: Long enough to show "would hang", short enough to be sure it is not the normal case.
HANG_GUARD_S = 5.0


def _validate(schema: Any, instance: Any) -> tuple[Any, float]:
    compiled = compile_inline_schema(schema, DRAFT_2020_12)
    started = time.monotonic()
    details = compiled.validate(instance)
    return details, time.monotonic() - started


def test_a_catastrophic_pattern_is_cut_off_and_fails_at_the_string() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": EVIL}}}
    details, took = _validate(schema, {"name": ATTACK})
    assert took < HANG_GUARD_S
    [detail] = details
    assert (detail.instance_path, detail.keyword, detail.expected) == ("/name", "pattern", EVIL)
    assert detail.schema_path == "/properties/name/pattern"
    # The same schema still works as a pattern for ordinary values.
    assert _validate(schema, {"name": "aaaa"})[0] == ()
    assert [d.keyword for d in _validate(schema, {"name": "b"})[0]] == ["pattern"]


def test_pattern_properties_and_additional_properties_are_cut_off() -> None:
    by_pattern = {"type": "object", "patternProperties": {EVIL: {"type": "integer"}}}
    details, took = _validate(by_pattern, {ATTACK: "x"})
    assert took < HANG_GUARD_S
    assert [(d.instance_path, d.keyword) for d in details] == [(f"/{ATTACK}", "patternProperties")]
    closed = {**by_pattern, "additionalProperties": False}
    details, took = _validate(closed, {ATTACK: 1})
    assert took < HANG_GUARD_S
    assert details and all(d.instance_path == f"/{ATTACK}" for d in details)
    # Ordinary names still match, or are still extra.
    assert _validate(closed, {"aa": 1})[0] == ()
    assert [d.keyword for d in _validate(closed, {"b": 1})[0]] == ["additionalProperties"]
    names = {"type": "object", "propertyNames": {"pattern": EVIL}}
    details, took = _validate(names, {ATTACK: 1})
    assert took < HANG_GUARD_S and details


def test_many_slow_strings_share_one_budget() -> None:
    schema = {"type": "array", "items": {"type": "string", "pattern": EVIL}}
    details, took = _validate(schema, [ATTACK] * 200)
    # 200 matches of at most 0.05 s each would be 10 s; the budget stops them together.
    assert took < HANG_GUARD_S
    assert details  # and every one of them counts as not matching
    assert {d.keyword for d in details} == {"pattern"}


def test_search_outside_and_inside_a_budget() -> None:
    assert patterns.search("^a+$", "aaa") is True
    assert patterns.search("^a+$", "b") is False
    with pytest.raises(patterns.PatternTimeLimit):
        patterns.search(EVIL, ATTACK)
    with patterns.pattern_budget(0.0) as budget, pytest.raises(patterns.PatternTimeLimit):
        patterns.search("^a+$", "aaa")  # an exhausted budget refuses even a cheap match
    assert budget.timed_out


def test_nested_blocks_share_the_outer_budget_and_every_exit_puts_it_back() -> None:
    with patterns.pattern_budget(0.0) as outer:
        with patterns.pattern_budget(5.0) as inner:
            assert inner is outer
        with pytest.raises(patterns.PatternTimeLimit):  # still the outer, exhausted one
            patterns.search("^a+$", "aaa")
    with pytest.raises(RuntimeError), patterns.pattern_budget(0.0):
        raise RuntimeError("a validation that failed on its way")
    assert patterns.search("^a+$", "aaa") is True  # no budget left behind by either block


def test_only_matching_time_counts_against_the_budget() -> None:
    # A large instance takes jsonschema itself longer than the whole budget; the
    # budget must still be there for the patterns at its end.
    with patterns.pattern_budget(0.2) as budget:
        time.sleep(0.3)
        assert patterns.search("^a+$", "aaa") is True
    assert not budget.timed_out and budget.remaining > 0.1


def test_a_timeout_never_makes_an_instance_valid() -> None:
    """Under ``not``, a match that failed by timing out would read as "does not match"."""
    schema = {"type": "string", "not": {"pattern": EVIL}}
    compiled = compile_inline_schema(schema, DRAFT_2020_12)
    started = time.monotonic()
    [detail] = compiled.validate(ATTACK)
    assert time.monotonic() - started < HANG_GUARD_S
    assert (detail.keyword, detail.expected) == ("pattern", TIMED_OUT)
    assert not compiled.is_valid(ATTACK)
    assert compiled.is_valid("b")  # an ordinary value that does not match is still fine
    assert [d.keyword for d in compiled.validate("aaa")] == ["not"]


@pytest.mark.parametrize(
    "schema",
    [
        {  # the root, reached again through "$ref": "#", names its dialect
            "$schema": DRAFT_2020_12,
            "type": "object",
            "properties": {"s": {"type": "string", "pattern": EVIL}, "child": {"$ref": "#"}},
        },
        {  # an embedded resource that repeats the dialect
            "$schema": DRAFT_2020_12,
            "type": "object",
            "properties": {
                "child": {
                    "$id": "urn:test:child",
                    "$schema": DRAFT_2020_12,
                    "type": "object",
                    "properties": {"s": {"type": "string", "pattern": EVIL}},
                }
            },
        },
    ],
)
def test_a_dialect_named_again_does_not_escape_the_time_limit(schema: Any) -> None:
    details, took = _validate(schema, {"child": {"s": ATTACK}})
    assert took < HANG_GUARD_S
    assert [d.instance_path for d in details] == ["/child/s"]


def test_patterns_evaluated_for_unevaluated_properties_are_refused() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^x-": {"type": "string"}},
        "unevaluatedProperties": False,
    }
    with pytest.raises(InlineSchemaError) as refused:
        compile_inline_schema(schema, DRAFT_2020_12)
    assert refused.value.rule == "pattern_unbounded"
    assert refused.value.code == ErrorCode.INTERFACE_INVALID
    assert refused.value.pointer == "/patternProperties"
    # Each alone is fine.
    compile_inline_schema({"unevaluatedProperties": False}, DRAFT_2020_12)
    compile_inline_schema({"patternProperties": {"^x-": True}}, DRAFT_2020_12)


def test_a_pattern_the_matcher_cannot_compile_is_named() -> None:
    assert patterns.check_pattern("^[a-z]+$") is None
    assert patterns.check_pattern("(") is not None


def test_a_plugins_hostile_pattern_does_not_stall_the_agent() -> None:
    """Over HTTP: the request is refused as input_invalid at the field, and the agent answers."""
    hostile = simple_skill(
        "hostile_pattern",
        input_schema={
            "type": "object",
            "properties": {"name": {"type": "string", "pattern": EVIL}},
        },
    )
    registry = registry_of([("vendor", SkillsPlugin(hostile)), ("allow", AllowAll())])
    registered = registry.get("hostile_pattern")
    assert registered is not None
    with running_agent(registry) as base:
        started = time.monotonic()
        task = invoke(
            base,
            skill_request(
                "hostile_pattern",
                {"name": ATTACK},
                registered.skill.version,
                registered.interface_digest,
            ),
        )
        assert time.monotonic() - started < HANG_GUARD_S
        assert task["status"]["state"] == "TASK_STATE_REJECTED"
        error = error_of(task)
        assert error["code"] == "input_invalid"
        # Located within the arguments, as the draft locates input_invalid details.
        assert [d["instance_path"] for d in error["details"]] == ["/name"]
        assert httpx.get(base + "/.well-known/agent-card.json", timeout=5).status_code == 200


def test_details_show_the_schema_as_published_with_its_dialect() -> None:
    """The runtime copy drops ``$schema``; ``expected`` must not."""
    embedded = {"$id": "urn:test:number", "$schema": DRAFT_2020_12, "type": "integer"}
    schema = {"$schema": DRAFT_2020_12, "anyOf": [{"type": "string"}, embedded]}
    [detail] = _validate(schema, [])[0]
    assert detail.keyword == "anyOf"
    assert detail.expected == [{"type": "string"}, embedded]
