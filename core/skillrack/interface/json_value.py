"""The JSON values a handler exchanges with the host, as types a type checker can follow.

A schema skill's handler receives its validated arguments as a JSON object
and returns its result as a JSON value; records, progress, input requests and
the caller's answers are JSON values too.  Naming them lets mypy refuse a
handler that returns a ``set`` or takes a ``str`` before a caller ever does.

The arrays and objects are the read-only ``Sequence`` and ``Mapping``, so that
a ``list[str]`` or a ``dict[str, int]`` a handler builds is a JSON value
without a cast (``list`` and ``dict`` are invariant, their read-only views are
not).  What the host hands a handler is what ``json`` parsed: ``dict`` and
``list`` underneath; a handler narrows with ``isinstance(value, Mapping)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

#: A JSON value: an object, an array, a string, a number, ``true``/``false`` or ``null``.
JsonValue: TypeAlias = (
    Mapping[str, "JsonValue"] | Sequence["JsonValue"] | str | int | float | bool | None
)

#: A JSON object as the host parses it: a schema skill's arguments.
JsonObject: TypeAlias = dict[str, JsonValue]
