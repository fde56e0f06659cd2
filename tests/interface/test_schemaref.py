"""Schema References: built from a schema and its identity, verified, compared whole."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from skillrack.interface.canonical import digest_of
from skillrack.interface.schemaref import SchemaReference, SchemaReferenceError

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def test_build_reproduces_the_draft_reference(draft_document: dict[str, Any]) -> None:
    published = draft_document["input_schema"]
    built = SchemaReference.build(
        published["resolution"]["schema"],
        schema_uri=published["schema_uri"],
        version=published["version"],
        dialect=published["dialect"],
    )
    assert built.to_json() == published


def test_from_json_verifies_the_digest(draft_document: dict[str, Any]) -> None:
    reference = SchemaReference.from_json(draft_document["output_schema"])
    assert reference.digest == draft_document["output_schema"]["digest"]
    draft_document["output_schema"]["resolution"]["schema"]["required"].pop()
    with pytest.raises(SchemaReferenceError, match="does not match") as info:
        SchemaReference.from_json(draft_document["output_schema"])
    assert info.value.pointer == "/digest"


@pytest.mark.parametrize("resolution", [{"type": "url", "schema": {}}, {"type": "inline"}, None])
def test_only_inline_resolution(resolution: Any) -> None:
    raw = {
        "schema_uri": "urn:x",
        "version": "1.0",
        "dialect": DIALECT,
        "digest": digest_of({}),
        "resolution": resolution,
    }
    with pytest.raises(SchemaReferenceError):
        SchemaReference.from_json(raw)


@pytest.mark.parametrize("version", ["1", "01.0", "1.0.0", ""])
def test_build_refuses_non_canonical_versions(version: str) -> None:
    with pytest.raises(SchemaReferenceError, match="canonical") as info:
        SchemaReference.build({}, schema_uri="urn:x", version=version, dialect=DIALECT)
    assert info.value.pointer == "/version"


def test_build_refuses_schema_without_jcs_form() -> None:
    with pytest.raises(SchemaReferenceError) as info:
        SchemaReference.build(
            {"maximum": float("nan")}, schema_uri="urn:x", version="1.0", dialect=DIALECT
        )
    assert info.value.pointer == "/resolution/schema"


def test_references_compare_whole_not_by_digest() -> None:
    schema = {"type": "number"}
    a = SchemaReference.build(schema, schema_uri="urn:a:latency-ms", version="1.0", dialect=DIALECT)
    b = SchemaReference.build(
        schema, schema_uri="urn:b:capacity-gbps", version="1.0", dialect=DIALECT
    )
    c = SchemaReference.build(schema, schema_uri="urn:a:latency-ms", version="1.1", dialect=DIALECT)
    assert a.digest == b.digest == c.digest
    assert not a.same_as(b) and not a.same_as(c)
    assert a.same_as(
        SchemaReference.build(
            {"type": "number"}, schema_uri="urn:a:latency-ms", version="1.0", dialect=DIALECT
        )
    )


#: One reference per identity member, differing from ``_BASE`` in that member only (R-112,
#: R-114): dropping any one member from the comparison makes its case fail.
_BASE = SchemaReference.build(
    {"type": "number"}, schema_uri="urn:a:latency-ms", version="1.0", dialect=DIALECT
)
ONE_MEMBER_DIFFERS = {
    "schema_uri": replace(_BASE, schema_uri="urn:a:latency-us"),
    "version": replace(_BASE, version="1.1"),
    "dialect": replace(_BASE, dialect="https://json-schema.org/draft/2019-09/schema"),
    "digest": SchemaReference.build(
        {"type": "number", "minimum": 0}, schema_uri="urn:a:latency-ms", version="1.0",
        dialect=DIALECT,
    ),
}  # fmt: skip


@pytest.mark.parametrize("member", sorted(ONE_MEMBER_DIFFERS))
def test_references_differing_in_one_member_are_not_the_same(member: str) -> None:
    other = ONE_MEMBER_DIFFERS[member]
    differing = [
        name
        for name in ("schema_uri", "version", "dialect", "digest")
        if getattr(other, name) != getattr(_BASE, name)
    ]
    assert differing == [member]  # the case isolates exactly one member
    other.verify()  # a well-formed reference, refused only for being another one
    assert not _BASE.same_as(other) and not other.same_as(_BASE)
    assert _BASE.same_as(replace(_BASE)) and other.same_as(replace(other))
