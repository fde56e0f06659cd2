"""A schema's structure as 2020-12 sees it: its locations, resources and references.

The inline rules are all questions about structure: which values are schemas
(and which are data that merely look like one), which base URI is in effect
where, which ``$id`` names which embedded resource, where each ``$ref`` and
``$dynamicRef`` lands, and whether following references can go round without
consuming the instance.  This module answers them by walking the schema along
the 2020-12 applicator keywords and resolving references with ``referencing``
through a registry that refuses every retrieval.  It raises
:class:`~skillrack.interface.schemaerror.InlineSchemaError`; choosing which checks run,
in which order, is :mod:`skillrack.interface.inline`'s job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import referencing.exceptions
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from skillrack.errors import SkillrackError
from skillrack.interface.limits import Limits
from skillrack.interface.pointers import escape, unescape
from skillrack.interface.schemaerror import InlineSchemaError, limit_exceeded, refuse

#: Base URI for a root schema without ``$id``.  Relative references need some
#: base to resolve against; a URN cannot be mistaken for something retrievable.
SYNTHETIC_BASE: Final = "urn:skillrack:inline"

# The 2020-12 keywords whose values are schemas, split by what they apply to.
# "In place" subschemas see the same instance as their parent, so a reference
# cycle through them never terminates; the "consuming" ones move to a child of
# the instance, which bounds recursion by the instance's depth; the "unapplied"
# ones are only ever reached through a reference.  Together they are exactly
# the subresource keywords ``referencing`` crawls for 2020-12, so both walks see
# the same embedded resources.
_IN_PLACE_ONE: Final = ("not", "if", "then", "else")
_IN_PLACE_LIST: Final = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP: Final = ("dependentSchemas",)
_CONSUMING_ONE: Final = (
    "additionalProperties", "items", "contains", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties",
)  # fmt: skip
_CONSUMING_LIST: Final = ("prefixItems",)
_CONSUMING_MAP: Final = ("properties", "patternProperties")
_UNAPPLIED_ONE: Final = ("contentSchema",)
_UNAPPLIED_MAP: Final = ("$defs", "definitions")

_IN_PLACE: Final = frozenset(_IN_PLACE_ONE + _IN_PLACE_LIST + _IN_PLACE_MAP)
_ONE: Final = _IN_PLACE_ONE + _CONSUMING_ONE + _UNAPPLIED_ONE
_LIST: Final = _IN_PLACE_LIST + _CONSUMING_LIST
_MAP: Final = _IN_PLACE_MAP + _CONSUMING_MAP + _UNAPPLIED_MAP
#: Every subschema keyword: a schema object naming none of them (most are
#: leaves such as ``{"type": "string"}``) has no subschema, which one C-level
#: ``isdisjoint`` says without trying each keyword in turn.
_SLOTS: Final = frozenset(_ONE + _LIST + _MAP)
_REFERENCE_KEYWORDS: Final = ("$ref", "$dynamicRef")


class RetrievalRefused(SkillrackError):
    """Raised by the refusing registry; ``referencing`` reports it as Unresolvable."""


class RefusingRetriever:
    """A ``referencing`` retrieve callable that never retrieves and remembers who asked.

    Any URI not found inside the schema value reaches this callable; it is the
    single place where an external retrieval could have happened, so refusing
    here is what keeps both compile time and validation time offline, and the
    record is how the checks tell "went outside" from "points at nothing".
    """

    def __init__(self) -> None:
        self.attempts: list[str] = []

    def __call__(self, uri: str) -> Resource[Any]:
        self.attempts.append(uri)
        raise RetrievalRefused(uri)


def offline_registry(retriever: RefusingRetriever) -> Registry[Any]:
    """An empty registry whose only way to find an unknown URI is ``retriever``."""
    # referencing's attrs alias ``retrieve`` is invisible to mypy's attrs plugin.
    registry: Registry[Any] = Registry(retrieve=retriever)  # type: ignore[call-arg, unused-ignore]
    return registry


def schema_registry(
    root_uri: str, schema: Any, retriever: RefusingRetriever, *, crawl: bool = True
) -> Registry[Any]:
    """An offline registry holding ``schema`` at ``root_uri`` and its embedded resources.

    ``crawl=False`` when :func:`needs_crawl` says the schema has nothing to
    find: every reference then resolves from the root resource by pointer,
    and ``referencing`` still crawls by itself before it reports a URI or
    an anchor unknown, so no lookup can answer differently.
    """
    registry: Registry[Any] = offline_registry(retriever).with_resource(
        root_uri, DRAFT202012.create_resource(schema)
    )
    return registry.crawl() if crawl else registry


def needs_crawl(locations: list[Location]) -> bool:
    """Whether a crawl would find anything: an embedded ``$id``, ``$anchor`` or ``$dynamicAnchor``.

    The walk visits exactly the subresource keywords ``referencing`` crawls
    (see the keyword lists above), so its locations are what a crawl would see.
    """
    for location in locations:
        node = location.node
        if isinstance(node, dict) and (
            (location.pointer and "$id" in node) or "$anchor" in node or "$dynamicAnchor" in node
        ):
            return True
    return False


def root_base(schema: Any) -> str:
    """The root's base URI: its ``$id`` without fragment if absolute, else :data:`SYNTHETIC_BASE`.

    A relative root ``$id`` resolves against nothing (there is no retrieval
    URI), so the synthetic base stands in for it, as it does for a root
    without ``$id``.
    """
    root_id = schema.get("$id") if isinstance(schema, dict) else None
    if isinstance(root_id, str) and urlsplit(root_id).scheme:
        return urldefrag(root_id)[0]
    return SYNTHETIC_BASE


def _same_dialect(declared: object, dialect: str) -> bool:
    # An empty fragment names the same resource ("…/schema#" is "…/schema").
    return isinstance(declared, str) and declared.removesuffix("#") == dialect.removesuffix("#")


class Location(NamedTuple):
    """One place where the walk found a schema: its pointer, value and base URI.

    A named tuple rather than a frozen dataclass: the walk makes one per
    subschema of every schema compiled, and a tuple is several times
    cheaper to build.
    """

    pointer: str
    node: Any  # dict or bool
    base: str  # base URI in effect inside this schema (after its own $id)
    slot: str  # the keyword whose value holds this schema ("" for the root)


#: Each subschema keyword: its place in the order :func:`children` visits
#: them (every single-schema slot, then the lists, then the maps, each group
#: in the order of its tuple above), whether it holds one schema, a list or a
#: map, and its pointer prefix, escaped once.
_ONE_SLOT, _LIST_SLOT, _MAP_SLOT = 0, 1, 2
_SLOT_TABLE: Final[Mapping[str, tuple[int, int, str]]] = {
    keyword: (position, kind, "/" + escape(keyword) + ("" if kind == _ONE_SLOT else "/"))
    for position, (keyword, kind) in enumerate(
        [(keyword, _ONE_SLOT) for keyword in _ONE]
        + [(keyword, _LIST_SLOT) for keyword in _LIST]
        + [(keyword, _MAP_SLOT) for keyword in _MAP]
    )
}


def _position(keyword: str) -> int:
    return _SLOT_TABLE[keyword][0]


def children(node: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(keyword, pointer suffix, subschema) for every subschema slot of ``node``.

    Only well-shaped slots are followed: the meta-schema check reports the
    malformed ones, and the walk must not crash before it gets the chance.
    The slots the node has are found by one set intersection, not by asking
    for each of the 23 keywords in turn, and visited in the fixed order.
    """
    present = _SLOTS.intersection(node)
    for keyword in sorted(present, key=_position) if len(present) > 1 else present:
        _, kind, prefix = _SLOT_TABLE[keyword]
        value = node[keyword]
        if kind == _ONE_SLOT:
            yield keyword, prefix, value
        elif kind == _LIST_SLOT:
            if isinstance(value, list):
                for index, item in enumerate(value):
                    yield keyword, f"{prefix}{index}", item
        elif isinstance(value, dict):
            for name, item in value.items():
                yield keyword, prefix + escape(name), item


