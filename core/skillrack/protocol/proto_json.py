"""protobuf messages to JSON-ready dicts, exactly as ``json_format.MessageToDict`` writes them.

a2a-sdk answers every SendMessage by converting the final Task with
``json_format.MessageToDict``: pure Python that looks up each field's kind,
name and converter on every call.  The Task of one invocation (history,
two Artifacts, Data Parts of a few dozen members) costs about 6% of a
request that way.  :func:`message_to_dict` writes the same dict (same keys,
same order, same values) from a plan built once per message type: for each
field, its JSON name and the converter for its kind.

What it knows is what the A2A types use: regular messages, maps, repeated
fields, enums, strings, bytes (base64), booleans, integers (64-bit ones as
strings), floating point, and the well-known types ``Struct``, ``Value``,
``ListValue`` and ``Timestamp``.  Any other well-known type, an extension,
an enum number without a name, or a value json_format refuses (a NaN or an
infinity in a ``Value``) is converted by ``json_format`` itself, for that
message, so the output and the errors stay json_format's.
``tests/protocol/test_proto_json.py`` holds the two equal.

A ``Value`` that never changes (``describe_skill``'s document, a few
kilobytes that take most of its answer's conversion) is converted once:
:func:`remember` it, and the dict written for it is kept, keyed by the
bytes the Value serializes to.  Those bytes are the key, not the Value's
content, because the order in which a ``Struct`` lists its keys (and so the
order of the dict ``json_format`` writes) is the order of its map, and upb
lays a copied map out anew: the same document, copied, may list its keys in
another order.  Serialization walks the map in that same order, so equal
bytes are equal dicts, key order included.  Only a Value whose size
(``ByteSize``, which does not depend on that order) is a remembered one is
serialized and looked up, and a layout met for the first time is kept only
if its content (deterministic bytes) is a remembered Value's, so a caller's
Value of the same size is converted and forgotten; at most
:data:`MAX_REMEMBERED` layouts are kept.
The dict (a :class:`Remembered`) is shared by every answer that carries
the Value: a caller of :func:`message_to_dict` reads it, never changes it.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from skillrack.protocol.clock import second_text

Converter = Callable[[Any], Any]


class _Unsupported(Exception):
    """Raised inside a conversion: json_format converts this message instead."""


def message_to_dict(message: Message) -> Any:
    """``json_format.MessageToDict(message)`` with its default options, faster."""
    try:
        return _convert(message)
    except _Unsupported:
        return json_format.MessageToDict(message)


_PLANS: dict[str, Callable[[Message], Any]] = {}

#: How many layouts of remembered Values are kept (a few per document is what copies make).
MAX_REMEMBERED = 256
#: The dict written for each remembered Value, by the bytes it serializes to.
_REMEMBERED: dict[bytes, Any] = {}
#: The sizes of the remembered Values: a Value of another size is converted as usual.
_SIZES: set[int] = set()
#: The content of each remembered Value (its deterministic bytes, maps in key order): only
#: a layout of one of these is kept, never a caller's Value that merely has the same size.
_CONTENTS: set[bytes] = set()


class Remembered(dict[str, Any]):
    """The dict written for a remembered Value: shared by every answer, read, never changed.

    ``text`` is free for the one serializer of the answers (the JSON-RPC
    route, :mod:`skillrack.serve.bindings.jsonrpc`) to keep the JSON it writes for it.
    """

    __slots__ = ("text",)

    def __init__(self, converted: dict[str, Any]) -> None:
        super().__init__(converted)
        self.text: str | None = None


def remember(value: Message) -> None:
    """Convert ``value`` (a ``google.protobuf.Value``) once, wherever a message carries it.

    For a Value that is the same on every call: a prebuilt answer.  Its
    conversion is kept on first use, for each layout of its maps met.
    """
    _SIZES.add(value.ByteSize())
    _CONTENTS.add(value.SerializeToString(deterministic=True))


_STRUCT = "google.protobuf.Struct"
_VALUE = "google.protobuf.Value"
_LIST_VALUE = "google.protobuf.ListValue"
_TIMESTAMP = "google.protobuf.Timestamp"
_NULL_VALUE = "google.protobuf.NullValue"


def _convert(message: Message) -> Any:
    descriptor = message.DESCRIPTOR
    plan = _PLANS.get(descriptor.full_name)
    if plan is None:
        plan = _PLANS[descriptor.full_name] = _plan(descriptor)
    return plan(message)


def _plan(descriptor: Any) -> Callable[[Message], Any]:
    """How one message type converts: a well-known type's own form, or field by field."""
    name = descriptor.full_name
    if name == _STRUCT:
        return _struct
    if name == _VALUE:
        return _value_field
    if name == _LIST_VALUE:
        return _list_value
    if name == _TIMESTAMP:
        return _timestamp
    if name.startswith("google.protobuf."):  # Any, Duration, wrappers, FieldMask, ...
        return _unsupported
    #: By field number (cheaper to read than ``full_name``; an extension is never planned).
    fields: dict[int, tuple[str, Converter, int]] = {}

    def regular(message: Message) -> dict[str, Any]:
        js: dict[str, Any] = {}
        for field, value in message.ListFields():
            entry = fields.get(field.number)
            if entry is None:
                if field.is_extension:
                    raise _Unsupported
                entry = fields[field.number] = _field_plan(field)
            json_name, convert, shape = entry
            if shape == _SINGLE:
                js[json_name] = convert(value)
            elif shape == _REPEATED:
                js[json_name] = [convert(item) for item in value]
            else:  # a map: json_format writes every key as a string
                js[json_name] = {_map_key(key): convert(value[key]) for key in value}
        return js

    return regular


