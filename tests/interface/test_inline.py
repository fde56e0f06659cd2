"""Inline-schema rules (draft: "Deliver schemas inline in version 1.0", "Resource limits").

Each rule gets its own test that pins the exact ``rule``, ``code`` and
``pointer``, because the document layer and the CLI report those verbatim: a
silently changed pointer or code would be a wire-visible regression.
"""

from __future__ import annotations

import http.server
import json
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, is_dataclass
from typing import Any

import pytest
import referencing.exceptions
from helpers.builders import DATA

from skillrack.errors import ConditionError, ErrorCode
from skillrack.interface import compile_clock, formats, inline
from skillrack.interface.canonical import canonical_bytes
from skillrack.interface.inline import (
    DEFINED_FORMATS,
    DRAFT_2020_12,
    SUPPORTED_DIALECTS,
    CompiledSchema,
    InlineSchemaError,
    compile_inline_schema,
    ensure_format_checkers,
)
from skillrack.interface.limits import DEFAULT_LIMITS, Limits

INVALID = ErrorCode.INTERFACE_INVALID
LIMIT = ErrorCode.RESOURCE_LIMIT_EXCEEDED

EXAMPLE = DATA / "draft-example-describe-skill-result.json"


def refusal(
    schema: Any, limits: Limits = DEFAULT_LIMITS, dialect: str = DRAFT_2020_12
) -> InlineSchemaError:
    with pytest.raises(InlineSchemaError) as caught:
        compile_inline_schema(schema, dialect, limits)
    return caught.value


def assert_refused(
    schema: Any, rule: str, pointer: str, code: ErrorCode = INVALID, **kwargs: Any
) -> InlineSchemaError:
    error = refusal(schema, **kwargs)
    assert (error.rule, error.code, error.pointer) == (rule, code, pointer), error
    return error


def compile_ok(schema: Any, limits: Limits = DEFAULT_LIMITS) -> CompiledSchema:
    return compile_inline_schema(schema, DRAFT_2020_12, limits)


def interface() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    return document["result"]["interface"]  # type: ignore[no-any-return]


def example_schemas() -> dict[str, Any]:
    doc = interface()
    schemas = {
        "input": doc["input_schema"]["resolution"]["schema"],
        "output": doc["output_schema"]["resolution"]["schema"],
    }
    for entry in doc["supporting_record_schemas"]:
        schemas[entry["kind"]] = entry["schema_reference"]["resolution"]["schema"]
    return schemas


GOOD_INPUT: dict[str, Any] = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
GOOD_OUTPUT = {
    "result": "condition_not_met",
    "observed_value": 42,
    "unit": "percent",
    "supporting_record_refs": ["observation-7"],
}
GOOD_RECORD = {
    "record_id": "observation-7",
    "resource_id": "network-resource-123",
    "metric": "utilization",
    "value": 42,
    "unit": "percent",
    "observed_at": "2026-08-11T12:00:01Z",
}


def ref_chain(hops: int) -> dict[str, Any]:
    """A root that follows ``hops`` $ref hops through $defs before reaching a real schema."""
    defs: dict[str, Any] = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(hops - 1)}
    defs[f"d{hops - 1}"] = {"type": "string"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


# --- public surface ---------------------------------------------------------------------------


def test_public_constants() -> None:
    assert DRAFT_2020_12 == "https://json-schema.org/draft/2020-12/schema"
    assert DRAFT_2020_12 in SUPPORTED_DIALECTS
    assert len(DEFINED_FORMATS) == 19


def test_error_is_a_condition_error_dataclass() -> None:
    error = assert_refused({"$ref": "#/$defs/nowhere"}, "unresolvable_reference", "/$ref")
    assert isinstance(error, ConditionError)
    assert is_dataclass(error)
    assert error.to_error_object()["error"]["code"] == "interface_invalid"
    assert "unresolvable_reference" in str(error)


# --- rule 1: dialect --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dialect",
    ["http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema", ""],
)
def test_unsupported_dialect(dialect: str) -> None:
    assert_refused({"type": "object"}, "dialect", "", dialect=dialect)


def test_root_schema_keyword_must_match_the_dialect() -> None:
    assert_refused(
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
        "foreign_dialect",
        "/$schema",
    )
    compile_ok({"$schema": DRAFT_2020_12, "type": "object"})


def test_embedded_resource_with_another_dialect() -> None:
    schema = {
        "$defs": {
            "legacy": {
                "$id": "https://example.net/schemas/legacy",
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "string",
            }
        },
        "$ref": "https://example.net/schemas/legacy",
    }
    assert_refused(schema, "foreign_dialect", "/$defs/legacy/$schema")


def test_embedded_resource_with_the_same_dialect_compiles() -> None:
    compile_ok(
        {
            "$defs": {
                "item": {
                    "$id": "https://example.net/item",
                    "$schema": DRAFT_2020_12,
                    "type": "string",
                }
            },
            "items": {"$ref": "https://example.net/item"},
        }
    )


def test_schema_keyword_in_a_plain_subschema_is_refused_too() -> None:
    # jsonschema switches validator class on $schema wherever it appears.
    schema = {"properties": {"a": {"$schema": "http://json-schema.org/draft-04/schema#"}}}
    assert_refused(schema, "foreign_dialect", "/properties/a/$schema")


# --- rule 2: limits and JSON-ness -------------------------------------------------------------


def test_schema_too_large() -> None:
    schema = {"type": "string", "description": "x" * 200}
    size = len(canonical_bytes(schema))
    compile_ok(schema, Limits(max_schema_bytes=size))
    assert_refused(schema, "schema_too_large", "", LIMIT, limits=Limits(max_schema_bytes=size - 1))


def test_schema_too_deep() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(11):
        schema = {"properties": {"a": schema}}  # two JSON levels per schema level
    compile_ok(schema)  # 23 levels: within the default (24, what describe_skill carries)
    compile_ok(schema, Limits(max_schema_depth=23))
    assert_refused(schema, "schema_too_deep", "", LIMIT, limits=Limits(max_schema_depth=22))
    deeper = {"properties": {"a": schema}}
    assert_refused(deeper, "schema_too_deep", "", LIMIT)
    # A configured depth beyond what the wire carries is lowered to it.
    assert_refused(deeper, "schema_too_deep", "", LIMIT, limits=Limits(max_schema_depth=81))


def test_limit_messages_do_not_disclose_thresholds() -> None:
    error = refusal({"description": "x" * 50}, Limits(max_schema_bytes=17))
    assert "17" not in error.message


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), 2**60, {1: "non-string key"}, {"a": {1, 2}}],
    ids=["nan", "infinity", "big-int", "int-key", "set"],
)
def test_not_json(value: Any) -> None:
    assert_refused({"const": value}, "not_json", "")


# --- rule 3: meta-schema ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"type": "strng"}, "/type"),
        ({"properties": {"a": {"minLength": -1}}}, "/properties/a/minLength"),
        ({"properties": {"a": {"pattern": "("}}}, "/properties/a/pattern"),  # format: regex
        ({"items": [{"type": "string"}]}, "/items"),  # 2019-09 array form
        ({"required": "name"}, "/required"),
        ({"$ref": 5}, "/$ref"),
        ("a string is not a schema", ""),
    ],
)
def test_meta_schema(schema: Any, pointer: str) -> None:
    assert_refused(schema, "meta_schema", pointer)


def test_boolean_schemas_compile() -> None:
    assert compile_ok(True).is_valid({"anything": 1})
    assert not compile_ok(False).is_valid(None)


# --- rule 4: references stay inside the schema value ------------------------------------------


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"$ref": "#/$defs/missing"}, "/$ref"),
        ({"$ref": "#missing-anchor"}, "/$ref"),
        ({"properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {}}, "/properties/a/$ref"),
        ({"$dynamicRef": "#/$defs/missing"}, "/$dynamicRef"),
        # lands on a value that is not a schema
        ({"properties": {"a": {}}, "$ref": "#/properties"}, "/$ref"),
        ({"enum": [{"type": "string"}], "$ref": "#/enum/0"}, "/$ref"),
        ({"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s/type/0"}, "/$ref"),
        # referencing raises a bare ValueError for a non-numeric array index
        ({"allOf": [{}], "$ref": "#/allOf/first"}, "/$ref"),
    ],
)
def test_unresolvable_reference(schema: Any, pointer: str) -> None:
    assert_refused(schema, "unresolvable_reference", pointer)


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"$ref": "file:///etc/passwd"}, "/$ref"),
        ({"$ref": "https://example.net/schemas/other.json"}, "/$ref"),
        ({"$ref": "other.json"}, "/$ref"),
        ({"$id": "https://example.net/root.json", "$ref": "other.json"}, "/$ref"),
        (
            {"properties": {"a": {"$dynamicRef": "https://example.net/x#meta"}}},
            "/properties/a/$dynamicRef",
        ),
        # the dialect's meta-schema is trusted for checking, not as a reference target
        ({"$ref": DRAFT_2020_12}, "/$ref"),
    ],
)
def test_external_reference(schema: Any, pointer: str) -> None:
    assert_refused(schema, "external_reference", pointer)


def test_reference_like_members_that_are_data_are_not_references() -> None:
    compiled = compile_ok(
        {
            "enum": [{"$ref": "http://127.0.0.1:9/enum.json"}, {"$ref": "file:///etc/passwd"}],
            "const": {"$ref": "file:///etc/passwd"},
            "default": {"$ref": "#/nowhere"},
            "examples": [{"$dynamicRef": "#nowhere"}],
            "properties": {"$ref": {"type": "string"}, "$dynamicRef": {"type": "integer"}},
            "x-vendor": {"$ref": "https://example.net/not-a-keyword-here"},
        }
    )
    # The instance equal to the data is valid: nothing was followed.
    assert compiled.is_valid({"$ref": "file:///etc/passwd"})


