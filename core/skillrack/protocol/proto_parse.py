"""JSON dicts to protobuf messages, as ``json_format.ParseDict`` builds them, or nothing.

a2a-sdk's JSON-RPC dispatcher turns every request's ``params`` into its
protobuf request with ``json_format.ParseDict(params, ...,
ignore_unknown_fields=True)``: pure Python that looks each key up among the
fields, formats a path string for every member (for its error messages) and
walks a Data Part's value one ``Value`` at a time.  For an invocation that is
about 6% of the server's CPU.  :func:`parse_dict` builds the same message
(the same fields, in the same order, a Struct's members inserted in the same
order, so the same map layout) from a plan built once per message type.

The client parses its answers with it too (a completed Task, about 150 us
of ParseDict: :mod:`skillrack.client.jsonrpc_answers`).

It knows only the shapes A2A requests and answers use: regular messages, strings,
booleans, 32-bit integers, enums named by their JSON name, repeated strings
and messages, the well-known ``Struct`` and ``Value`` (filled as
:func:`skillrack.protocol.values.data_part` fills them) and ``Timestamp``
(a string: the UTC form every A2A agent writes, ``2026-12-05T10:00:00.123Z``,
read by :func:`_utc_seconds` without ``strptime``, which took a sixth of a
completed Task's parse; any other form through ``FromJsonString``, as
ParseDict does).  Anything else (a
key that is not a field, a field named twice, ``null``, a number for an enum,
a value of the wrong type, two members of a oneof, 64-bit integers, bytes,
maps, any other well-known type, nesting near json_format's recursion limit)
makes it answer None, and the caller runs ``ParseDict`` itself, which then
builds the message or raises its own error.  So nothing a caller can send is
read differently.  ``tests/protocol/test_proto_parse.py`` holds the two equal.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from typing import Any, TypeVar

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from skillrack.protocol.values import fill_value

M = TypeVar("M", bound=Message)

#: One field's filler: (message, JSON value, depth) -> None; raises :class:`_Declined`.
Filler = Callable[[Any, Any, int], None]

#: json_format's recursion limit is 100 messages; the fillers stop well before it.
_MAX_DEPTH = 40

_STRUCT = "google.protobuf.Struct"
_VALUE = "google.protobuf.Value"
_TIMESTAMP = "google.protobuf.Timestamp"

_INT32 = (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_UINT32)
_INT32_RANGE = {
    FieldDescriptor.CPPTYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.CPPTYPE_UINT32: (0, 2**32 - 1),
}


#: The UTC form of RFC 3339 that ``Timestamp.ToJsonString`` writes (0, 3, 6 or 9 digits
#: of fraction) and any fraction up to nanoseconds; ASCII digits only, as ``strptime``.
_UTC = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?Z"
)
_EPOCH = datetime.datetime(1970, 1, 1)


def _utc_seconds(text: str) -> tuple[int, int] | None:
    """``(seconds, nanos)`` as ``Timestamp.FromJsonString(text)`` sets them, or None.

    None for any other form (an offset, a lowercase letter, no fraction
    digits after the point) and for a date or time that does not exist: the
    caller then asks ``FromJsonString``, which reads or refuses it as always.
    """
    match = _UTC.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    try:
        moment = datetime.datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second)
        )
    except ValueError:
        return None
    elapsed = moment - _EPOCH
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    return elapsed.days * 86_400 + elapsed.seconds, nanos


class _Declined(Exception):
    """The value is not one of the shapes handled here: ParseDict decides."""


def parse_dict(value: Any, message: M) -> M | None:
    """``json_format.ParseDict(value, message, ignore_unknown_fields=True)``, or None.

    None means "not handled here" (``message`` may then hold part of the
    value): the caller parses with ``ParseDict`` into a fresh message.
    """
    try:
        _plan(message.DESCRIPTOR)(message, value, 1)
    except Exception:  # _Declined, or anything protobuf itself refuses
        return None
    return message


_PLANS: dict[str, Callable[[Any, Any, int], None]] = {}


def _plan(descriptor: Any) -> Callable[[Any, Any, int], None]:
    plan = _PLANS.get(descriptor.full_name)
    if plan is None:
        plan = _PLANS[descriptor.full_name] = _build(descriptor)
    return plan


def _build(descriptor: Any) -> Callable[[Any, Any, int], None]:
    """The filler of one regular message type: each key to its field's filler."""
    if descriptor.full_name.startswith("google.protobuf."):
        return _decline  # a well-known type is only ever reached through its field kind
    by_name: dict[str, tuple[FieldDescriptor, str | None]] = {}
    for field in descriptor.fields:
        oneof = field.containing_oneof
        entry = (field, oneof.name if oneof is not None else None)
        by_name[field.json_name] = entry
        by_name.setdefault(field.name, entry)
    fillers: dict[str, Filler] = {}

    def fill(message: Any, js: Any, depth: int) -> None:
        if type(js) is not dict or depth > _MAX_DEPTH:
            raise _Declined
        seen: set[str] = set()
        for key, item in js.items():
            entry = by_name.get(key)
            if entry is None or item is None:
                raise _Declined  # ignored or refused by ParseDict, or a field cleared
            field, oneof = entry
            name = field.name
            if name in seen or (oneof is not None and oneof in seen):
                raise _Declined
            seen.add(name)
            if oneof is not None:
                seen.add(oneof)
            filler = fillers.get(name)
            if filler is None:
                filler = fillers[name] = _field_filler(field)
            filler(message, item, depth)

    return fill