def _never() -> None:
    """The ``tick`` of a check run without a compile clock."""


def walk(
    schema: Any, root_uri: str, dialect: str, tick: Callable[[], None] = _never
) -> list[Location]:
    """Every schema location in document order, refusing a foreign ``$schema`` on the way.

    Only applicator slots are followed, so a ``"$ref"`` member inside ``enum``,
    ``const``, ``default``, ``examples`` or among ``properties``' names is data,
    never a reference.  Iterative, so a hostile schema cannot exhaust the stack
    (its depth is bounded anyway, but this code does not rely on that).

    Any ``$schema`` that differs from the dialect is refused, on a root, an
    embedded resource, or a plain subschema: jsonschema switches validator class
    on ``$schema`` wherever it finds one, so a plain subschema would otherwise
    be validated under another dialect too.

    ``tick`` (here and in the other checks) is called once per schema
    location: the compile clock's, which stops the work once the compile-time
    limit is exceeded (:mod:`skillrack.interface.compile_clock`).
    """
    found: list[Location] = []
    stack: list[tuple[str, Any, str, str]] = [("", schema, root_uri, "")]
    while stack:
        tick()
        pointer, node, parent_base, slot = stack.pop()
        if not isinstance(node, dict | bool):
            continue  # not a schema; the meta-schema check says so
        base = parent_base
        if isinstance(node, dict):
            if "$schema" in node and not _same_dialect(node["$schema"], dialect):
                raise refuse(
                    "foreign_dialect",
                    pointer + "/$schema",
                    f"$schema {node['$schema']!r} selects another dialect than the Schema "
                    f"Reference's {dialect}; embedded resources must use the same dialect",
                )
            if pointer and isinstance(node.get("$id"), str):
                base = urldefrag(urljoin(parent_base, node["$id"]))[0]
            found.append(Location(pointer, node, base, slot))
            if _SLOTS.isdisjoint(node):
                continue  # a leaf: children() would yield nothing
            subschemas = [
                (pointer + suffix, child, base, keyword)
                for keyword, suffix, child in children(node)
            ]
            stack.extend(reversed(subschemas))
        else:
            found.append(Location(pointer, node, base, slot))
    return found


