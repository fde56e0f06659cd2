"""JSON Pointers (RFC 6901): escaping, and the two ways of following one."""

from __future__ import annotations

from typing import Any

import pytest

from skillrack.errors import SkillrackError
from skillrack.interface.pointers import (
    MISSING,
    PointerError,
    escape,
    find,
    resolve,
    to_pointer,
    unescape,
)

#: RFC 6901 section 5's example document.
DOCUMENT: dict[str, Any] = {
    "foo": ["bar", "baz"],
    "": 0,
    "a/b": 1,
    "c%d": 2,
    "e^f": 3,
    "g|h": 4,
    "i\\j": 5,
    'k"l': 6,
    " ": 7,
    "m~n": 8,
}


@pytest.mark.parametrize(
    ("name", "token"),
    [("a/b", "a~1b"), ("m~n", "m~0n"), ("~1", "~01"), ("/", "~1"), ("~", "~0"), ("~/", "~0~1")],
)
def test_escape_and_unescape_round_trip(name: str, token: str) -> None:
    assert escape(name) == token
    assert unescape(token) == name


def test_unescape_reads_tilde_one_before_tilde_zero() -> None:
    # "~01" is the name "~1", never "/": the order RFC 6901 section 4 requires.
    assert unescape("~01") == "~1"


def test_to_pointer_escapes_each_token_and_writes_indices() -> None:
    assert to_pointer([]) == ""
    assert to_pointer(["a/b", 0, "m~n", "~1"]) == "/a~1b/0/m~0n/~01"


@pytest.mark.parametrize(
    ("pointer", "value"),
    [
        ("", DOCUMENT),
        ("/foo", ["bar", "baz"]),
        ("/foo/0", "bar"),
        ("/foo/1", "baz"),
        ("/", 0),
        ("/a~1b", 1),
        ("/c%d", 2),
        ("/e^f", 3),
        ("/g|h", 4),
        ("/i\\j", 5),
        ('/k"l', 6),
        ("/ ", 7),
        ("/m~0n", 8),
    ],
)
def test_the_rfc_examples_resolve_and_are_found(pointer: str, value: Any) -> None:
    assert resolve(DOCUMENT, pointer) == value
    assert find(DOCUMENT, pointer) == value


def test_a_built_pointer_leads_back_to_its_value() -> None:
    document = {"~1": {"/": [{"a~b": None}]}}
    pointer = to_pointer(["~1", "/", 0, "a~b"])
    assert resolve(document, pointer) is None  # JSON null is a value, not an absence
    assert find(document, pointer) is None


@pytest.mark.parametrize(
    "pointer",
    [
        "/missing",
        "/foo/2",  # past the end
        "/foo/-",  # the append position names nothing
        "/foo/-1",
        "/foo/01",  # a leading zero is not an array index
        "/foo/x",
        "/foo/0/deeper",  # into a string
        "/a/b",  # "a/b" is spelt /a~1b
        "foo",  # not a pointer: no leading "/"
    ],
)
def test_a_pointer_to_nothing(pointer: str) -> None:
    assert find(DOCUMENT, pointer) is MISSING
    with pytest.raises(PointerError) as raised:
        resolve(DOCUMENT, pointer)
    assert raised.value.pointer == pointer
    assert repr(pointer) in str(raised.value)


def test_pointer_error_is_caught_as_a_lookup_error_and_a_skillrack_error() -> None:
    with pytest.raises(LookupError):
        resolve([], "/0")
    with pytest.raises(SkillrackError):
        resolve({}, "/x")


def test_missing_is_one_falsy_sentinel() -> None:
    assert find({}, "/x") is find([], "/0") is MISSING
    assert not MISSING and repr(MISSING) == "MISSING"
