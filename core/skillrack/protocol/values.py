"""Between JSON values and the protobuf values a2a-sdk carries in Data Parts.

A2A 1.0's Data Part holds a ``google.protobuf.Value``, where every number is a
double.  Two consequences are handled here, in one place:

* incoming whole numbers arrive as ``80.0``; they are turned back into ``80``
  (JSON Schema treats both as the same number, but handlers and ``integer``
  checks in other languages should see an integer);
* an outgoing integer beyond +/-2^53 would be rounded silently on the wire, so
  it is refused instead (the host reports ``output_invalid``); vendors carry
  64-bit counters as strings, as RFC 7951 does for YANG data.

A third is the nesting a Data Part can hold.  protobuf parses at most
:data:`PROTOBUF_MAX_DEPTH` nested messages, and a2a-sdk parses (and copies,
which in upb is a parse) every Task and event it handles.  Each JSON object
level of a ``Value`` costs three of those levels (``Struct``, its map entry,
the member's ``Value``), and a Data Part's value sits six levels deep in a
streamed status event (``StreamResponse`` > ``TaskStatusUpdateEvent`` >
``TaskStatus`` > ``Message`` > ``Part`` > ``Value``).  So a Data Part carries
at most :data:`DATA_PART_DEPTH` levels of JSON; a deeper value fails inside
a2a-sdk (an internal error, or a task that was never created).  The server
refuses deeper requests before any protobuf conversion (the body guard),
and :func:`data_part` refuses to build a deeper part, with
``resource_limit_exceeded``.  (``google._upb._message.SetAllowOversizeProtos``
would lift upb's limit, process-wide and through a private module, but
a2a-sdk's own ``ParseDict`` calls keep json_format's limit of 100 anyway.)
"""

from __future__ import annotations

import math
from typing import Any

from a2a.types import Part
from google.protobuf import json_format, struct_pb2

from skillrack.errors import ConditionError, ErrorCode, SkillrackError
from skillrack.interface.limits import json_depth
from skillrack.interface.pointers import escape

SAFE_INTEGER = 2**53 - 1

#: upb's limit on nested messages when it parses one (also json_format's default).
PROTOBUF_MAX_DEPTH = 100
#: How deep a Data Part's ``Value`` sits in the deepest message a2a-sdk parses.
DATA_PART_VALUE_LEVEL = 6
#: protobuf levels per JSON object level inside a ``Value`` (Struct, map entry, Value).
LEVELS_PER_JSON_LEVEL = 3
#: The deepest JSON value a Data Part carries: the interface room's
#: :data:`~skillrack.interface.limits.WIRE_DATA_DEPTH` (which cannot import
#: this module), derived here; tests/serve/bindings/test_deep_arguments.py checks that
#: both agree and that protobuf carries exactly this much.
DATA_PART_DEPTH = (PROTOBUF_MAX_DEPTH - DATA_PART_VALUE_LEVEL) // LEVELS_PER_JSON_LEVEL

#: What a sender is told when a value nests deeper than a Data Part carries.
TOO_DEEP = "the value nests more deeply than an A2A Data Part carries"


class UnsafeNumber(SkillrackError, ValueError):
    """An integer the double-based wire form cannot carry exactly."""

    def __init__(self, pointer: str) -> None:
        super().__init__(f"integer at {pointer or '/'} exceeds +/-2^53 and would be rounded")
        self.pointer = pointer


def from_value(value: struct_pb2.Value) -> Any:
    """Protobuf Value -> JSON value, with integral doubles back to ints.

    The same result as ``json_format.MessageToDict`` followed by the integral
    conversion, in one pass; a value nested beyond :data:`_FAST_DEPTH` takes
    that original route (and its recursion limit).
    """
    try:
        return _plain(value, 0)
    except _TooDeep:
        return _integral(json_format.MessageToDict(value))


#: Nesting the one-pass conversions handle themselves; deeper values go through
#: json_format, whose own limits then apply.
_FAST_DEPTH = 48


class _TooDeep(Exception):
    pass


def _plain(value: struct_pb2.Value, depth: int) -> Any:
    """``MessageToDict`` of a Value (same key order, same errors), integral doubles as ints."""
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        if depth >= _FAST_DEPTH:
            raise _TooDeep
        fields = value.struct_value.fields
        return {key: _plain(fields[key], depth + 1) for key in fields}
    if kind == "list_value":
        if depth >= _FAST_DEPTH:
            raise _TooDeep
        return [_plain(item, depth + 1) for item in value.list_value.values]
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        number = value.number_value
        if math.isinf(number):
            raise ValueError(
                "Fail to serialize Infinity for Value.number_value, "
                "which would parse as string_value"
            )
        if math.isnan(number):
            raise ValueError(
                "Fail to serialize NaN for Value.number_value, which would parse as string_value"
            )
        if number.is_integer() and abs(number) <= SAFE_INTEGER:
            return int(number)
        return number
    if kind == "bool_value":
        return value.bool_value
    return None  # null_value, or no kind set


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) <= SAFE_INTEGER:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def check_numbers(value: Any, pointer: str = "") -> None:
    """Raise :class:`UnsafeNumber` for an integer the wire would round.

    A value of plain JSON types with no such integer (every valid output) is
    walked once without building a JSON Pointer for each member; anything
    else is walked again by :func:`_locate_unsafe_number`, which names the
    first one found, or passes what it does not refuse.
    """
    if not _plainly_safe(value):
        _locate_unsafe_number(value, pointer)