class Resources(NamedTuple):
    """The schema resources of one schema, as :func:`check_ids` found them."""

    by_uri: dict[str, str]  # resource URI -> pointer of the schema that names it
    relative: dict[str, str]  # pointer of an embedded resource with a relative $id -> that $id


def check_ids(
    locations: list[Location], root_uri: str, tick: Callable[[], None] = _never
) -> Resources:
    """Refuse non-string or duplicate ``$id`` values; return the resources found.

    The draft asks an absolute URI in ``$id`` only of an embedded resource
    "used as a reference target", so a relative ``$id`` is noted here and
    judged by :func:`check_targets_identified` once the references are
    resolved: a resource nothing lands in may keep it.  The root is not an
    embedded resource and the draft puts no rule on its ``$id``.  A duplicate
    would make a reference ambiguous, so it is refused outright.
    """
    resources = {root_uri: ""}
    relative: dict[str, str] = {}
    for location in locations:
        tick()
        node = location.node
        if not isinstance(node, dict) or "$id" not in node:
            continue
        value = node["$id"]
        where = location.pointer + "/$id"
        if not isinstance(value, str):
            raise refuse(
                "embedded_resource_id", where, f"$id {value!r} is not a URI; $id must be a string"
            )
        if not location.pointer:
            continue  # the root's URI is root_uri already
        if not urlsplit(value).scheme:
            relative[location.pointer] = value
        if location.base in resources:
            raise refuse(
                "embedded_resource_id",
                where,
                f"$id {value!r} identifies more than one schema resource in this schema",
            )
        resources[location.base] = location.pointer
    return Resources(resources, relative)


def check_targets_identified(
    resources: Resources,
    references: Mapping[str, list[str]],
    tick: Callable[[], None] = _never,
) -> None:
    """Refuse a reference that lands in an embedded resource whose ``$id`` is relative.

    The draft: "Each embedded schema resource used as a reference target MUST
    identify itself with an absolute URI in $id".  A target belongs to the
    innermost resource whose pointer prefixes it, so an absolute resource
    nested in a relative one may be targeted, and a reference that reaches
    into a relative resource by JSON Pointer from outside uses it as a target
    just as one naming its ``$id`` does.  The pointer reported is the ``$id``.
    """
    if not resources.relative:
        return
    owners = sorted(resources.by_uri.values(), key=len, reverse=True)
    for source in sorted(references):
        for target in references[source]:
            tick()
            owner = next((p for p in owners if target == p or target.startswith(p + "/")), "")
            value = resources.relative.get(owner)
            if value is not None:
                raise refuse(
                    "embedded_resource_id",
                    owner + "/$id",
                    f"$id {value!r} is not an absolute URI, but the reference at {source!r} "
                    "lands in this embedded resource; a resource used as a reference target "
                    "must identify itself with an absolute URI in $id",
                )