def test_relative_references_resolve_against_the_root_id() -> None:
    compiled = compile_ok(
        {
            "$id": "https://example.net/schemas/root.json",
            "$defs": {"name": {"$id": "https://example.net/schemas/name.json", "type": "string"}},
            "properties": {"name": {"$ref": "name.json"}},
        }
    )
    assert not compiled.is_valid({"name": 5})


def test_embedded_resource_referenced_by_absolute_uri() -> None:
    compiled = compile_ok(
        {
            "type": "object",
            "properties": {"unit": {"$ref": "https://example.net/schemas/unit"}},
            "$defs": {
                "unit": {
                    "$id": "https://example.net/schemas/unit",
                    "enum": ["percent", "bps"],
                }
            },
        }
    )
    assert compiled.is_valid({"unit": "bps"})
    (detail,) = compiled.validate({"unit": "furlongs"})
    assert (detail.instance_path, detail.schema_path, detail.keyword) == (
        "/unit",
        "/$defs/unit/enum",
        "enum",
    )


def test_anchor_inside_an_embedded_resource() -> None:
    compiled = compile_ok(
        {
            "$defs": {
                "lib": {
                    "$id": "urn:example:lib",
                    "$defs": {"port": {"$anchor": "port", "type": "integer", "maximum": 65535}},
                }
            },
            "$ref": "urn:example:lib#port",
        }
    )
    assert compiled.is_valid(443)
    assert not compiled.is_valid(70000)


def test_dynamic_ref_to_a_dynamic_anchor() -> None:
    compiled = compile_ok(
        {
            "$id": "https://example.net/schemas/tree",
            "$dynamicAnchor": "node",
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$dynamicRef": "#node"}},
            },
        }
    )
    assert compiled.is_valid({"label": "a", "children": [{"label": "b", "children": []}]})
    (detail,) = compiled.validate({"children": [{"label": 7}]})
    assert (detail.instance_path, detail.schema_path) == (
        "/children/0/label",
        "/properties/label/type",
    )


# --- rule 5: embedded resources used as reference targets identify themselves with an absolute URI


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        (
            {"$defs": {"item": {"$id": "item.json", "type": "string"}}, "$ref": "#/$defs/item"},
            "/$defs/item/$id",
        ),
        (
            {"$defs": {"item": {"$id": "/schemas/item"}}, "$ref": "/schemas/item"},
            "/$defs/item/$id",
        ),
        (  # reached by pointer from outside: the resource is still the target
            {
                "$defs": {"item": {"$id": "item.json", "$defs": {"in": {"type": "string"}}}},
                "properties": {"a": {"$ref": "#/$defs/item/$defs/in"}},
            },
            "/$defs/item/$id",
        ),
        (  # its own reference lands in it
            {"$defs": {"item": {"$id": "item.json", "$defs": {"in": {}}, "$ref": "#/$defs/in"}}},
            "/$defs/item/$id",
        ),
        (
            {
                "$defs": {
                    "a": {"$id": "https://example.net/same"},
                    "b": {"$id": "https://example.net/same"},
                }
            },
            "/$defs/b/$id",
        ),
        (
            {"$id": "https://example.net/r", "$defs": {"a": {"$id": "https://example.net/r"}}},
            "/$defs/a/$id",
        ),
        ({"$defs": {"a": {"$id": "x.json"}, "b": {"$id": "x.json"}}}, "/$defs/b/$id"),
    ],
    ids=[
        "relative", "path-only", "by-pointer", "from-inside", "duplicate", "duplicates-root",
        "relative-duplicate",
    ],
)  # fmt: skip
def test_embedded_resource_id(schema: Any, pointer: str) -> None:
    assert_refused(schema, "embedded_resource_id", pointer)


@pytest.mark.parametrize(
    ("schema", "valid", "invalid"),
    [
        ({"$defs": {"item": {"$id": "item.json", "type": "string"}}, "type": "integer"}, 1, "s"),
        ({"$defs": {"item": {"$id": "/schemas/item"}}, "type": "string"}, "s", 1),
        (  # an absolute resource nested in a relative one may be targeted
            {
                "$defs": {
                    "item": {
                        "$id": "item.json",
                        "$defs": {"x": {"$id": "https://example.net/x", "type": "string"}},
                    }
                },
                "$ref": "https://example.net/x",
            },
            "s",
            1,
        ),
        ({"$id": "root.json", "$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"}, "s", 1),
    ],
    ids=["unreferenced", "unreferenced-path-only", "absolute-inside-relative", "root-relative"],
)
def test_relative_id_where_no_reference_lands_is_allowed(
    schema: Any, valid: Any, invalid: Any
) -> None:
    """R-011 as the draft words it: only a resource "used as a reference target" needs it.

    The root is no embedded resource, so its ``$id`` is not bound either.
    """
    compiled = compile_ok(schema)
    assert compiled.is_valid(valid) and not compiled.is_valid(invalid)


