"""Sets of Unicode code points as sorted inclusive ranges: what character classes are made of.

Both regular-expression dialects skillrack reads (ECMA-262 patterns in
schemas, XSD patterns in YANG models) turn a character class into such
ranges, merge them and take their complement; the arithmetic is written here
once.
"""

from __future__ import annotations

#: The last Unicode code point.
MAX_CODE_POINT = 0x10FFFF

#: Sorted, merged, non-overlapping inclusive ``(low, high)`` code-point ranges.
Ranges = tuple[tuple[int, int], ...]


def normal(ranges: list[tuple[int, int]]) -> Ranges:
    """Sorted, merged, non-overlapping inclusive ranges."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return tuple(merged)


def complement(ranges: Ranges) -> Ranges:
    """Every code point not in ``ranges`` (which must be :func:`normal`)."""
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= MAX_CODE_POINT:
        out.append((start, MAX_CODE_POINT))
    return tuple(out)
