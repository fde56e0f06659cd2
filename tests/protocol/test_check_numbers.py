"""check_numbers refuses exactly what its walk with pointers refuses, naming the same member."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillrack.protocol.values import (
    SAFE_INTEGER,
    UnsafeNumber,
    _locate_unsafe_number,
    check_numbers,
)

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.floats(allow_nan=False)
    | st.integers(-(2**60), 2**60)
    | st.sampled_from([SAFE_INTEGER, -SAFE_INTEGER, SAFE_INTEGER + 1, -SAFE_INTEGER - 1])
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=3), inner, max_size=4)
        | st.tuples(inner, inner)
    ),
    max_leaves=25,
)


def outcome(check: Any, value: Any) -> Any:
    try:
        check(value, "/p")
    except UnsafeNumber as exc:
        return ("unsafe", exc.pointer)
    except Exception as exc:  # what the walk with pointers raises, it must still raise
        return ("raised", type(exc))
    return None


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_the_same_outcome_as_the_walk_with_pointers(value: Any) -> None:
    assert outcome(check_numbers, value) == outcome(_locate_unsafe_number, value)


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, {"b": SAFE_INTEGER + 1}]},
        {1: 2},  # a key the pointer cannot escape
        OrderedDict(a=2**60),
        (2**60,),
        [True, False, None, "x", 1.0],
    ],
)
def test_unusual_values_take_the_walk_with_pointers(value: Any) -> None:
    assert outcome(check_numbers, value) == outcome(_locate_unsafe_number, value)