# --- rule 6: no retrieval, ever ---------------------------------------------------------------


@dataclass
class CountingServer:
    url: str
    requests: list[str]


@pytest.fixture
def counting_server() -> Iterator[CountingServer]:
    """A real loopback HTTP server that serves a schema and counts every request."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = json.dumps({"type": "string"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield CountingServer(f"http://127.0.0.1:{server.server_address[1]}", seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_http_reference_is_refused_without_any_request(counting_server: CountingServer) -> None:
    url = counting_server.url + "/s.json"
    # Positive control: the server is up and counts, so zero below means zero.
    with urllib.request.urlopen(url, timeout=5) as response:
        assert json.load(response) == {"type": "string"}
    assert counting_server.requests == ["/s.json"]

    assert_refused({"$ref": url}, "external_reference", "/$ref")
    assert_refused(
        {"properties": {"a": {"$dynamicRef": url + "#meta"}}},
        "external_reference",
        "/properties/a/$dynamicRef",
    )
    assert_refused({"$id": url, "$ref": "other.json"}, "external_reference", "/$ref")
    assert counting_server.requests == ["/s.json"]


def test_validator_cannot_retrieve_either(counting_server: CountingServer) -> None:
    """The compiled validator's registry refuses too (reached here through its internals)."""
    compiled = compile_ok({"type": "object"})
    probe = compiled._validator.evolve(schema={"$ref": counting_server.url + "/s.json"})
    with pytest.raises(referencing.exceptions.Unresolvable):
        list(probe.iter_errors("x"))
    assert counting_server.requests == []


# --- rule 7: reference loops and reference depth ----------------------------------------------


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"$ref": "#"}, ""),
        (
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                "$ref": "#/$defs/a",
            },
            "/$defs/a",
        ),
        ({"$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}}, "/$defs/a"),
        ({"$defs": {"a": {"if": {"$ref": "#/$defs/a"}}}}, "/$defs/a"),
        ({"$defs": {"a": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/a"}]}}}, "/$defs/a"),
        ({"dependentSchemas": {"x": {"$ref": "#"}}}, ""),
        ({"$anchor": "me", "oneOf": [{"$ref": "#me"}]}, ""),
        (
            {
                "$dynamicAnchor": "n",
                "properties": {"a": {"$dynamicRef": "#n"}},
                "then": {"$dynamicRef": "#n"},
            },
            "",
        ),
    ],
    ids=["self", "draft-pair", "not", "if", "anyOf", "dependentSchemas", "anchor", "dynamic"],
)
def test_reference_loop(schema: Any, pointer: str) -> None:
    # The draft ("Resource limits") names reference cycles among the limits
    # reported as resource_limit_exceeded.
    assert_refused(schema, "reference_loop", pointer, LIMIT)


def test_recursion_that_consumes_instance_is_legal() -> None:
    tree = compile_ok(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#"}},
            },
        }
    )
    assert tree.is_valid({"name": "root", "children": [{"name": "leaf", "children": []}]})
    assert not tree.is_valid({"name": "root", "children": [{"name": 1}]})

    linked = compile_ok(
        {
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}},
                    "required": ["value"],
                }
            },
            "$ref": "#/$defs/node",
        }
    )
    assert linked.is_valid({"value": 1, "next": {"value": 2}})
    (detail,) = linked.validate({"value": 1, "next": {"value": "two"}})
    assert (detail.instance_path, detail.schema_path) == (
        "/next/value",
        "/$defs/node/properties/value/type",
    )


def test_reference_chain_over_the_default_limit() -> None:
    assert DEFAULT_LIMITS.max_reference_depth == 32
    assert_refused(ref_chain(40), "reference_too_deep", "", LIMIT)
    compile_ok(ref_chain(32))


def test_reference_chain_against_a_custom_limit() -> None:
    limits = Limits(max_reference_depth=3)
    assert compile_ok(ref_chain(3), limits).is_valid("ok")
    assert_refused(ref_chain(4), "reference_too_deep", "", LIMIT, limits=limits)


def test_reference_depth_counts_only_non_consuming_hops() -> None:
    # Four hops, but each one after a "properties" step: never more than one in a row.
    schema = {
        "$defs": {
            f"d{i}": {"properties": {"next": {"$ref": f"#/$defs/d{i + 1}"}}} for i in range(4)
        }
        | {"d4": {"type": "object"}},
        "$ref": "#/$defs/d0",
    }
    compile_ok(schema, Limits(max_reference_depth=1))


