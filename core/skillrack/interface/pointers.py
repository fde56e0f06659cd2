"""JSON Pointers (RFC 6901): how a location is spelled, and the value it names.

Every pointer skillrack builds (an inline-schema refusal, a detail's
``instance_path`` or ``schema_path``, an unsafe number's location) and every
pointer it follows (a local ``$ref``, an authorization resource pointer) goes
through this module, so the escaping of ``~`` and ``/`` in member names has
exactly one implementation.

Following a pointer has two behaviours, with two names:

* :func:`resolve` raises :class:`PointerError` when the pointer names nothing:
  for pointers skillrack built itself, or that must name something (a
  ``$ref``), where a miss is an error to report;
* :func:`find` returns :data:`MISSING` instead: for pointers into data that may
  simply lack the member (an authorization policy's pointer into arguments),
  where absence is an answer, and where ``None`` cannot mean "absent" because
  it is JSON ``null``.

Both read array indices as RFC 6901 spells them (``0`` or digits without a
leading zero, within the array); ``-`` and anything else name nothing.
Nothing is percent-decoded: a ``$ref`` fragment is decoded by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from skillrack.errors import SkillrackError

#: An array index as RFC 6901 spells it: no sign, no leading zero.
_ARRAY_INDEX: Final = re.compile(r"0|[1-9][0-9]*")


class PointerError(SkillrackError, LookupError):
    """A JSON Pointer that names nothing in the document, or that is not a JSON Pointer."""

    def __init__(self, pointer: str, reason: str) -> None:
        super().__init__(f"the JSON Pointer {pointer!r} {reason}")
        self.pointer = pointer


class _Missing:
    """The type of :data:`MISSING`: one instance, false, with a readable repr."""

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


#: What :func:`find` returns when the pointer names nothing (``None`` is JSON ``null``).
MISSING: Final = _Missing()


def escape(token: object) -> str:
    """One reference token: ``~`` becomes ``~0`` and ``/`` becomes ``~1``."""
    return str(token).replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """The member name a reference token spells (``~1`` first, as RFC 6901 requires)."""
    return token.replace("~1", "/").replace("~0", "~")


def to_pointer(path: Iterable[object]) -> str:
    """RFC 6901 JSON Pointer for a sequence of member names and array indices."""
    return "".join("/" + escape(part) for part in path)


def find(root: Any, pointer: str) -> Any:
    """The value ``pointer`` names in ``root``, or :data:`MISSING` when it names nothing.

    A string that is not a JSON Pointer (non-empty, not starting with ``/``)
    names nothing too.
    """
    if pointer == "":
        return root
    if not pointer.startswith("/"):
        return MISSING
    node = root
    for raw in pointer[1:].split("/"):
        token = unescape(raw)
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and _ARRAY_INDEX.fullmatch(token) and int(token) < len(node):
            node = node[int(token)]
        else:
            return MISSING
    return node


def resolve(root: Any, pointer: str) -> Any:
    """The value ``pointer`` names in ``root``; :class:`PointerError` when it names nothing."""
    if pointer and not pointer.startswith("/"):
        raise PointerError(pointer, "does not start with '/'")
    value = find(root, pointer)
    if value is MISSING:
        raise PointerError(pointer, "names nothing in the document")
    return value
