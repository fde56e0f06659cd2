"""JCS + SHA-256 digests, reproduced against the draft's test vector."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers.builders import VECTOR_DIGEST

from skillrack.interface.canonical import (
    CanonicalizationError,
    canonical_bytes,
    digest_of,
    is_digest,
    loads_strict,
)


def test_draft_vector_document_digest(vector: dict[str, Any]) -> None:
    assert vector["result"]["interface_digest"] == VECTOR_DIGEST
    assert digest_of(vector["result"]["interface"]) == VECTOR_DIGEST


@pytest.mark.parametrize("path", ["input_schema", "output_schema", "record"])
def test_draft_vector_schema_digests(draft_document: dict[str, Any], path: str) -> None:
    reference = (
        draft_document["supporting_record_schemas"][0]["schema_reference"]
        if path == "record"
        else draft_document[path]
    )
    assert digest_of(reference["resolution"]["schema"]) == reference["digest"]


def test_digest_ignores_member_order_and_whitespace(draft_document: dict[str, Any]) -> None:
    reordered = json.loads(json.dumps(draft_document, sort_keys=True, indent=7))
    reversed_members = dict(reversed(list(draft_document.items())))
    assert digest_of(reordered) == digest_of(reversed_members) == VECTOR_DIGEST


def test_alternate_string_escape_gives_same_digest() -> None:
    assert digest_of(loads_strict('{"a": "\\u00e9"}')) == digest_of({"a": "é"})


def test_any_change_changes_the_digest(draft_document: dict[str, Any]) -> None:
    changed = json.loads(json.dumps(draft_document))
    changed["input_schema"]["version"] = "1.1"
    assert digest_of(changed) != VECTOR_DIGEST


def test_digest_syntax() -> None:
    value = digest_of({"a": 1})
    assert is_digest(value)
    assert value.startswith("sha256:") and len(value) == 7 + 64 and value == value.lower()
    assert not is_digest("sha256:" + "A" * 64)
    assert not is_digest("sha512:" + "a" * 64)
    assert not is_digest("sha256:" + "a" * 63)
    assert not is_digest(None)


@pytest.mark.parametrize(
    "value, reason",
    [
        (float("nan"), "NaN"),
        (float("inf"), "NaN and infinities"),
        (-float("inf"), "NaN and infinities"),
        (2**53, "integer"),
        (-(2**53), "integer"),
        ({"big": 10**30}, "integer"),
        ("\ud800", "cannot be canonicalized"),
        ({"k": ["\udfff"]}, "cannot be canonicalized"),
        ({"obj": object()}, "unsupported type"),
    ],
)
def test_values_outside_jcs_are_refused(value: Any, reason: str) -> None:
    with pytest.raises(CanonicalizationError, match=reason):
        digest_of(value)


def test_largest_safe_integer_is_accepted() -> None:
    assert canonical_bytes(2**53 - 1) == b"9007199254740991"


@pytest.mark.parametrize(
    "text, reason",
    [
        ('{"a": NaN}', "NaN"),
        ('{"a": Infinity}', "Infinity"),
        ('{"a": 1e400}', "NaN and infinities"),
        ('{"a": 1, "a": 2}', "duplicate"),
        ('{"a": 9007199254740993}', "integer"),
        ('"\\ud800"', "cannot be canonicalized"),
        ("{", "not JSON"),
        (b"\xff\xfe", "UTF-8"),
        ("[" * 100_000 + "]" * 100_000, "nesting|not JSON"),
    ],
)
def test_loads_strict_refuses(text: str | bytes, reason: str) -> None:
    with pytest.raises(CanonicalizationError, match=reason):
        loads_strict(text)