# --- rule 8: format is an assertion -----------------------------------------------------------


FORMAT_EXAMPLES = {
    "date-time": ("2026-08-11T12:00:01Z", "yesterday"),
    "date": ("2026-08-11", "2026-13-01"),
    "time": ("12:00:01Z", "25:00:00Z"),
    "duration": ("P1DT2H", "P1X"),
    "email": ("ops@example.net", "no-at-sign"),
    "idn-email": ("δοκιμή@παράδειγμα.δοκιμή", "no-at-sign"),
    "hostname": ("router1.example.net", "-bad-.example"),
    "idn-hostname": ("bücher.example", "-bad-"),
    "ipv4": ("192.0.2.1", "256.1.1.1"),
    "ipv6": ("2001:db8::1", "2001:db8::g"),
    "uri": ("https://example.net/a", "not a uri"),
    "uri-reference": ("../a#b", "http://[bad"),
    "iri": ("https://例え.jp/パス", "not an iri"),
    "iri-reference": ("../パス", "http://[bad"),
    "uuid": ("f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "not-a-uuid"),
    "uri-template": ("https://example.net/{id}", "https://example.net/{id"),
    "json-pointer": ("/a/b~1c", "a/b"),
    "relative-json-pointer": ("1/a", "/a"),
    "regex": ("^a+$", "("),
}


def test_format_examples_cover_every_defined_format() -> None:
    assert set(FORMAT_EXAMPLES) == DEFINED_FORMATS


@pytest.mark.parametrize("name", sorted(FORMAT_EXAMPLES))
def test_defined_format_is_asserted(name: str) -> None:
    good, bad = FORMAT_EXAMPLES[name]
    compiled = compile_ok({"type": "string", "format": name})
    assert compiled.validate(good) == ()
    (detail,) = compiled.validate(bad)
    assert (detail.instance_path, detail.schema_path, detail.keyword, detail.expected) == (
        "",
        "/format",
        "format",
        name,
    )
    assert detail.actual == bad


def test_date_time_the_draft_names() -> None:
    compiled = compile_ok({"format": "date-time"})
    assert compiled.is_valid("2026-08-11T12:00:01Z")
    assert not compiled.is_valid("yesterday")
    assert not compiled.is_valid("2026-08-11 12:00:01")  # RFC 3339 needs T and an offset


def test_undefined_format_stays_an_annotation() -> None:
    compiled = compile_ok({"format": "x-vendor-thing"})
    assert compiled.is_valid("anything at all")


def test_format_only_constrains_strings() -> None:
    assert compile_ok({"format": "ipv4"}).is_valid(42)


def test_ensure_format_checkers_passes_here() -> None:
    ensure_format_checkers()


def test_ensure_format_checkers_names_a_missing_checker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(formats.CHECKERS, "date-time")
    with pytest.raises(RuntimeError, match="date-time"):
        ensure_format_checkers()
    with pytest.raises(RuntimeError, match="date-time"):
        compile_ok({"format": "date-time"})


# --- rule 9: compile time ---------------------------------------------------------------------


def test_compile_time_limit() -> None:
    assert_refused(
        {"type": "string"}, "compile_time", "", LIMIT, limits=Limits(max_compile_seconds=0.0)
    )


class SteppingClock:
    """A clock that advances one millisecond each time it is read, and counts the reads."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.reads / 1000


def wide_schema(members: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            f"m{i}": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"}
            for i in range(members)
        },
    }


def test_compile_time_is_enforced_not_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compilation stops at the first check after the limit, not once it has finished."""
    clock = SteppingClock()
    monkeypatch.setattr(compile_clock, "_now", clock)
    compile_ok(wide_schema(2_000), Limits(max_compile_seconds=3600.0))
    full = clock.reads  # reads of the clock a whole compilation makes
    assert full > 10_000
    clock.reads = 0
    assert_refused(
        wide_schema(2_000), "compile_time", "", LIMIT, limits=Limits(max_compile_seconds=0.05)
    )
    # The deadline is the 51st read: one read more, and nothing after it.
    assert clock.reads == 52


def test_the_meta_schema_check_runs_on_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """jsonschema's meta-schema validation, the longest step, is stopped from inside."""
    clock = SteppingClock()
    monkeypatch.setattr(compile_clock, "_now", clock)
    untimed_walk = inline.walk
    monkeypatch.setattr(
        inline, "walk", lambda schema, uri, dialect, tick: untimed_walk(schema, uri, dialect)
    )

    def never_reached(*args: Any) -> Any:
        raise AssertionError("the checks after the meta-schema ran past the limit")

    monkeypatch.setattr(inline, "_check_patterns", never_reached)
    monkeypatch.setattr(inline, "check_ids", never_reached)
    assert_refused(
        wide_schema(2_000), "compile_time", "", LIMIT, limits=Limits(max_compile_seconds=0.05)
    )
    assert clock.reads == 52


# --- the draft's example schemas --------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "instance"),
    [("input", GOOD_INPUT), ("output", GOOD_OUTPUT), ("resource-observation", GOOD_RECORD)],
)
def test_draft_example_schemas_compile_and_accept_the_example(role: str, instance: Any) -> None:
    schema = example_schemas()[role]
    compiled = compile_ok(schema)
    assert compiled.schema is schema
    assert compiled.dialect == DRAFT_2020_12
    assert compiled.validate(instance) == ()
    assert compiled.is_valid(instance)


