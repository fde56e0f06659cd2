"""Every ``format`` checker runs under the patterns' time budget and a size cap, and never raises.

Before: ``format: regex`` with the value ``a{4294967295}`` raised
``OverflowError`` out of validation, so the task ended ``FAILED
output_invalid`` (a failure of the skill) instead of ``REJECTED
input_invalid``; ``format: uri`` on a 3.9 MB string took 1.8 s and ``iri`` on
one kilobyte a second or more, outside any budget, stalling the event loop.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack.interface import patterns
from skillrack.interface.formats import MAX_FORMAT_CHARS, bounded, is_iri, is_iri_reference
from skillrack.interface.inline import DRAFT_2020_12, compile_inline_schema
from skillrack.testing.serve import error_of, invoke, skill_request

#: Far above what a bounded check takes, far below the stalls measured before.
QUICK_S = 0.5


def _validate(fmt: str, value: Any) -> tuple[Any, float]:
    schema = {"type": "object", "properties": {"v": {"format": fmt}}}
    compiled = compile_inline_schema(schema, DRAFT_2020_12)
    started = time.monotonic()
    details = compiled.validate({"v": value})
    return details, time.monotonic() - started


def test_a_checker_that_raises_is_a_detail_at_the_value() -> None:
    [detail] = _validate("regex", "a{4294967295}")[0]
    assert (detail.instance_path, detail.keyword) == ("/v", "format")
    assert _validate("regex", "^a{2,3}$")[0] == ()


@pytest.mark.parametrize("fmt", ["uri", "uri-reference", "iri", "iri-reference", "regex"])
def test_a_long_string_is_refused_quickly(fmt: str) -> None:
    details, took = _validate(fmt, "http://example.net/" + "a" * 3_900_000)
    assert took < QUICK_S
    assert [(d.instance_path, d.keyword) for d in details] == [("/v", "format")]


@pytest.mark.parametrize("fmt", ["iri", "iri-reference"])
def test_iri_checks_take_linear_time_up_to_the_cap(fmt: str) -> None:
    # rfc3987-syntax took seconds on a kilobyte of these.
    for value in ("a:" + "a" * (MAX_FORMAT_CHARS - 2), "%" * MAX_FORMAT_CHARS, "é" * 4000):
        _details, took = _validate(fmt, value)
        assert took < QUICK_S


def test_the_cap_is_the_limit() -> None:
    at_cap = "http://example.net/" + "a" * (MAX_FORMAT_CHARS - 19)
    assert len(at_cap) == MAX_FORMAT_CHARS
    assert _validate("uri", at_cap)[0] == ()
    assert [d.keyword for d in _validate("uri", at_cap + "a")[0]] == ["format"]


@pytest.mark.parametrize(
    "value, iri, reference",
    [
        ("https://例え.テスト/パス?q=値#frag", True, True),
        ("http://example.com/ü", True, True),
        ("http://[::1]:80/", True, True),
        ("urn:isbn:0451450523", True, True),
        ("//relative/path", False, True),
        ("héllo", False, True),
        ("http://x/a b", False, False),
        ("http://x/%zz", False, False),
        ("http://x/\ufffe", False, False),
        ("http://x:8ü/", False, False),
    ],
)
def test_iri_by_mapping_to_a_uri(value: str, iri: bool, reference: bool) -> None:
    assert (is_iri(value), is_iri_reference(value)) == (iri, reference)


def test_checkers_share_the_patterns_budget() -> None:
    """Many slow-but-capped checks add up to the budget, not to a stall."""
    slow_calls = []

    def slow(instance: object) -> bool:
        slow_calls.append(instance)
        time.sleep(0.05)
        return True

    check = bounded(slow)
    started = time.monotonic()
    with patterns.pattern_budget(0.2) as budget:
        results = [check(str(i)) for i in range(50)]
    assert time.monotonic() - started < 1.0
    assert budget.timed_out and not all(results)
    assert len(slow_calls) <= 6  # the budget, then nothing more runs


def test_many_format_strings_are_bounded_by_the_budget() -> None:
    schema = {"type": "array", "items": {"format": "regex"}}
    compiled = compile_inline_schema(schema, DRAFT_2020_12)
    # Distinct strings (re caches compiled patterns): each takes ~10 ms, 400 ~4 s.
    instance = [f"{i}" + "(a|b)" * (MAX_FORMAT_CHARS // 5 - 1) for i in range(400)]
    started = time.monotonic()
    details = compiled.validate(instance)
    assert time.monotonic() - started < 3.0
    assert details  # refused: the budget ran out before every string was checked


def test_over_http_a_raising_checker_is_input_invalid_not_a_failure() -> None:
    skill = simple_skill(
        "regex_field",
        input_schema={"type": "object", "properties": {"expr": {"format": "regex"}}},
    )
    registry = registry_of([("vendor", SkillsPlugin(skill)), ("allow", AllowAll())])
    registered = registry.get("regex_field")
    assert registered is not None
    with running_agent(registry) as base:
        for binding in ("JSONRPC", "HTTP+JSON"):
            for value in ("a{4294967295}", "x" * 3_000_000):
                request = skill_request(
                    "regex_field",
                    {"expr": value},
                    registered.skill.version,
                    registered.interface_digest,
                )
                started = time.monotonic()
                task = invoke(base, request, binding)
                assert time.monotonic() - started < 5.0
                assert task["status"]["state"] == "TASK_STATE_REJECTED", task["status"]
                error = error_of(task)
                assert error["code"] == "input_invalid"
                assert [(d["instance_path"], d["keyword"]) for d in error["details"]] == [
                    ("/expr", "format")
                ]