def _bool_target(
    ref: str, base: str, resources: Mapping[str, str], nodes: Mapping[str, Any]
) -> str | None:
    """Canonical pointer of a reference that ``referencing`` resolved to ``true``/``false``.

    Booleans have no identity to look up, and only a JSON-Pointer fragment can
    reach one, so the fragment is re-walked the way ``referencing`` walks it
    (percent-decoded, ``~``-unescaped, array indices as integers) to find out
    where it landed.
    """
    uri, fragment = (base, ref[1:]) if ref.startswith("#") else urldefrag(urljoin(base, ref))
    if uri not in resources or not fragment.startswith("/"):
        return None
    pointer = resources[uri]
    node = nodes.get(pointer)
    for segment in unquote(fragment[1:]).split("/"):
        if isinstance(node, list):
            index = int(segment)
            index = index % len(node) if -len(node) <= index < 0 else index
            pointer, node = f"{pointer}/{index}", node[index]
        elif isinstance(node, dict):
            name = unescape(segment)
            pointer, node = f"{pointer}/{escape(name)}", node[name]
        else:
            return None
    return pointer


_REFERENCES: Final = frozenset(_REFERENCE_KEYWORDS)


class _Tables(NamedTuple):
    """What resolving references needs to know of the locations, built once per schema."""

    by_identity: dict[int, str]  # id() of a schema object -> its pointer
    nodes: dict[str, Any]  # pointer -> schema (objects and booleans)
    dynamic_anchors: dict[str, list[str]]  # $dynamicAnchor name -> pointers, document order

    @classmethod
    def of(cls, locations: list[Location]) -> _Tables:
        by_identity = {id(loc.node): loc.pointer for loc in locations if isinstance(loc.node, dict)}
        nodes = {loc.pointer: loc.node for loc in locations}
        dynamic_anchors: dict[str, list[str]] = {}
        for loc in locations:
            if isinstance(loc.node, dict) and isinstance(loc.node.get("$dynamicAnchor"), str):
                dynamic_anchors.setdefault(loc.node["$dynamicAnchor"], []).append(loc.pointer)
        return cls(by_identity, nodes, dynamic_anchors)


def _walk_pointer(root: Any, fragment: str) -> Any:
    """What ``referencing`` finds at a JSON-Pointer ``fragment`` of the root resource.

    ``Resource.pointer``'s walk, step for step (percent-decoded, any
    ``Sequence``, strings included, indexed by ``int``, ``~1`` then ``~0``
    unescaped), raising what it lets escape or wraps (``LookupError``,
    ``ValueError``, ``TypeError``), without the resolver and resource objects
    it builds at every step for the base URIs a caller may need later: only
    the value is used here.  For a ``#/...`` reference whose base is the root
    resource's, which the registry holds under that very URI, so no lookup
    or retrieval is involved (most references of a schema).
    """
    contents = root
    for segment in unquote(fragment[1:]).split("/"):
        if isinstance(contents, Sequence):
            contents = contents[int(segment)]
        else:
            contents = contents[segment.replace("~1", "/").replace("~0", "~")]
    return contents


def reference_edges(
    locations: list[Location],
    registry: Registry[Any],
    retriever: RefusingRetriever,
    resources: Mapping[str, str],
    tick: Callable[[], None] = _never,
) -> dict[str, list[str]]:
    """Resolve every ``$ref``/``$dynamicRef`` inside the schema; return pointer -> targets.

    Resolution uses ``referencing`` exactly as the validator will, so a
    reference accepted here resolves the same way during instance validation.
    Besides failing lookups, a lookup that lands somewhere that is not a schema
    (``#/properties`` is a map of schemas, ``#/enum/0`` is data, and
    ``referencing`` will even index into a string) is refused: the draft allows
    only the root, its subschemas and embedded resources as targets.

    A ``$dynamicRef`` whose target carries the matching ``$dynamicAnchor`` may be
    redirected at run time to any same-named dynamic anchor in the dynamic
    scope, so it gets an edge to each of them: the loop analysis must see every
    place it can lead.
    """
    edges: dict[str, list[str]] = {}
    tables: _Tables | None = None  # built at the first reference: most schemas have none
    for loc in locations:
        tick()
        if not isinstance(loc.node, dict) or _REFERENCES.isdisjoint(loc.node):
            continue
        if tables is None:
            tables = _Tables.of(locations)
        by_identity, nodes, dynamic_anchors = tables
        for keyword in _REFERENCE_KEYWORDS:
            ref = loc.node.get(keyword)
            if not isinstance(ref, str):
                continue  # absent; a non-string was refused by the meta-schema
            where = f"{loc.pointer}/{keyword}"
            asked = len(retriever.attempts)
            try:
                if ref.startswith("#/") and resources.get(loc.base) == "":
                    # Equal to referencing's lookup only because the meta-schema check
                    # ran first: every subschema slot on the way holds a schema.
                    contents = _walk_pointer(nodes[""], ref[1:])
                else:
                    contents = registry.resolver(base_uri=loc.base).lookup(ref).contents
            except (referencing.exceptions.Unresolvable, LookupError, ValueError, TypeError):
                # referencing lets ValueError (a non-integer array index) and
                # TypeError escape from JSON Pointer fragments; both mean "nowhere".
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
                name = unquote(urldefrag(ref)[1])
                if name and isinstance(contents, dict) and contents.get("$dynamicAnchor") == name:
                    targets.extend(dynamic_anchors.get(name, ()))
    return edges