def test_record_observed_at_is_a_date_time_assertion() -> None:
    compiled = compile_ok(example_schemas()["resource-observation"])
    (detail,) = compiled.validate(GOOD_RECORD | {"observed_at": "yesterday"})
    assert detail.to_dict() == {
        "instance_path": "/observed_at",
        "schema_path": "/properties/observed_at/format",
        "keyword": "format",
        "expected": "date-time",
        "actual": "yesterday",
    }


# --- CompiledSchema.validate details ----------------------------------------------------------


@pytest.fixture(scope="module")
def input_schema() -> CompiledSchema:
    return compile_ok(example_schemas()["input"])


def test_missing_member_points_at_the_member(input_schema: CompiledSchema) -> None:
    condition = {k: v for k, v in GOOD_INPUT["condition"].items() if k != "unit"}
    (detail,) = input_schema.validate(GOOD_INPUT | {"condition": condition})
    assert detail.to_dict() == {
        "instance_path": "/condition/unit",
        "schema_path": "/properties/condition/required",
        "keyword": "required",
        "expected": "unit",
    }
    assert not detail.has_actual


def test_several_missing_members_give_one_detail_each(input_schema: CompiledSchema) -> None:
    details = input_schema.validate({})
    assert [(d.instance_path, d.expected) for d in details] == [
        ("/condition", "condition"),
        ("/resource_id", "resource_id"),
    ]


def test_wrong_type_matches_the_drafts_example(input_schema: CompiledSchema) -> None:
    condition = GOOD_INPUT["condition"] | {"threshold": "high"}
    (detail,) = input_schema.validate(GOOD_INPUT | {"condition": condition})
    assert detail.to_dict() == {
        "instance_path": "/condition/threshold",
        "schema_path": "/properties/condition/properties/threshold/type",
        "keyword": "type",
        "expected": "number",
        "actual": "string",
    }


def test_unexpected_members_are_each_reported(input_schema: CompiledSchema) -> None:
    details = input_schema.validate(GOOD_INPUT | {"zeta": 1, "alpha": "a/b"})
    assert [d.to_dict() for d in details] == [
        {
            "instance_path": "/alpha",
            "schema_path": "/additionalProperties",
            "keyword": "additionalProperties",
            "expected": False,
            "actual": "a/b",
        },
        {
            "instance_path": "/zeta",
            "schema_path": "/additionalProperties",
            "keyword": "additionalProperties",
            "expected": False,
            "actual": 1,
        },
    ]


def test_sensitive_pointer_hides_actual(input_schema: CompiledSchema) -> None:
    bad = GOOD_INPUT | {"resource_id": 12345}
    (shown,) = input_schema.validate(bad)
    assert shown.has_actual and shown.actual == "integer"
    (hidden,) = input_schema.validate(bad, sensitive=["/resource_id"])
    assert (hidden.instance_path, hidden.keyword) == ("/resource_id", "type")
    assert hidden.expected == "string"
    assert not hidden.has_actual and hidden.actual is None
    assert "actual" not in hidden.to_dict()


def test_sensitive_pointer_hides_values_below_and_above_it() -> None:
    compiled = compile_ok(
        {
            "properties": {"secret": {"properties": {"pin": {"maxLength": 4}}}},
            "maxProperties": 1,
        }
    )
    instance = {"secret": {"pin": "123456"}, "other": 1}
    details = {d.instance_path: d for d in compiled.validate(instance, sensitive=["/secret"])}
    assert set(details) == {"", "/secret/pin"}
    assert not details["/secret/pin"].has_actual  # below the sensitive member
    assert not details[""].has_actual  # contains the sensitive member
    assert details["/secret/pin"].expected == 4
    # Prefix matching is per segment: "/secretary" is not below "/secret".
    (detail,) = compile_ok({"properties": {"secretary": {"type": "string"}}}).validate(
        {"secretary": 1}, sensitive=["/secret"]
    )
    assert detail.has_actual