_SINGLE, _REPEATED, _MAP = 0, 1, 2


def _field_plan(field: FieldDescriptor) -> tuple[str, Converter, int]:
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        return field.json_name, _converter(message_type.fields_by_name["value"]), _MAP
    shape = _REPEATED if field.is_repeated else _SINGLE
    return field.json_name, _converter(field), shape


def _map_key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _converter(field: FieldDescriptor) -> Converter:
    """The converter of one value of ``field`` (json_format's ``_FieldToJsonObject``)."""
    cpp = field.cpp_type
    if cpp == FieldDescriptor.CPPTYPE_MESSAGE:
        return _convert
    if cpp == FieldDescriptor.CPPTYPE_ENUM:
        enum = field.enum_type
        assert enum is not None
        if enum.full_name == _NULL_VALUE:
            return lambda value: None
        names = {number: value.name for number, value in enum.values_by_number.items()}
        if any(value.GetOptions().ListFields() for value in enum.values):
            return _unsupported  # a json_name option on an enum value: json_format's own
        return lambda value: names[value] if value in names else _unsupported(value)
    if cpp == FieldDescriptor.CPPTYPE_STRING:
        if field.type == FieldDescriptor.TYPE_BYTES:
            return _bytes
        return _same
    if cpp == FieldDescriptor.CPPTYPE_BOOL:
        return bool
    if cpp in (FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64):
        return str
    if cpp in (FieldDescriptor.CPPTYPE_DOUBLE, FieldDescriptor.CPPTYPE_FLOAT):
        return _finite_double if cpp == FieldDescriptor.CPPTYPE_DOUBLE else _unsupported
    return _same  # int32, uint32


def _same(value: Any) -> Any:
    return value


def _bytes(value: bytes) -> str:
    return base64.b64encode(value).decode("utf-8")


def _finite_double(value: float) -> float:
    if math.isfinite(value):
        return value
    raise _Unsupported  # "Infinity", "-Infinity", "NaN": json_format's spelling


def _unsupported(value: Any) -> Any:
    raise _Unsupported


#: ``Timestamp.ToJsonString``'s range (0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z).
_MIN_SECONDS, _MAX_SECONDS = -62135596800, 253402300799


def _timestamp(message: Any) -> str:
    """``Timestamp.ToJsonString``, the second's text from ``clock.second_text``.

    Same text (the fraction in 3, 6 or 9 digits as needed, ``Z``); a value out
    of range is left to ``ToJsonString`` and its error.
    """
    seconds, nanos = message.seconds, message.nanos
    if not (_MIN_SECONDS <= seconds <= _MAX_SECONDS and 0 <= nanos < 1_000_000_000):
        text: str = message.ToJsonString()
        return text
    prefix = second_text(seconds)
    if nanos == 0:
        return prefix + "Z"
    if nanos % 1_000_000 == 0:
        return f"{prefix}.{nanos // 1_000_000:03d}Z"
    if nanos % 1_000 == 0:
        return f"{prefix}.{nanos // 1_000:06d}Z"
    return f"{prefix}.{nanos:09d}Z"


def _struct(message: Any) -> dict[str, Any]:
    fields = message.fields
    return {key: _value(fields[key]) for key in fields}


def _list_value(message: Any) -> list[Any]:
    return [_value(value) for value in message.values]


def _value_field(message: Any) -> Any:
    """A Value a message holds (a Data Part's ``data``): a remembered one converted once."""
    if not _SIZES or message.ByteSize() not in _SIZES:
        return _value(message)
    layout = message.SerializeToString()
    converted = _REMEMBERED.get(layout)
    if converted is not None:
        return converted
    converted = _value(message)
    if (
        len(_REMEMBERED) < MAX_REMEMBERED
        and message.SerializeToString(deterministic=True) in _CONTENTS
    ):
        # A new layout of a remembered document (a copy): kept, and shared from now on.
        if isinstance(converted, dict):
            converted = Remembered(converted)
        _REMEMBERED[layout] = converted
    return converted


def _value(message: Any) -> Any:
    which = message.WhichOneof("kind")
    if which == "string_value":
        return message.string_value
    if which == "number_value":
        number = message.number_value
        if math.isfinite(number):
            return number
        raise _Unsupported  # json_format refuses it, with its own error
    if which == "struct_value":
        return _struct(message.struct_value)
    if which == "list_value":
        return _list_value(message.list_value)
    if which == "bool_value":
        return bool(message.bool_value)
    return None  # null_value, or no kind at all