def _field_filler(field: FieldDescriptor) -> Filler:
    """How ParseDict sets one field from its JSON value, for the kinds handled here."""
    name = field.name
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        return _decline
    if field.is_repeated:
        if message_type is not None:
            if message_type.full_name.startswith("google.protobuf."):
                return _decline
            plan = _plan(message_type)

            def repeated_messages(message: Any, js: Any, depth: int) -> None:
                if type(js) is not list:
                    raise _Declined
                container = getattr(message, name)
                for item in js:
                    plan(container.add(), item, depth + 1)

            return repeated_messages
        scalar = _scalar(field)

        def repeated_scalars(message: Any, js: Any, depth: int) -> None:
            if type(js) is not list:
                raise _Declined
            getattr(message, name).extend([scalar(item) for item in js])

        return repeated_scalars
    if message_type is not None:
        full_name = message_type.full_name
        if full_name == _VALUE:

            def value(message: Any, js: Any, depth: int) -> None:
                target = getattr(message, name)
                target.SetInParent()
                fill_value(js, target, depth + 1)

            return value
        if full_name == _STRUCT:

            def struct(message: Any, js: Any, depth: int) -> None:
                if type(js) is not dict:
                    raise _Declined
                target = getattr(message, name)
                target.SetInParent()
                target.Clear()
                fields = target.fields
                for key in js:
                    fill_value(js[key], fields[key], depth + 2)

            return struct
        if full_name == _TIMESTAMP:

            def timestamp(message: Any, js: Any, depth: int) -> None:
                if type(js) is not str:
                    raise _Declined
                target = getattr(message, name)
                target.SetInParent()
                read = _utc_seconds(js)
                if read is None:
                    target.FromJsonString(js)  # what ParseDict calls; a ValueError declines
                else:
                    target.seconds, target.nanos = read

            return timestamp
        if full_name.startswith("google.protobuf."):
            return _decline
        plan = _plan(message_type)

        def sub_message(message: Any, js: Any, depth: int) -> None:
            target = getattr(message, name)
            target.SetInParent()
            plan(target, js, depth + 1)

        return sub_message
    scalar = _scalar(field)

    def single(message: Any, js: Any, depth: int) -> None:
        setattr(message, name, scalar(js))

    return single


def _scalar(field: FieldDescriptor) -> Callable[[Any], Any]:
    """One scalar value as ParseDict converts it, for the JSON types handled here."""
    cpp = field.cpp_type
    if cpp == FieldDescriptor.CPPTYPE_STRING and field.type != FieldDescriptor.TYPE_BYTES:
        return _string
    if cpp == FieldDescriptor.CPPTYPE_BOOL:
        return _bool
    if cpp in _INT32:
        low, high = _INT32_RANGE[cpp]

        def int32(js: Any) -> int:
            if type(js) is not int or not low <= js <= high:
                raise _Declined
            return js

        return int32
    if cpp == FieldDescriptor.CPPTYPE_ENUM:
        enum = field.enum_type
        assert enum is not None
        if enum.full_name.startswith("google.protobuf.") or any(
            value.GetOptions().ListFields() for value in enum.values
        ):
            return _decline_scalar  # NullValue, or a json_name option on a value
        numbers = {value.name: value.number for value in enum.values}

        def enum_value(js: Any) -> int:
            if type(js) is not str or js not in numbers:
                raise _Declined  # a number, or a name this build does not know
            return numbers[js]

        return enum_value
    return _decline_scalar  # 64-bit integers, floating point, bytes


def _string(js: Any) -> str:
    if type(js) is not str:
        raise _Declined
    return js


def _bool(js: Any) -> bool:
    if type(js) is not bool:
        raise _Declined
    return js


def _decline(message: Any, js: Any, depth: int) -> None:
    raise _Declined


def _decline_scalar(js: Any) -> Any:
    raise _Declined
