"""Values at a skill's ``sensitive`` pointers, hidden before a page shows arguments.

A skill declares ``sensitive`` JSON Pointers into its arguments (a password,
a community string): their values never appear in error details or logs, and
the console never shows them either.  :func:`masked` returns a copy of the
arguments with each such value replaced by :data:`MASK` (a whole subtree when
the pointer names an object or array); the original is left untouched.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from skillrack.interface.pointers import find, unescape

#: What the console shows instead of a sensitive value.
MASK = "••• (sensitive, not shown)"


def masked(arguments: Any, sensitive: Iterable[str]) -> Any:
    """A copy of ``arguments`` without the values at the ``sensitive`` pointers."""
    pointers = [p for p in sensitive if isinstance(p, str)]
    if not pointers:
        return arguments
    if "" in pointers:
        return MASK  # the whole value is sensitive
    shown = copy.deepcopy(arguments)
    for pointer in pointers:
        if not pointer.startswith("/"):
            continue
        parent_pointer, _, last = pointer.rpartition("/")
        parent = find(shown, parent_pointer)
        token = unescape(last)
        if isinstance(parent, dict) and token in parent:
            parent[token] = MASK
        elif isinstance(parent, list) and token.isdigit() and int(token) < len(parent):
            parent[int(token)] = MASK
    return shown


def masked_resources(resources: Mapping[str, Any], sensitive: Iterable[str]) -> dict[str, Any]:
    """An approval's resources (pointer -> value) with sensitive values hidden.

    A resource is hidden when its pointer is sensitive or lies inside a
    sensitive member; a sensitive member inside a resource is hidden in it.
    """
    pointers = [p for p in sensitive if isinstance(p, str)]
    shown: dict[str, Any] = {}
    for pointer, value in resources.items():
        if any(pointer == p or pointer.startswith(p + "/") or p == "" for p in pointers):
            shown[pointer] = MASK
            continue
        inner = [p[len(pointer) :] for p in pointers if p.startswith(pointer + "/")]
        shown[pointer] = masked(value, inner) if inner else value
    return shown