def test_schema_path_is_the_real_location_across_refs() -> None:
    compiled = compile_ok(
        {"properties": {"port": {"$ref": "#/$defs/port"}}, "$defs": {"port": {"maximum": 65535}}}
    )
    (detail,) = compiled.validate({"port": 70000})
    # jsonschema's own absolute_schema_path would say /properties/port/maximum
    assert (detail.instance_path, detail.schema_path) == ("/port", "/$defs/port/maximum")


def test_false_subschemas_point_at_the_member() -> None:
    compiled = compile_ok(
        {
            "properties": {"legacy": False, "pair": {"prefixItems": [True, False], "items": False}},
            "patternProperties": {"^x-": False},
        }
    )
    details = compiled.validate({"legacy": 1, "x-a": 2, "pair": [0, 1, 2]})
    assert [(d.instance_path, d.schema_path, d.keyword, d.expected, d.actual) for d in details] == [
        ("/legacy", "/properties/legacy", "properties", False, 1),
        ("/pair/1", "/properties/pair/prefixItems/1", "prefixItems", False, 1),
        ("/pair/2", "/properties/pair/items", "items", False, 2),
        ("/x-a", "/patternProperties/^x-", "patternProperties", False, 2),
    ]


def test_json_pointer_escaping_in_paths() -> None:
    compiled = compile_ok({"properties": {"a/b~c": {"type": "string"}}, "required": ["m/n"]})
    details = compiled.validate({"a/b~c": 1})
    assert [(d.instance_path, d.schema_path) for d in details] == [
        ("/a~1b~0c", "/properties/a~1b~0c/type"),
        ("/m~1n", "/required"),
    ]


def test_any_of_reports_the_clear_branch_or_the_combinator() -> None:
    compiled = compile_ok({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]})
    (clear,) = compiled.validate(3)  # only the integer branch applies to an integer
    assert (clear.schema_path, clear.keyword) == ("/anyOf/1/minimum", "minimum")
    (ambiguous,) = compiled.validate(None)
    assert (ambiguous.schema_path, ambiguous.keyword) == ("/anyOf", "anyOf")


def test_details_are_sorted_and_capped() -> None:
    compiled = compile_ok({"items": {"type": "string"}})
    details = compiled.validate(list(range(50)))
    assert len(details) == 20
    paths = [d.instance_path for d in details]
    assert paths == sorted(paths)
    assert compiled.validate(list(range(50))) == details


def test_non_json_instance_is_one_detail() -> None:
    compiled = compile_ok({"type": "number"})
    (detail,) = compiled.validate(float("nan"))
    assert detail.to_dict() == {"instance_path": "", "keyword": "json", "expected": "I-JSON value"}
    assert not compiled.is_valid(float("nan"))


def test_instance_limits_raise_resource_limit_exceeded() -> None:
    compiled = compile_ok({}, Limits(max_instance_depth=3, max_instance_bytes=20))
    assert compiled.limits.max_instance_depth == 3
    assert compiled.validate([[["ok"]]]) == ()
    with pytest.raises(ConditionError) as deep:
        compiled.validate([[[["too deep"]]]])
    assert deep.value.code is LIMIT and not isinstance(deep.value, InlineSchemaError)
    with pytest.raises(ConditionError) as large:
        compiled.validate("x" * 30)
    assert large.value.code is LIMIT
    with pytest.raises(ConditionError):
        compiled.is_valid("x" * 30)


def test_default_instance_depth_bounds_recursive_validation() -> None:
    compiled = compile_ok({"items": {"$ref": "#"}})
    instance: Any = []
    for _ in range(64):
        instance = [instance]
    with pytest.raises(ConditionError) as caught:
        compiled.validate(instance)
    assert caught.value.code is LIMIT


def test_compiled_schema_does_not_follow_later_mutation() -> None:
    schema: dict[str, Any] = {"type": "string"}
    compiled = compile_ok(schema)
    schema["type"] = "integer"
    assert compiled.is_valid("still a string")


def test_shared_python_subobjects_are_fine() -> None:
    shared = {"type": "string"}
    compiled = compile_ok({"properties": {"a": shared, "b": shared}})
    details = compiled.validate({"a": 1, "b": 2})
    assert [d.schema_path for d in details] == ["/properties/a/type", "/properties/b/type"]


# --- the meta-schema verdict is remembered by JCS digest --------------------------------------


