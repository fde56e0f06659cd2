"""What a base skill's handler returns, read as parts."""

from __future__ import annotations

from collections import deque

from skillrack import TextPart
from skillrack.serve.execution.base_replies import returned_parts


def test_any_sequence_of_parts_is_its_parts_and_a_string_is_one_part() -> None:
    parts = [TextPart("a"), TextPart("b")]
    assert returned_parts(parts) == parts
    assert returned_parts(tuple(parts)) == parts
    assert returned_parts(deque(parts)) == parts
    assert returned_parts("plain text") == ["plain text"]
    assert returned_parts(None) == []
    assert returned_parts(parts[0]) == [parts[0]]
