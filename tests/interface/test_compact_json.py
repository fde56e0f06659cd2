"""``compact_json`` writes what Starlette's ``JSONResponse`` writes, and refuses what it refuses."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillrack.interface.compact_json import compact_json


def starlettes(value: Any) -> str:
    return json.dumps(
        value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    )


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()  # lone surrogates included: written as json.dumps writes them
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text() | st.integers() | st.booleans() | st.none(), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(values)
def test_the_same_text_as_json_dumps(value: Any) -> None:
    assert compact_json(value) == starlettes(value)


@pytest.mark.parametrize(
    "value",
    [math.nan, [math.inf], {"a": -math.inf}, {"a": object()}, {(1, 2): 3}, b"bytes", {1, 2}],
)
def test_refused_with_the_same_exception_type(value: Any) -> None:
    with pytest.raises((ValueError, TypeError)) as theirs:
        starlettes(value)
    with pytest.raises(theirs.type):
        compact_json(value)


def test_a_cycle_is_refused() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises((ValueError, RecursionError)):
        compact_json(cycle)
