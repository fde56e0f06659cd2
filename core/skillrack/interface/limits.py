"""Resource limits the draft requires an implementation to enforce.

"An implementation MUST enforce limits on schema size, nesting, reference
depth, reference cycles, compilation time, payload size, and cache
consumption" and report ``resource_limit_exceeded`` when one is hit.  The
numbers are deployment choices (the draft sets no minima); these defaults are
generous for real network-management schemas and small enough that a hostile
plugin or peer cannot exhaust the host.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    #: Bytes of one schema's JCS form (one ``resolution.schema`` value).
    max_schema_bytes: int = 1_000_000
    #: Nesting depth of arrays/objects inside one schema.
    max_schema_depth: int = 64
    #: Longest chain of ``$ref``/``$dynamicRef`` hops followed without consuming instance.
    max_reference_depth: int = 32
    #: Seconds allowed to check and compile one schema.  Measured, so it is a
    #: soft limit: a compilation is refused after it overran, not interrupted.
    max_compile_seconds: float = 2.0
    #: Bytes of one instance (arguments, result, record) in its JSON form.
    max_instance_bytes: int = 4_000_000
    #: Nesting depth of one instance.
    max_instance_depth: int = 64
    #: Bytes of one whole Skill Interface Document.
    max_document_bytes: int = 4_000_000
    #: Entries a client keeps in its interface cache.
    max_cache_entries: int = 256
    #: Bytes (documents' canonical JSON) a client keeps in its interface cache.
    max_cache_bytes: int = 64_000_000


DEFAULT_LIMITS = Limits()


def json_depth(value: object, limit: int) -> int:
    """Nesting depth of a JSON value, computed iteratively and cut off at ``limit + 1``.

    Iterative so that a hostile, deeply nested value cannot overflow Python's
    stack while we are measuring it.
    """
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: list[object] = list(node.values())
        elif isinstance(node, list):
            children = list(node)
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest
