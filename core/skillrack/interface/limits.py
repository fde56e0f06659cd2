"""Resource limits the draft requires an implementation to enforce.

"An implementation MUST enforce limits on schema size, nesting, reference
depth, reference cycles, compilation time, payload size, and cache
consumption" and report ``resource_limit_exceeded`` when one is hit.  The
numbers are deployment choices (the draft sets no minima); these defaults are
generous for real network-management schemas and small enough that a hostile
plugin or peer cannot exhaust the host.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

#: The deepest JSON value one A2A Data Part carries, end to end, through a2a-sdk 1.3:
#: its value is a protobuf ``Value`` that protobuf parses with a nesting limit
#: (the derivation is :data:`skillrack.protocol.values.DATA_PART_DEPTH`'s, which
#: a test checks against protobuf itself).  Every depth limit below is lowered
#: to what this leaves, so that nothing legal under a configured limit fails
#: on the wire instead.
WIRE_DATA_DEPTH: Final = 31
#: An argument, result or record sits one object below its Data Part's root
#: (``{"arguments": ...}``, ``{"result": ...}``; records at the root).
MAX_CARRIED_INSTANCE_DEPTH: Final = WIRE_DATA_DEPTH - 1
#: A schema sits seven levels below the root of ``describe_skill``'s Data Part
#: (``result.interface.supporting_record_schemas[i].schema_reference.resolution.schema``).
MAX_CARRIED_SCHEMA_DEPTH: Final = WIRE_DATA_DEPTH - 7

#: The most an operator may configure each depth limit to, and why.  The
#: configuration loader refuses a higher value with an error naming the
#: maximum (``skillrack.host.config``): an operator who asked for 40 levels
#: must not believe 40 are enforced.  Code that builds :class:`Limits` itself
#: gets the value lowered instead (``__post_init__``).
DEPTH_CEILINGS: Final[Mapping[str, tuple[int, str]]] = {
    "max_schema_depth": (
        MAX_CARRIED_SCHEMA_DEPTH,
        "the deepest schema describe_skill's Data Part carries through a2a-sdk's protobuf",
    ),
    "max_instance_depth": (
        MAX_CARRIED_INSTANCE_DEPTH,
        "the deepest argument, result or record a Data Part carries through a2a-sdk's protobuf",
    ),
}


@dataclass(frozen=True)
class Limits:
    """The limits, with every depth lowered to what the wire carries (see ``__post_init__``)."""

    #: Bytes of one schema's JCS form (one ``resolution.schema`` value).
    max_schema_bytes: int = 1_000_000
    #: Nesting depth of arrays/objects inside one schema (at most
    #: :data:`MAX_CARRIED_SCHEMA_DEPTH`).
    max_schema_depth: int = MAX_CARRIED_SCHEMA_DEPTH
    #: Longest chain of ``$ref``/``$dynamicRef`` hops followed without consuming instance.
    max_reference_depth: int = 32
    #: Seconds allowed to check and compile one schema.  Enforced while it runs:
    #: the first check after the deadline stops the compilation
    #: (:mod:`skillrack.interface.compile_clock`).
    max_compile_seconds: float = 2.0
    #: Bytes of one instance (arguments, result, record) in its JSON form.
    max_instance_bytes: int = 4_000_000
    #: Nesting depth of one instance (at most :data:`MAX_CARRIED_INSTANCE_DEPTH`).
    max_instance_depth: int = MAX_CARRIED_INSTANCE_DEPTH
    #: Bytes of one whole Skill Interface Document.
    max_document_bytes: int = 4_000_000
    #: Entries a client keeps in its interface cache.
    max_cache_entries: int = 256
    #: Bytes (documents' canonical JSON) a client keeps in its interface cache.
    max_cache_bytes: int = 64_000_000

    def __post_init__(self) -> None:
        # A deeper configured value would let through schemas and instances that
        # then fail inside a2a-sdk (an internal error, or a task that never
        # exists); lowered here, every check that reads the limit enforces the
        # depth that holds, and reports resource_limit_exceeded.
        if self.max_schema_depth > MAX_CARRIED_SCHEMA_DEPTH:
            object.__setattr__(self, "max_schema_depth", MAX_CARRIED_SCHEMA_DEPTH)
        if self.max_instance_depth > MAX_CARRIED_INSTANCE_DEPTH:
            object.__setattr__(self, "max_instance_depth", MAX_CARRIED_INSTANCE_DEPTH)


DEFAULT_LIMITS = Limits()


def json_depth(value: object, limit: int) -> int:
    """Nesting depth of a JSON value, computed iteratively and cut off at ``limit + 1``.

    Iterative so that a hostile, deeply nested value cannot overflow Python's
    stack while we are measuring it; depth first, so that a value sharing
    sub-objects (a Python value, not parsed JSON) reaches the cut-off after
    ``limit`` steps rather than after visiting every path.  Only arrays and
    objects are put on the stack: the leaves, most of a schema's values,
    cannot make it deeper.
    """
    if not isinstance(value, dict | list):
        return 0
    deepest = 0
    stack: list[tuple[dict[Any, Any] | list[Any], int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        below = depth + 1
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, dict | list):
                push((child, below))
    return deepest