_PLAIN_SCALARS = frozenset({str, float, bool, type(None)})


def _plainly_safe(value: Any) -> bool:
    """True for dicts (string keys), lists, strings, floats, booleans, None and safe ints only."""
    stack = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in _PLAIN_SCALARS:
            continue
        if kind is int:
            if -SAFE_INTEGER <= node <= SAFE_INTEGER:
                continue
            return False
        if kind is dict:
            for key in node:
                if type(key) is not str:
                    return False  # the walk that decides (it escapes each key)
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
        else:
            return False  # a subclass, a tuple, anything: the walk that decides
    return True


def _locate_unsafe_number(value: Any, pointer: str) -> None:
    """:func:`check_numbers`' walk with pointers: raises for the first unsafe integer."""
    stack: list[tuple[Any, str]] = [(value, pointer)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, bool):
            continue
        if isinstance(node, int) and abs(node) > SAFE_INTEGER:
            raise UnsafeNumber(where)
        if isinstance(node, dict):
            stack.extend((v, f"{where}/{escape(k)}") for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{where}/{i}") for i, v in enumerate(node))


def data_part(value: Any) -> Part:
    """A Data Part holding ``value`` (``application/json``).

    Built as ``json_format.ParseDict`` builds it, call for call, without its
    per-member bookkeeping; anything unusual (a type it refuses, nesting near
    its recursion limit) is handed to ``ParseDict`` itself, which then
    succeeds or fails as it does on its own.

    Raises ``resource_limit_exceeded`` for a value nested deeper than
    :data:`DATA_PART_DEPTH`: such a part would fail later, inside a2a-sdk.
    """
    built = struct_pb2.Value()
    try:
        fill_value(value, built, 1)
    except Exception:
        if json_depth(value, DATA_PART_DEPTH) > DATA_PART_DEPTH:
            raise ConditionError(ErrorCode.RESOURCE_LIMIT_EXCEEDED, TOO_DEEP) from None
        built = json_format.ParseDict(value, struct_pb2.Value())
    part = Part(media_type="application/json")
    # Copied in on purpose: a copy can lay out a Struct's map differently from
    # the message it came from, and the JSON on the wire follows that layout.
    part.data.CopyFrom(built)
    return part


class _Unusual(Exception):
    pass


def fill_value(value: Any, message: struct_pb2.Value, depth: int) -> None:
    """``json_format._Parser._ConvertValueMessage``, with ``depth`` counted as it counts it.

    Raises for anything unusual (a type ParseDict refuses, nesting beyond
    :data:`_FAST_DEPTH`): the caller then hands the whole value to ``ParseDict``.
    Also the filler of every Value and Struct :mod:`skillrack.protocol.proto_parse` builds.

    Values of the exact JSON types (what ``json`` decodes to, what handlers
    build) are dispatched on their type, and an object's strings and numbers
    are set in place without a call of their own: the same assignments, in
    the same order.  Subclasses take ParseDict's ``isinstance`` order.
    """
    if depth > _FAST_DEPTH:
        raise _Unusual
    kind = type(value)
    if kind is dict:
        struct = message.struct_value
        struct.Clear()
        fields = struct.fields
        for key, item in value.items():
            member = type(item)
            if member is str:
                fields[key].string_value = item
            elif member is float or member is int:
                fields[key].number_value = item
            else:
                fill_value(item, fields[key], depth + 2)
    elif kind is str:
        message.string_value = value
    elif kind is float or kind is int:
        message.number_value = value
    elif kind is list:
        items = message.list_value
        items.ClearField("values")
        for item in value:
            fill_value(item, items.values.add(), depth + 2)
    elif kind is bool:
        message.bool_value = value
    else:
        _fill_any(value, message, depth)


def _fill_any(value: Any, message: struct_pb2.Value, depth: int) -> None:
    """:func:`fill_value` for ``None``, tuples and subclasses: ParseDict's own order of tests."""
    if isinstance(value, dict):
        struct = message.struct_value
        struct.Clear()
        fields = struct.fields
        for key in value:
            fill_value(value[key], fields[key], depth + 2)
    elif isinstance(value, (list, tuple)):
        items = message.list_value
        items.ClearField("values")
        for item in value:
            fill_value(item, items.values.add(), depth + 2)
    elif value is None:
        message.null_value = 0  # type: ignore[assignment]
    elif isinstance(value, bool):
        message.bool_value = value
    elif isinstance(value, str):
        message.string_value = value
    elif isinstance(value, (int, float)):
        message.number_value = value
    else:
        raise _Unusual
