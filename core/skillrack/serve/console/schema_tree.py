"""A JSON Schema as a tree an operator reads: one node per member, branch or item.

The Skills page renders each node as a ``<details>`` element (collapsible
without a script): the member's name, its types, whether it is required, its
enum or const values, format, pattern, bounds and description.  ``$ref``
pointers inside the schema (``#/$defs/...``) are followed once per branch, so
a recursive schema ends in a node that says where it loops instead of
recursing; the tree is bounded in depth and in nodes, so a schema as large as
the interface limits allow still renders in bounded time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from skillrack.interface.pointers import MISSING, find

#: Deeper nodes are summarized ("nested further"), not expanded.
MAX_DEPTH = 24
#: Nodes one tree renders at most; the rest is summarized.
MAX_NODES = 2000

#: Keywords shown as "facts" of a node, in this order.
_FACTS = (
    "format",
    "pattern",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
    "contentMediaType",
    "default",
)
#: Keywords whose value is a list of subschemas, shown as labelled branches.
_BRANCHES = ("oneOf", "anyOf", "allOf", "prefixItems")
#: Keywords whose value is one subschema.
_SINGLE = (
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
)

#: Keywords whose ``false`` closes an object to the members it lists.
_CLOSING = ("additionalProperties", "unevaluatedProperties")


@dataclass
class SchemaNode:
    """One member (or branch) of a schema, ready for the template."""

    name: str
    types: list[str] = field(default_factory=list)
    required: bool = False
    description: str = ""
    title: str = ""
    enum: list[str] = field(default_factory=list)
    facts: list[tuple[str, str]] = field(default_factory=list)
    ref: str = ""
    note: str = ""
    #: ``additionalProperties: false`` (or ``unevaluatedProperties: false``): an object
    #: with no members but those listed, said in words rather than as a "no value" branch.
    closed: bool = False
    children: list[SchemaNode] = field(default_factory=list)


def _shown(value: Any) -> str:
    """A JSON value as the page shows it (compact JSON, strings quoted)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class _Builder:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.count = 0

    def node(
        self,
        name: str,
        schema: Any,
        *,
        required: bool = False,
        depth: int = 0,
        refs: frozenset[str] = frozenset(),
    ) -> SchemaNode:
        self.count += 1
        node = SchemaNode(name=name, required=required)
        if schema is True:
            node.types = ["any value"]
            return node
        if schema is False:
            node.types = ["no value"]
            return node
        if not isinstance(schema, Mapping):
            node.note = "not a schema"
            return node
        node.title = str(schema.get("title", ""))
        node.description = str(schema.get("description", ""))
        declared = schema.get("type")
        if isinstance(declared, str):
            node.types = [declared]
        elif isinstance(declared, list):
            node.types = [str(t) for t in declared]
        if "const" in schema:
            node.types.append(f"const {_shown(schema['const'])}")
        if isinstance(schema.get("enum"), list):
            node.enum = [_shown(v) for v in schema["enum"]]
        node.facts = [(k, _shown(schema[k])) for k in _FACTS if k in schema]
        node.closed = any(schema.get(k) is False for k in _CLOSING)
        if depth >= MAX_DEPTH or self.count >= MAX_NODES:
            if _has_children(schema):
                node.note = "nested further (see the raw interface document)"
            return node
        ref = schema.get("$ref")
        if isinstance(ref, str):
            node.ref = ref
            if ref in refs:
                node.note = f"refers back to {ref} (recursive)"
            else:
                target = find(self.root, ref[1:]) if ref.startswith("#") else MISSING
                if target is MISSING:
                    node.note = f"{ref} is not inside this schema"
                else:
                    child = self.node(ref, target, depth=depth + 1, refs=refs | {ref})
                    node.types = node.types or child.types
                    node.description = node.description or child.description
                    node.enum = node.enum or child.enum
                    node.facts = node.facts or child.facts
                    node.closed = node.closed or child.closed
                    node.children.extend(child.children)
        self.children(node, schema, depth, refs)
        return node

    def children(
        self, node: SchemaNode, schema: Mapping[str, Any], depth: int, refs: frozenset[str]
    ) -> None:
        """The members, items and branches of ``schema``, until the tree is full."""
        required_names = schema.get("required")
        wanted = set(required_names) if isinstance(required_names, list) else set()
        for name, subschema, required in _parts(schema, wanted):
            if self.count >= MAX_NODES:
                node.note = node.note or "more not shown (see the raw interface document)"
                return
            node.children.append(
                self.node(name, subschema, required=required, depth=depth + 1, refs=refs)
            )
        properties = schema.get("properties")
        listed = set(properties) if isinstance(properties, Mapping) else set()
        for member in sorted(str(m) for m in wanted - listed):
            node.children.append(SchemaNode(name=member, required=True, note="required"))


def _parts(schema: Mapping[str, Any], wanted: set[Any]) -> Iterator[tuple[str, Any, bool]]:
    """(label, subschema, required) of every member, item and branch, in reading order."""
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for member, subschema in properties.items():
            yield str(member), subschema, member in wanted
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping):
        for pattern, subschema in patterns.items():
            yield f"names matching {pattern}", subschema, False
    for keyword in _SINGLE:
        if keyword in _CLOSING and schema.get(keyword) is False:
            continue  # the node says "no other members" instead
        if isinstance(schema.get(keyword), Mapping | bool):
            yield keyword, schema[keyword], False
    for keyword in _BRANCHES:
        branches = schema.get(keyword)
        if isinstance(branches, list):
            for index, subschema in enumerate(branches):
                yield f"{keyword}[{index}]", subschema, False


def _has_children(schema: Mapping[str, Any]) -> bool:
    keywords = ("properties", "patternProperties", "$ref", *_SINGLE, *_BRANCHES)
    return any(k in schema for k in keywords)


def schema_tree(schema: Any, name: str = "(value)") -> SchemaNode:
    """The tree of ``schema`` (a JSON Schema document, its ``$defs`` resolved inside it)."""
    return _Builder(schema).node(name, schema)
