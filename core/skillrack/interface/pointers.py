"""JSON Pointers (RFC 6901): how a location is spelled, in a schema and in an instance.

Every pointer skillrack reports (an inline-schema refusal, a detail's
``instance_path`` or ``schema_path``) is built here, so the escaping of ``~``
and ``/`` in member names has exactly one implementation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def escape(token: object) -> str:
    """One reference token: ``~`` becomes ``~0`` and ``/`` becomes ``~1``."""
    return str(token).replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """The member name a reference token spells (``~1`` first, as RFC 6901 requires)."""
    return token.replace("~1", "/").replace("~0", "~")


def to_pointer(path: Iterable[object]) -> str:
    """RFC 6901 JSON Pointer for a sequence of member names and array indices."""
    return "".join("/" + escape(part) for part in path)


def resolve_pointer(root: Any, pointer: str) -> Any:
    """The value at a canonical pointer, as ``schemawalk.walk`` produces.

    Canonical means array indices are plain decimal integers and nothing is
    percent-encoded; a reference's fragment is not canonical and is resolved by
    ``referencing`` instead.
    """
    node = root
    for segment in pointer.split("/")[1:]:
        node = node[int(segment)] if isinstance(node, list) else node[unescape(segment)]
    return node
