"""Protobuf messages to JSON dicts, as ``json_format.MessageToDict`` writes them, faster.

a2a-sdk's JSON-RPC client transport writes every request's params with
``json_format.MessageToDict``: pure Python that dispatches on each field's
type through several methods and walks a Data Part's value one ``Value`` at a
time, about 33 us for a skill invocation's ``SendMessageRequest`` (a few
percent of a whole call in ``benchmarks/fanout.py``).  :func:`message_to_dict`
writes the same dict (the same keys, in the same order: the fields in
``ListFields`` order, a Struct's members in its map's order) from a plan built
once per message type, in about a quarter of that.

It knows only the shapes A2A requests use (the counterpart of
:mod:`skillrack.protocol.proto_parse`): regular messages, strings, booleans,
32-bit integers, enums (by name), repeated strings and messages, and the
well-known ``Struct``, ``Value`` and ``Timestamp``.  Anything else (64-bit
integers, floating-point fields, bytes, maps, extensions, other well-known
types, an enum number without a name, a non-finite number in a ``Value``,
nesting beyond :data:`_MAX_DEPTH`) makes the whole message go to
``MessageToDict`` itself, which writes it or raises as it always did.
``tests/protocol/test_proto_dump.py`` holds the two equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

#: Nesting (messages and JSON levels) written here; deeper goes to MessageToDict.
_MAX_DEPTH = 48

Writer = Callable[[Any, int], Any]


class _Declined(Exception):
    """Not one of the shapes written here: MessageToDict decides."""


def message_to_dict(message: Message) -> dict[str, Any]:
    """``json_format.MessageToDict(message)``, the same dict, written faster when it can be."""
    try:
        written: dict[str, Any] = _plan(message.DESCRIPTOR)(message, 1)
    except Exception:  # _Declined, or anything protobuf itself refuses (a Timestamp's range)
        return json_format.MessageToDict(message)
    return written


_PLANS: dict[str, Writer] = {}


def _plan(descriptor: Any) -> Writer:
    plan = _PLANS.get(descriptor.full_name)
    if plan is None:
        plan = _PLANS[descriptor.full_name] = _build(descriptor)
    return plan


def _build(descriptor: Any) -> Writer:
    """The writer of one regular message type: each set field under its JSON name."""
    if descriptor.full_name.startswith("google.protobuf."):
        return _decline  # a well-known type is only ever reached through its field kind
    writers: dict[int, tuple[str, Writer]] = {}

    def write(message: Any, depth: int) -> dict[str, Any]:
        if depth > _MAX_DEPTH:
            raise _Declined
        js: dict[str, Any] = {}
        for field, value in message.ListFields():
            entry = writers.get(field.number)
            if entry is None:
                if field.is_extension:
                    raise _Declined
                entry = writers[field.number] = (field.json_name, _field_writer(field))
            js[entry[0]] = entry[1](value, depth)
        return js

    return write


def _field_writer(field: FieldDescriptor) -> Writer:
    """How MessageToDict writes one field's value, for the kinds handled here."""
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        return _decline
    single = _single_writer(field)
    if field.is_repeated:
        return lambda values, depth: [single(item, depth) for item in values]
    return single


def _single_writer(field: FieldDescriptor) -> Writer:
    message_type = field.message_type
    if message_type is not None:
        full_name = message_type.full_name
        if full_name == "google.protobuf.Struct":
            return _struct
        if full_name == "google.protobuf.Value":
            return _value
        if full_name == "google.protobuf.Timestamp":
            return lambda stamp, depth: stamp.ToJsonString()
        if full_name.startswith("google.protobuf."):
            return _decline
        plan = _plan(message_type)
        return lambda message, depth: plan(message, depth + 1)
    cpp = field.cpp_type
    if cpp == FieldDescriptor.CPPTYPE_STRING and field.type != FieldDescriptor.TYPE_BYTES:
        return _as_is
    if cpp in (
        FieldDescriptor.CPPTYPE_BOOL,
        FieldDescriptor.CPPTYPE_INT32,
        FieldDescriptor.CPPTYPE_UINT32,
    ):
        return _as_is
    if cpp == FieldDescriptor.CPPTYPE_ENUM:
        enum = field.enum_type
        assert enum is not None
        if enum.full_name.startswith("google.protobuf.") or any(
            value.GetOptions().ListFields() for value in enum.values
        ):
            return _decline  # NullValue, or a json_name option on a value
        names = {value.number: value.name for value in enum.values}

        def enum_name(number: Any, depth: int) -> str:
            name = names.get(number)
            if name is None:
                raise _Declined  # a number without a name: MessageToDict's rules
            return name

        return enum_name
    return _decline  # 64-bit integers, floating point, bytes


def _as_is(value: Any, depth: int) -> Any:
    return value


def _decline(value: Any, depth: int) -> Any:
    raise _Declined


def _struct(struct: Any, depth: int) -> dict[str, Any]:
    if depth > _MAX_DEPTH:
        raise _Declined
    fields = struct.fields
    return {key: _value(fields[key], depth + 1) for key in fields}


def _value(value: Any, depth: int) -> Any:
    """``_ValueMessageToJsonObject``: numbers stay floats (80.0), as MessageToDict writes them."""
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return _struct(value.struct_value, depth + 1)
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        number = value.number_value
        if math.isinf(number) or math.isnan(number):
            raise _Declined  # MessageToDict raises its own error for it
        return number
    if kind == "bool_value":
        return value.bool_value
    if kind == "list_value":
        if depth > _MAX_DEPTH:
            raise _Declined
        return [_value(item, depth + 1) for item in value.list_value.values]
    return None  # null_value, or no kind set