def check_reference_graph(
    locations: list[Location],
    references: Mapping[str, list[str]],
    limits: Limits,
    tick: Callable[[], None] = _never,
) -> None:
    """Refuse reference cycles that consume no instance, and over-long reference chains.

    The graph joins each schema to its in-place subschemas (weight 0) and to its
    reference targets (weight 1, from :func:`reference_edges`); consuming
    keywords are left out, because they move to a smaller part of the instance
    and so always terminate.  A cycle in what is left would make validation (and
    jsonschema's unevaluated* bookkeeping, which follows the same edges) recurse
    forever.  With no cycle the graph is a DAG, and the heaviest path from a
    schema is the longest chain of reference hops evaluated on one instance
    value, which ``max_reference_depth`` bounds.

    Every schema is a starting point, not only the root, so an unreachable
    ``$defs`` cycle is refused as well: it is a defect in the document either way.
    The search is iterative and in document order, so the reported pointer is
    deterministic.
    """
    if not references and locations:
        # No reference: the graph is the schema's tree of in-place subschemas,
        # whose edges all lead to a longer pointer, so there is no cycle and
        # every chain has 0 hops (the search below would find exactly that).
        if limits.max_reference_depth < 0:
            raise _too_deep_references(locations[0].pointer)
        return
    edges: dict[str, list[tuple[str, int]]] = {}
    for loc in locations:
        tick()
        if not isinstance(loc.node, dict):
            continue
        out = (
            []
            if _IN_PLACE.isdisjoint(loc.node)
            else [
                (loc.pointer + suffix, 0)
                for keyword, suffix, _ in children(loc.node)
                if keyword in _IN_PLACE
            ]
        )
        out += [(target, 1) for target in references.get(loc.pointer, ())]
        edges[loc.pointer] = out

    on_stack: set[str] = set()
    depth: dict[str, int] = {}  # finished nodes: heaviest chain of hops from here
    # A schema with no edge out (most of them) is finished as soon as it is
    # reached, with 0 hops and never on the stack: it is marked so at once,
    # which is what pushing and popping it would do.
    for start in (loc.pointer for loc in locations):
        if start in depth:
            continue
        if not edges.get(start):
            depth[start] = 0
            continue
        stack: list[tuple[str, Iterator[tuple[str, int]]]] = [(start, iter(edges[start]))]
        on_stack.add(start)
        while stack:
            tick()
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
                # The draft ("Resource limits") lists reference cycles among the
                # limits reported as resource_limit_exceeded; the limit for a
                # cycle that consumes no instance is zero, as evaluating one
                # never ends.
                raise limit_exceeded(
                    "reference_loop",
                    target,
                    "this schema reaches itself through references without consuming any "
                    "part of the instance, so validation would never end",
                )
            if target not in depth:
                onward = edges.get(target)
                if not onward:
                    depth[target] = 0
                    continue
                on_stack.add(target)
                stack.append((target, iter(onward)))

    deepest = max(locations, key=lambda loc: depth.get(loc.pointer, 0))
    if depth.get(deepest.pointer, 0) > limits.max_reference_depth:
        raise _too_deep_references(deepest.pointer)


def _too_deep_references(pointer: str) -> InlineSchemaError:
    return limit_exceeded(
        "reference_too_deep",
        pointer,
        "the chain of references followed from this schema without consuming instance "
        "is longer than the reference-depth limit",
    )
