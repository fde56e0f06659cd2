"""Between JSON values and the protobuf values a2a-sdk carries in Data Parts.

A2A 1.0's Data Part holds a ``google.protobuf.Value``, where every number is a
double.  Two consequences are handled here, in one place:

* incoming whole numbers arrive as ``80.0``; they are turned back into ``80``
  (JSON Schema treats both as the same number, but handlers and ``integer``
  checks in other languages should see an integer);
* an outgoing integer beyond +/-2^53 would be rounded silently on the wire, so
  it is refused instead (the host reports ``output_invalid``); vendors carry
  64-bit counters as strings, as RFC 7951 does for YANG data.
"""

from __future__ import annotations

from typing import Any

from a2a.types import Part
from google.protobuf import json_format, struct_pb2

SAFE_INTEGER = 2**53 - 1


class UnsafeNumber(ValueError):
    """An integer the double-based wire form cannot carry exactly."""

    def __init__(self, pointer: str) -> None:
        super().__init__(f"integer at {pointer or '/'} exceeds +/-2^53 and would be rounded")
        self.pointer = pointer


def from_value(value: struct_pb2.Value) -> Any:
    """Protobuf Value -> JSON value, with integral doubles back to ints."""
    return _integral(json_format.MessageToDict(value))


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) <= SAFE_INTEGER:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def check_numbers(value: Any, pointer: str = "") -> None:
    """Raise :class:`UnsafeNumber` for an integer the wire would round."""
    stack: list[tuple[Any, str]] = [(value, pointer)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, bool):
            continue
        if isinstance(node, int) and abs(node) > SAFE_INTEGER:
            raise UnsafeNumber(where)
        if isinstance(node, dict):
            stack.extend(
                (v, f"{where}/{str(k).replace('~', '~0').replace('/', '~1')}")
                for k, v in node.items()
            )
        elif isinstance(node, list):
            stack.extend((v, f"{where}/{i}") for i, v in enumerate(node))


def data_part(value: Any) -> Part:
    """A Data Part holding ``value`` (``application/json``)."""
    part = Part(media_type="application/json")
    part.data.CopyFrom(json_format.ParseDict(value, struct_pb2.Value()))
    return part
