"""The schema walk's short cuts give exactly what the straightforward walks gave.

Assembly checks 1,500 schemas for 500 skills, so :mod:`skillrack.interface.schemawalk`
takes short cuts: a leaf schema is not asked for each subschema keyword,
the reference tables are built only once a reference turns up, a ``#/...``
reference from the root resource is followed without ``referencing``'s
resolver objects, a schema without references skips the graph search, and
:func:`~skillrack.interface.limits.json_depth` stacks only arrays and objects.
Each is held here to the straightforward walk (written out below), on
generated schemas full of references that land, miss, leave or loop: the same
locations, edges and depths, and the same refusal (rule, pointer, message).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
import referencing.exceptions
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from referencing import Registry

from skillrack.interface import schemawalk
from skillrack.interface.inline import DRAFT_2020_12
from skillrack.interface.limits import Limits, json_depth
from skillrack.interface.pointers import escape
from skillrack.interface.schemaerror import InlineSchemaError, limit_exceeded, refuse
from skillrack.interface.schemawalk import (
    _IN_PLACE,
    _REFERENCE_KEYWORDS,
    Location,
    RefusingRetriever,
    _bool_target,
    check_ids,
    needs_crawl,
    root_base,
    schema_registry,
)

# --- the straightforward walks the short cuts must agree with ----------------------------------

ONE_SLOTS = tuple((keyword, "/" + escape(keyword)) for keyword in schemawalk._ONE)
LIST_SLOTS = tuple((keyword, "/" + escape(keyword) + "/") for keyword in schemawalk._LIST)
MAP_SLOTS = tuple((keyword, "/" + escape(keyword) + "/") for keyword in schemawalk._MAP)


def old_children(node: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    for keyword, suffix in ONE_SLOTS:
        if keyword in node:
            yield keyword, suffix, node[keyword]
    for keyword, prefix in LIST_SLOTS:
        value = node.get(keyword)
        if isinstance(value, list):
            for index, item in enumerate(value):
                yield keyword, f"{prefix}{index}", item
    for keyword, prefix in MAP_SLOTS:
        value = node.get(keyword)
        if isinstance(value, dict):
            for name, item in value.items():
                yield keyword, prefix + escape(name), item


def old_json_depth(value: object, limit: int) -> int:
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            below: list[object] = list(node.values())
        elif isinstance(node, list):
            below = list(node)
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in below)
    return deepest


def old_walk(schema: Any, root_uri: str, dialect: str) -> list[Location]:
    found: list[Location] = []
    stack: list[tuple[str, Any, str, str]] = [("", schema, root_uri, "")]
    while stack:
        pointer, node, parent_base, slot = stack.pop()
        if not isinstance(node, dict | bool):
            continue
        base = parent_base
        if isinstance(node, dict):
            if "$schema" in node and not schemawalk._same_dialect(node["$schema"], dialect):
                raise refuse(
                    "foreign_dialect",
                    pointer + "/$schema",
                    f"$schema {node['$schema']!r} selects another dialect than the Schema "
                    f"Reference's {dialect}; embedded resources must use the same dialect",
                )
            if pointer and isinstance(node.get("$id"), str):
                base = schemawalk.urldefrag(schemawalk.urljoin(parent_base, node["$id"]))[0]
            found.append(Location(pointer, node, base, slot))
            subschemas = [
                (pointer + suffix, child, base, keyword)
                for keyword, suffix, child in old_children(node)
            ]
            stack.extend(reversed(subschemas))
        else:
            found.append(Location(pointer, node, base, slot))
    return found


def old_reference_edges(
    locations: list[Location],
    registry: Registry[Any],
    retriever: RefusingRetriever,
    resources: Mapping[str, str],
) -> dict[str, list[str]]:
    by_identity = {id(loc.node): loc.pointer for loc in locations if isinstance(loc.node, dict)}
    nodes = {loc.pointer: loc.node for loc in locations}
    dynamic_anchors: dict[str, list[str]] = {}
    for loc in locations:
        if isinstance(loc.node, dict) and isinstance(loc.node.get("$dynamicAnchor"), str):
            dynamic_anchors.setdefault(loc.node["$dynamicAnchor"], []).append(loc.pointer)
    edges: dict[str, list[str]] = {}
    for loc in locations:
        if not isinstance(loc.node, dict):
            continue
        for keyword in _REFERENCE_KEYWORDS:
            ref = loc.node.get(keyword)
            if not isinstance(ref, str):
                continue
            where = f"{loc.pointer}/{keyword}"
            asked = len(retriever.attempts)
            try:
                resolved = registry.resolver(base_uri=loc.base).lookup(ref)
            except (referencing.exceptions.Unresolvable, LookupError, ValueError, TypeError):
                if len(retriever.attempts) > asked:
                    raise refuse(
                        "external_reference",
                        where,
                        f"{keyword} {ref!r} points outside the inline schema; version 1.0 "
                        "never retrieves schemas from the network or the filesystem",
                    ) from None
                raise refuse(
                    "unresolvable_reference",
                    where,
                    f"{keyword} {ref!r} does not resolve inside the inline schema",
                ) from None
            contents = resolved.contents
            target: str | None
            if isinstance(contents, dict):
                target = by_identity.get(id(contents))
            elif isinstance(contents, bool):
                try:
                    target = _bool_target(ref, loc.base, resources, nodes)
                except (LookupError, ValueError, TypeError):
                    target = None
            else:
                target = None
            if target is None or target not in nodes:
                raise refuse(
                    "unresolvable_reference",
                    where,
                    f"{keyword} {ref!r} resolves to a value that is not a schema",
                )
            targets = edges.setdefault(loc.pointer, [])
            targets.append(target)
            if keyword == "$dynamicRef":
                name = schemawalk.unquote(schemawalk.urldefrag(ref)[1])
                if name and isinstance(contents, dict) and contents.get("$dynamicAnchor") == name:
                    targets.extend(dynamic_anchors.get(name, ()))
    return edges


def old_check_reference_graph(
    locations: list[Location], references: Mapping[str, list[str]], limits: Limits
) -> None:
    edges: dict[str, list[tuple[str, int]]] = {}
    for loc in locations:
        if not isinstance(loc.node, dict):
            continue
        out = [
            (loc.pointer + suffix, 0)
            for keyword, suffix, _ in old_children(loc.node)
            if keyword in _IN_PLACE
        ]
        out += [(target, 1) for target in references.get(loc.pointer, ())]
        edges[loc.pointer] = out
    on_stack: set[str] = set()
    depth: dict[str, int] = {}
    for start in (loc.pointer for loc in locations):
        if start in depth:
            continue
        stack: list[tuple[str, Iterator[tuple[str, int]]]] = [(start, iter(edges.get(start, ())))]
        on_stack.add(start)
        while stack:
            node, pending = stack[-1]
            step = next(pending, None)
            if step is None:
                stack.pop()
                on_stack.discard(node)
                depth[node] = max(
                    (weight + depth[target] for target, weight in edges.get(node, ())),
                    default=0,
                )
                continue
            target = step[0]
            if target in on_stack:
                raise limit_exceeded(
                    "reference_loop",
                    target,
                    "this schema reaches itself through references without consuming any "
                    "part of the instance, so validation would never end",
                )
            if target not in depth:
                on_stack.add(target)
                stack.append((target, iter(edges.get(target, ()))))
    deepest = max(locations, key=lambda loc: depth.get(loc.pointer, 0))
    if depth.get(deepest.pointer, 0) > limits.max_reference_depth:
        raise limit_exceeded(
            "reference_too_deep",
            deepest.pointer,
            "the chain of references followed from this schema without consuming instance "
            "is longer than the reference-depth limit",
        )


# --- generated schemas with references --------------------------------------------------------

REFS = [
    "#", "#/$defs/a", "#/$defs/b", "#/$defs/a/not", "#/$defs/a/allOf/0", "#/$defs/a/allOf/-1",
    "#/$defs/a/allOf/x", "#/$defs/a/allOf/9", "#/properties/p", "#/properties", "#/enum/0",
    "#/$defs/missing", "#/$defs/a/type", "#/$defs/a/type/0", "#/%24defs/a", "#/$defs/a~1b",
    "#/$defs/a~0b", "#/$defs/a/const/k", "#/allOf/0", "#/allOf/0/not", "#/not", "#/items",
    "#/$defs/e", "#/$defs/e/$defs/a", "urn:e", "urn:e#/$defs/a", "urn:e#/not", "#a", "#meta",
    "urn:other#/x", "http://example.com/x", "rel", "#/$defs/a/minimum", "#/$defs/t", "#/$defs/f",
    "#/$defs/t/x", "#/dependentSchemas/d", "#/$defs/a/properties/q", "#/$defs/a/items",
]  # fmt: skip
#: References that usually land, so that edges and graphs are common, not only refusals.
LANDING = ["#", "#/$defs/a", "#/$defs/b", "#/$defs/d", "#/allOf/0", "#/properties/p", "#/not"]


def schema_values(depth: int) -> Any:
    refs = st.sampled_from(REFS + LANDING * 5)
    reference = st.fixed_dictionaries({}, optional={"$ref": refs, "$dynamicRef": refs})
    leaf = (
        st.booleans()
        | reference
        | st.fixed_dictionaries(
            {},
            optional={
                "type": st.sampled_from(["string", ["integer"], 3]),
                "$anchor": st.just("a"),
                "$dynamicAnchor": st.sampled_from(["meta", "a"]),
                "enum": st.just([{"$ref": "#"}]),
                "const": st.just({"k": 1}),
                "minimum": st.just(1),
            },
        )
    )
    if depth == 0:
        return leaf
    inner = schema_values(depth - 1)
    refs = st.sampled_from(REFS + LANDING * 5)
    members = st.sampled_from(["a", "b", "p", "q", "d", "e", "t", "f", "a/b", "a~b", "x"])
    node = st.fixed_dictionaries(
        {},
        optional={
            **{keyword: inner for keyword in ("not", "if", "then", "items")},
            "$ref": refs,
            "$dynamicRef": refs,
            "$dynamicAnchor": st.sampled_from(["meta", "a"]),
            "allOf": st.lists(inner, max_size=3),
            "anyOf": st.lists(inner, max_size=2),
            "properties": st.dictionaries(members, inner, max_size=3),
            "$defs": st.dictionaries(members, inner, max_size=4),
            "dependentSchemas": st.dictionaries(members, inner, max_size=2),
            "type": st.just("object"),
        },
    )
    # An embedded resource now and then (a relative or repeated $id is refused early).
    resource = st.builds(
        lambda node, uri: {**node, "$id": uri} if isinstance(node, dict) else node,
        node,
        st.sampled_from(["urn:e", "urn:f", "rel"]),
    )
    return leaf | node | resource if depth == 2 else leaf | node


def with_targets(inner: Any) -> Any:
    """A root holding the places :data:`LANDING` names, each a generated schema."""
    return st.builds(
        lambda a, b, d, p, zero, rest, extra: {
            "$defs": {"a": a, "b": b, "d": d},
            "properties": {"p": p},
            "allOf": [zero],
            "not": rest,
            **extra,
        },
        *[inner] * 6,
        st.fixed_dictionaries(
            {}, optional={"$ref": st.sampled_from(REFS), "$dynamicAnchor": st.just("meta")}
        ),
    )


SCHEMAS = schema_values(3) | with_targets(schema_values(2))


def outcome(call: Callable[[], Any]) -> Any:
    try:
        return ("ok", call())
    except InlineSchemaError as exc:
        return ("refused", exc.rule, exc.pointer, exc.message, exc.code)


def locations_of(schema: Any) -> tuple[list[Location], str]:
    private = json.loads(json.dumps(schema))
    root_uri = root_base(private)
    return schemawalk.walk(private, root_uri, DRAFT_2020_12), root_uri


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    node=st.dictionaries(
        st.sampled_from([*sorted(schemawalk._SLOTS), "type", "a/b"]),
        SCHEMAS | st.lists(SCHEMAS, max_size=3) | st.just(3),
        max_size=6,
    )
)
@pytest.mark.slow
def test_children_as_before(node: dict[str, Any]) -> None:
    """Every slot a node has (well-shaped or not), in the fixed order, with its pointer suffix."""
    assert list(schemawalk.children(node)) == list(old_children(node))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMAS)
@pytest.mark.slow
def test_walk_edges_and_graph_as_before(schema: Any) -> None:
    private = json.loads(json.dumps(schema))
    root_uri = root_base(private)
    assert outcome(lambda: schemawalk.walk(private, root_uri, DRAFT_2020_12)) == outcome(
        lambda: old_walk(private, root_uri, DRAFT_2020_12)
    )
    locations = old_walk(private, root_uri, DRAFT_2020_12)
    try:
        resources = check_ids(locations, root_uri)
    except InlineSchemaError:
        return
    crawl = needs_crawl(locations)
    old_retriever, new_retriever = RefusingRetriever(), RefusingRetriever()
    old_registry = schema_registry(root_uri, private, old_retriever, crawl=crawl)
    new_registry = schema_registry(root_uri, private, new_retriever, crawl=crawl)
    new = outcome(
        lambda: schemawalk.reference_edges(locations, new_registry, new_retriever, resources.by_uri)
    )
    old = outcome(
        lambda: old_reference_edges(locations, old_registry, old_retriever, resources.by_uri)
    )
    assert new == old
    if new[0] != "ok":
        return
    for limit in (-1, 0, 1, 2, 32):
        limits = Limits(max_reference_depth=limit)
        assert outcome(
            lambda limits=limits: schemawalk.check_reference_graph(locations, new[1], limits)
        ) == outcome(lambda limits=limits: old_check_reference_graph(locations, new[1], limits))


def verdict(schema: Any) -> str:
    """ "ok", or the rule refusing the schema (its references at a reference depth of 0)."""
    try:
        locations, root_uri = locations_of(schema)
        resources = check_ids(locations, root_uri)
        retriever = RefusingRetriever()
        registry = schema_registry(root_uri, locations[0].node, retriever)
        edges = schemawalk.reference_edges(locations, registry, retriever, resources.by_uri)
        schemawalk.check_targets_identified(resources, edges)
        schemawalk.check_reference_graph(locations, edges, Limits(max_reference_depth=0))
    except InlineSchemaError as exc:
        return exc.rule
    return "ok"


@pytest.mark.parametrize(
    "rule",
    [
        "ok",
        "unresolvable_reference",
        "external_reference",
        "reference_loop",
        "reference_too_deep",
    ],
)
@pytest.mark.slow
def test_the_generated_schemas_reach_every_outcome(rule: str) -> None:
    """The property above is worth something only if references land, miss, leave and loop."""
    find(
        SCHEMAS,
        lambda schema: verdict(schema) == rule,
        settings=settings(max_examples=2_000, database=None),
    )


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=40,
)


@settings(max_examples=200, deadline=None)
@given(value=JSON, limit=st.integers(-1, 8))
@pytest.mark.slow
def test_json_depth_as_before(value: Any, limit: int) -> None:
    assert json_depth(value, limit) == old_json_depth(value, limit)


@pytest.mark.parametrize("limit", [0, 3, 24])
def test_json_depth_of_shared_sub_objects_stops_at_the_limit(limit: int) -> None:
    """A Python value sharing its sub-objects has 2**40 paths; depth first reaches the cut-off."""
    value: Any = []
    for _ in range(40):
        value = [value, {"k": value}]
    assert json_depth(value, limit) == old_json_depth(value, limit) == limit + 1
