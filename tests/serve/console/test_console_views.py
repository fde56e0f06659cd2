"""The console's pure parts: schema trees and masking (issue 17, item 1)."""

from __future__ import annotations

from typing import Any

from skillrack.serve.console.masking import MASK, masked, masked_resources
from skillrack.serve.console.schema_tree import MAX_DEPTH, MAX_NODES, SchemaNode, schema_tree


def names(node: SchemaNode) -> list[str]:
    return [child.name for child in node.children]


def test_members_show_types_required_enums_formats_and_descriptions() -> None:
    tree = schema_tree(
        {
            "type": "object",
            "required": ["host", "ghost"],
            "properties": {
                "host": {"type": "string", "format": "hostname", "description": "Where."},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}},
            },
        }
    )
    assert tree.types == ["object"]
    assert names(tree) == ["host", "mode", "tags", "ghost"]
    host, mode, tags, ghost = tree.children
    assert host.required and host.types == ["string"] and host.description == "Where."
    assert ("format", '"hostname"') in host.facts
    assert not mode.required and mode.enum == ['"a"', '"b"']
    assert names(tags) == ["items"] and ("maxLength", "8") in tags.children[0].facts
    assert ghost.required and ghost.note == "required"  # required but not described


def test_references_are_followed_and_recursion_ends() -> None:
    tree = schema_tree(
        {
            "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
            "$ref": "#/$defs/node",
        }
    )
    assert tree.types == ["object"] and names(tree) == ["next"]
    assert tree.children[0].note == "refers back to #/$defs/node (recursive)"
    outside = schema_tree({"$ref": "https://example.net/other.json"})
    assert outside.note == "https://example.net/other.json is not inside this schema"


def test_branches_and_booleans_are_labelled() -> None:
    tree = schema_tree({"oneOf": [{"const": 1}, True], "not": False})
    assert names(tree) == ["not", "oneOf[0]", "oneOf[1]"]
    assert tree.children[0].types == ["no value"] and tree.children[2].types == ["any value"]
    assert tree.children[1].types == ["const 1"]


def test_a_closed_object_says_no_other_members() -> None:
    """Issue 28, item 7: ``additionalProperties: false`` in words, not a "no value" branch."""
    tree = schema_tree(
        {
            "$defs": {"port": {"type": "object", "additionalProperties": False}},
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "a": {"$ref": "#/$defs/port"},
                "b": {"type": "object", "unevaluatedProperties": False},
                "c": {"type": "object", "additionalProperties": {"type": "integer"}},
                "d": {"type": "object"},
            },
        }
    )
    assert tree.closed and names(tree) == ["a", "b", "c", "d"]
    a, b, c, d = tree.children
    assert a.closed and b.closed and names(b) == []
    assert not c.closed and names(c) == ["additionalProperties"]  # a schema: shown as a branch
    assert not d.closed


def test_deep_and_wide_schemas_are_bounded() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(MAX_DEPTH * 3):
        deep = {"type": "object", "properties": {"x": deep}}
    node, depth = schema_tree(deep), 0
    while node.children:
        node, depth = node.children[0], depth + 1
    assert depth == MAX_DEPTH and "nested further" in node.note
    wide = {
        "type": "object",
        "properties": {
            f"m{i}": {"type": "object", "properties": {"a": {}}} for i in range(MAX_NODES)
        },
    }
    tree = schema_tree(wide)

    def count(n: SchemaNode) -> int:
        return 1 + sum(count(c) for c in n.children)

    assert count(tree) <= MAX_NODES + 1


def test_masking_hides_values_and_subtrees_and_leaves_the_original() -> None:
    arguments = {"user": "u", "auth": {"password": "p", "otp": ["1", "2"]}, "list": ["a", "b"]}
    shown = masked(arguments, ["/auth/password", "/list/1", "/absent", "not-a-pointer"])
    assert shown == {
        "user": "u",
        "auth": {"password": MASK, "otp": ["1", "2"]},
        "list": ["a", MASK],
    }
    assert arguments["auth"]["password"] == "p"
    assert masked(arguments, ["/auth"]) == {"user": "u", "auth": MASK, "list": ["a", "b"]}
    assert masked(arguments, [""]) == MASK
    assert masked({"a~b": 1, "c/d": 2}, ["/a~0b", "/c~1d"]) == {"a~b": MASK, "c/d": MASK}


def test_resources_are_masked_by_overlap_with_sensitive_pointers() -> None:
    resources = {"/device": "r1", "/auth": {"user": "u", "key": "k"}, "/auth/key": "k"}
    assert masked_resources(resources, ["/auth/key"]) == {
        "/device": "r1",
        "/auth": {"user": "u", "key": MASK},
        "/auth/key": MASK,
    }
    assert masked_resources(resources, [""]) == {p: MASK for p in resources}