class CountingMetaCheck:
    """Counts the schemas checked against the meta-schema.

    Every check starts with the compiled one (``inline.passes_meta_schema``);
    jsonschema's runs only when that does not pass, so the compiled check's
    calls are the checks.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self._check = inline.passes_meta_schema
        monkeypatch.setattr(inline, "passes_meta_schema", self)
        inline.META_VERDICTS.clear()
        inline.COMPILED.clear()  # a value compiled before would not reach the meta check

    def __call__(self, *args: Any) -> bool:
        self.calls += 1
        return self._check(*args)


def test_meta_schema_check_runs_once_for_a_shared_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = CountingMetaCheck(monkeypatch)
    schema = example_schemas()["input"]
    # Equal values, with members in another order: one JCS form, one check.
    compiled = [compile_ok(json.loads(json.dumps(schema))) for _ in range(20)]
    compiled.append(compile_ok(dict(reversed(list(schema.items())))))
    assert counted.calls == 1
    assert all(c.validate(GOOD_INPUT) == () for c in compiled)
    compile_ok({**schema, "title": "another schema"})
    assert counted.calls == 2


def test_a_refused_schema_is_checked_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = CountingMetaCheck(monkeypatch)
    for _ in range(3):
        assert_refused({"type": "strung"}, "meta_schema", "/type")
    assert counted.calls == 3


def test_a_pass_is_not_reused_under_other_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = CountingMetaCheck(monkeypatch)
    compile_ok({"type": "string"})
    compile_ok({"type": "string"}, Limits(max_compile_seconds=60.0))
    assert counted.calls == 2


def test_remembered_passes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = CountingMetaCheck(monkeypatch)
    monkeypatch.setattr(inline.META_VERDICTS, "size", 2)
    monkeypatch.setattr(inline.COMPILED, "size", 2)
    for n in (1, 2, 3, 1):
        compile_ok({"maxLength": n})
    assert counted.calls == 4  # {"maxLength": 1} was forgotten when the third came


# --- a value compiled before is not compiled again ----------------------------------------------


def test_an_equal_value_shares_the_compiled_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = CountingMetaCheck(monkeypatch)
    schema = example_schemas()["input"]
    first = compile_ok(schema)
    again = compile_ok(dict(reversed(list(schema.items()))))  # another object, one JCS form
    assert again is not first and again.schema is not first.schema
    assert again._validator is first._validator and again._fast is first._fast
    assert again.validate(GOOD_INPUT) == () and counted.calls == 1
    other = compile_ok({**schema, "title": "another schema"})  # a distinct value: fully checked
    assert other._validator is not first._validator and counted.calls == 2


def test_the_validator_is_built_on_first_use() -> None:
    """Assembly builds no jsonschema validator; the first validation that needs one does."""
    schema = {
        "type": "object",
        "properties": {"device_id": {"type": "string", "minLength": 1}},
        "required": ["device_id"],
        "$comment": "built on first use",
    }
    inline.COMPILED.clear()
    compiled = compile_ok(schema)
    twin = compiled.given_as(json.loads(json.dumps(schema)))
    assert compiled._validator_slot._validator is None
    details = compiled.validate({"device_id": ""})
    assert [detail.instance_path for detail in details] == ["/device_id"]
    assert compiled._validator_slot._validator is not None
    assert twin._validator is compiled._validator  # built once for both


def test_a_refusal_is_never_remembered_as_a_compilation() -> None:
    inline.COMPILED.clear()
    for _ in range(2):
        assert_refused({"type": "strung"}, "meta_schema", "/type")
    assert not inline.COMPILED._kept  # nothing kept for the refused value


# --- the registry is crawled only when a crawl can find something ---------------------------


@pytest.mark.parametrize(
    ("schema", "crawled"),
    [
        ({"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"}, False),
        ({"$defs": {"a": {"$anchor": "here", "type": "string"}}, "$ref": "#here"}, True),
        ({"$defs": {"a": {"$id": "urn:x:a", "type": "string"}}, "$ref": "urn:x:a"}, True),
        ({"$dynamicAnchor": "node", "type": "array", "items": {"$dynamicRef": "#node"}}, True),
    ],
)
def test_crawl_only_when_needed(schema: Any, crawled: bool) -> None:
    from skillrack.interface.schemawalk import SYNTHETIC_BASE, needs_crawl, walk

    assert needs_crawl(walk(schema, SYNTHETIC_BASE, DRAFT_2020_12)) is crawled
    compiled = compile_ok(schema)
    if "items" in schema:
        assert compiled.is_valid([[[]]]) and not compiled.is_valid([[3]])
    else:
        assert compiled.is_valid("text") and not compiled.is_valid(3)
        assert compiled.validate(3)[0].keyword == "type"


def test_a_long_reference_chain_validates_on_the_slow_path() -> None:
    """A compiled predicate too deep to build leaves validation to jsonschema, every time."""
    schema: dict[str, Any] = {"$defs": {}, "$ref": "#/$defs/a0"}
    for i in range(30):
        leaf: Any = {"$ref": f"#/$defs/a{i + 1}"}
        for _ in range(9):
            leaf = {"properties": {"p": leaf}}
        schema["$defs"][f"a{i}"] = leaf
    schema["$defs"]["a30"] = {"type": "integer"}
    compiled = compile_ok(schema)
    for _ in range(2):
        assert compiled.validate({"p": 1}) == ()
        assert compiled.is_valid({"q": 1}) and compiled.is_valid(1)
    assert compiled._fast is None
