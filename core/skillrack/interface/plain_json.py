"""The depth and JCS size of a plain JSON instance, measured without building its JCS bytes.

Every request validates four instances (the request object, the arguments,
each supporting record, the result), and each is first held to the size and
depth limits.  ``measure_plain_json`` computes both for an instance made only
of dict, list, str, int, float, bool and None, with the outcome
``canonical_bytes`` would give; anything else is left to the caller to
measure the long way, from its JCS bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import rfc8785

from skillrack.interface.compact_json import compact_json

_INT_RANGE: Final = 2**53 - 1
_INFINITY: Final = float("inf")


def _float_length_delta(value: float) -> int:
    """JCS length of a finite float minus the length of ``repr`` (what ``json.dumps`` writes)."""
    text = repr(value)
    if value == 0:
        return 1 - len(text)  # "0" for 0.0 and -0.0
    if "e" in text:
        return len(rfc8785.dumps(value)) - len(text)
    return -2 if text.endswith(".0") else 0  # JCS writes 26.0 as 26


def _scalar_delta(value: Any) -> int | None:
    """JCS length minus ``json.dumps`` length of a scalar; None when JCS refuses it or is unsure."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return 0
    if kind is int:
        return 0 if -_INT_RANGE <= value <= _INT_RANGE else None
    if kind is float:
        if value != value or value in (_INFINITY, -_INFINITY):
            return None
        return _float_length_delta(value)
    return None


def measure_plain_json(value: Any, limit: int) -> tuple[int | None, int | None]:
    """``(depth, JCS size)`` of a plain JSON value, or None for what it cannot measure.

    The depth is :func:`skillrack.interface.limits.json_depth`'s (cut off above
    ``limit``), and when it is above ``limit`` the size is not computed.  The
    size is ``len(canonical_bytes(value))``: ``json.dumps`` (compact, UTF-8,
    unsorted: order does not change the length) writes every string, integer
    and literal exactly as JCS does, and floats differ only in a way
    :func:`_float_length_delta` corrects.  Depth is None as soon as a value of
    another type, a non-string key, an integer JCS refuses or a non-finite
    float is found: the caller then measures the long way.
    """
    deepest = 0
    delta = _scalar_delta(value) if type(value) is not dict and type(value) is not list else 0
    if delta is None:
        return None, None
    stack: list[tuple[Any, int]] = [(value, 1)] if type(value) in (dict, list) else []
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest, None
        if type(node) is dict:
            for key in node:
                if type(key) is not str:
                    return None, None
            children: Iterable[Any] = node.values()
        else:
            children = node
        for child in children:
            kind = type(child)
            if kind is str:
                continue
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
                continue
            more = _scalar_delta(child)
            if more is None:
                return None, None
            delta += more
    try:
        return deepest, len(compact_json(value).encode("utf-8")) + delta
    except (ValueError, TypeError, RecursionError):  # e.g. a lone surrogate: JCS refuses it
        return deepest, None
