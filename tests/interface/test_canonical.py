"""JCS + SHA-256 digests, reproduced against the draft's test vector."""

from __future__ import annotations

import json
from typing import Any

import pytest
import rfc8785
from helpers.builders import VECTOR_DIGEST
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
        ('{"b": {"x": 1, "y": 2, "x": 3}}', "duplicate object member 'x'"),
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


# -- the json fast path writes exactly what rfc8785 writes ----------------------------------

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**54), max_value=2**54)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
    | st.sampled_from(["\x00\x1f\x7f\u2028", '"\\\b\f\n\r\t', "\ud800", "\U0001f600", "\ue000"])
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["a", "B", "", "\ue000", "\U0001f600", "\x01"]) | st.text(max_size=3),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


def _reference(value: Any) -> bytes | str:
    """rfc8785's own serialization, or the name of the error it raises."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        return type(exc).__name__


@given(_JSON)
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_canonical_bytes_equal_rfc8785(value: Any) -> None:
    expected = _reference(value)
    if isinstance(expected, bytes):
        assert canonical_bytes(value) == expected
    else:
        with pytest.raises(CanonicalizationError):
            canonical_bytes(value)


def test_keys_beyond_the_bmp_sort_by_utf16() -> None:
    """Code-point order would put U+E000 first; UTF-16 puts the surrogate pair first."""
    value = {"\ue000": 1, "\U0001f600": 2}
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert canonical_bytes(value).index("\U0001f600".encode()) < canonical_bytes(value).index(
        "\ue000".encode()
    )


def test_a_cyclic_value_ends_as_in_rfc8785() -> None:
    """The fast path gives up on a cycle and rfc8785 decides, as for any value it refuses."""
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(RecursionError):
        rfc8785.dumps(cycle)
    with pytest.raises(RecursionError):
        canonical_bytes(cycle)


# -- remembering: one serialization per value inside a block --------------------------------


@pytest.fixture
def serialized(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each value canonical serializes whole, in order (remembered bytes are not)."""
    from skillrack.interface import canonical

    calls: list[Any] = []
    real = canonical._canonical_bytes

    def counting(value: Any) -> bytes:
        calls.append(value)
        return real(value)

    monkeypatch.setattr(canonical, "_canonical_bytes", counting)
    return calls


def test_remembering_serializes_each_value_once(serialized: list[Any]) -> None:
    from skillrack.interface import canonical

    calls = serialized
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    equal = json.loads(json.dumps(schema))  # the same JCS form, another object
    with canonical.remembering():
        first = digest_of(schema)
        assert digest_of(schema) == first and canonical_bytes(schema) == canonical_bytes(schema)
        assert len(calls) == 1
        assert digest_of(equal) == first and len(calls) == 2  # identity, not equality
    digest_of(schema)  # outside the block nothing is remembered
    assert len(calls) == 3


def test_remembering_is_not_shared_between_blocks() -> None:
    from skillrack.interface import canonical

    value = {"a": 1}
    with canonical.remembering():
        before = canonical_bytes(value)
    value["a"] = 2  # changed between blocks: the next block serializes it afresh
    with canonical.remembering():
        assert canonical_bytes(value) != before == b'{"a":1}'


# -- from_parts: an object around remembered values, written from their bytes ---------------

PART_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=4)
    | st.sampled_from(["\ud800", "\U0001f600", "\ue000", 'é\n\x01"\\', "a\u2028"])
)
PART_KEYS = st.text(max_size=3) | st.sampled_from(["\U0001f600", "\ue000", "\ud800", "a\x7f"])
PART_VALUES = st.recursive(
    PART_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(PART_KEYS, inner, max_size=4),
    max_leaves=30,
)


def jcs_outcome(call: Any) -> Any:
    try:
        return call()
    except CanonicalizationError as exc:
        return ("refused", str(exc))


def containers(value: Any) -> list[Any]:
    found = [value] if isinstance(value, dict | list) else []
    for item in value.values() if isinstance(value, dict) else value if found else ():
        found += containers(item)
    return found


@settings(max_examples=600, deadline=None)
@given(value=PART_VALUES, data=st.data())
def test_from_parts_writes_the_bytes_of_the_whole(value: Any, data: st.DataObject) -> None:
    """Whichever members were serialized before: the whole value's bytes, or its refusal."""
    from skillrack.interface import canonical

    expected = jcs_outcome(lambda: canonical_bytes(value))
    inner = containers(value)[1:]
    remembered = data.draw(st.lists(st.sampled_from(inner), max_size=3)) if inner else []
    with canonical.remembering():
        for part in remembered:
            jcs_outcome(lambda part=part: canonical_bytes(part))
        assert jcs_outcome(lambda: canonical_bytes(value, from_parts=True)) == expected


def test_from_parts_uses_the_remembered_bytes(serialized: list[Any]) -> None:
    """A document around a schema: the schema is not serialized again, and the bytes are right."""
    from skillrack.interface import canonical

    schema = {"type": "object", "properties": {"é": {"enum": [1, "x", None, True]}}}
    document = {"b": [schema, {"schema": schema}], "a": "\U0001f600", "c": -5}
    expected = canonical_bytes(document)
    serialized.clear()  # only what follows
    calls = serialized
    with canonical.remembering():
        canonical_bytes(schema)
        assert canonical_bytes(document, from_parts=True) == expected
    assert calls == [schema]
    with canonical.remembering():  # without from_parts: the whole document is serialized
        canonical_bytes(schema)
        assert canonical_bytes(document) == expected
    assert calls == [schema, schema, document]
