"""Inline domain schemas: every rule the draft puts on ``resolution.schema``, then a validator.

Interface version 1.0 carries each domain schema inline, and the draft ("Deliver
schemas inline in version 1.0") turns that into hard rules: every ``$ref`` and
``$dynamicRef`` must land inside the same schema value, embedded resources need
an absolute ``$id`` and the same dialect, nothing may be fetched from the network
or the filesystem (the only outside content is a trusted local copy of the
dialect's meta-schema), and every ``format`` JSON Schema Validation defines is an
assertion.  "Resource limits" adds size, nesting, reference depth, reference
cycles and compilation time.

All of those are checked here, once, by :func:`compile_inline_schema`, so that
the assembler (checking its own documents) and the client (checking a document
it retrieved) cannot disagree.  A failure is an :class:`InlineSchemaError`
carrying a short machine ``rule`` and a JSON Pointer into the schema; the
document layer adds the prefix that locates the schema in the document.

The validator that comes out, :class:`CompiledSchema`, resolves references
through a registry that refuses retrieval exactly as the checks' registry did,
so instance validation cannot fetch anything either, and it reports failures as
the draft's ``details`` entries.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import referencing.exceptions
from jsonschema import (  # type: ignore[import-untyped, unused-ignore]
    Draft202012Validator,
    FormatChecker,
)
from jsonschema.exceptions import best_match  # type: ignore[import-untyped, unused-ignore]
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from .canonical import CanonicalizationError, canonical_bytes
from .errors import ConditionError, ErrorCode, ErrorDetail
from .limits import DEFAULT_LIMITS, Limits, json_depth

DRAFT_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"

#: Dialects a Schema Reference may name.  Only 2020-12: 2019-09 would need
#: ``$recursiveRef`` and array-form ``items`` in every walk below, for a dialect
#: the draft's examples do not use.
SUPPORTED_DIALECTS: frozenset[str] = frozenset({DRAFT_2020_12})

#: The formats JSON Schema Validation 2020-12 (section 7.3) defines.  The draft
#: makes exactly these assertions; any other ``format`` value stays an annotation.
DEFINED_FORMATS: frozenset[str] = frozenset(
    {
        "date-time", "date", "time", "duration",
        "email", "idn-email",
        "hostname", "idn-hostname",
        "ipv4", "ipv6",
        "uri", "uri-reference", "iri", "iri-reference", "uuid",
        "uri-template",
        "json-pointer", "relative-json-pointer",
        "regex",
    }
)  # fmt: skip

#: Base URI for a root schema without ``$id``.  Relative references need some
#: base to resolve against; a URN cannot be mistaken for something retrievable.
SYNTHETIC_BASE: Final = "urn:skillrack:inline"

#: Most details one validation reports, and most raw errors it looks at to find
#: them, so that a huge, thoroughly wrong instance costs bounded work.
MAX_DETAILS: Final = 20
_MAX_RAW_ERRORS: Final = 1000

_VALIDATOR_CLASSES: Final[Mapping[str, Any]] = {DRAFT_2020_12: Draft202012Validator}

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
_REFERENCE_KEYWORDS: Final = ("$ref", "$dynamicRef")


@dataclass(kw_only=True)
class InlineSchemaError(ConditionError):
    """An inline schema broke one of the draft's rules or one of our resource limits.

    ``rule`` names the rule so that callers and tests need not parse messages;
    ``pointer`` locates the problem inside the schema value (the document layer
    prefixes it with the schema's own location).  ``code`` is
    ``interface_invalid`` for rule violations and ``resource_limit_exceeded`` for
    limits, as the draft requires.
    """

    rule: str
    pointer: str = ""

    def __post_init__(self) -> None:
        # Exception text for logs and tracebacks; ``message`` stays caller-safe.
        where = f" at {self.pointer!r}" if self.pointer else ""
        Exception.__init__(self, f"{self.code.value} ({self.rule}{where}): {self.message}")


def _refuse(rule: str, pointer: str, message: str) -> InlineSchemaError:
    return InlineSchemaError(ErrorCode.INTERFACE_INVALID, message, rule=rule, pointer=pointer)


def _limit(rule: str, pointer: str, message: str) -> InlineSchemaError:
    # The draft lets the error response omit the threshold, so messages never name it.
    return InlineSchemaError(ErrorCode.RESOURCE_LIMIT_EXCEEDED, message, rule=rule, pointer=pointer)


def ensure_format_checkers() -> None:
    """Refuse to run when a defined format has no checker.

    jsonschema passes any ``format`` it has no checker for, and it only has
    checkers for several formats when its ``format-nongpl`` extra is installed.
    Without this check a broken install would silently stop asserting formats,
    which the draft forbids, so the host calls it at start-up (and every
    compilation calls it again, which costs a set difference).
    """
    missing = DEFINED_FORMATS - set(Draft202012Validator.FORMAT_CHECKER.checkers)
    if missing:
        raise RuntimeError(
            "jsonschema cannot check the format(s) "
            + ", ".join(sorted(missing))
            + "; the draft makes them assertions: install jsonschema[format-nongpl]"
        )


def _format_checker(validator_class: Any) -> Any:
    """The dialect's checker, narrowed to the defined formats.

    Narrowed so that a checker some other library registers globally for a
    vendor format cannot turn that format into an assertion: only the formats
    the draft names are asserted.
    """
    checker = FormatChecker(formats=())
    checker.checkers = {
        name: check
        for name, check in validator_class.FORMAT_CHECKER.checkers.items()
        if name in DEFINED_FORMATS
    }
    return checker


def _escape(token: object) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _pointer(path: Iterable[object]) -> str:
    """RFC 6901 JSON Pointer for a sequence of member names and array indices."""
    return "".join("/" + _escape(part) for part in path)


def _same_dialect(declared: object, dialect: str) -> bool:
    # An empty fragment names the same resource ("…/schema#" is "…/schema").
    return isinstance(declared, str) and declared.removesuffix("#") == dialect.removesuffix("#")


class _RetrievalRefused(Exception):
    """Raised by the refusing registry; ``referencing`` reports it as Unresolvable."""


class _RefusingRetriever:
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
        raise _RetrievalRefused(uri)


@dataclass(frozen=True)
class _Location:
    """One place where the walk found a schema: its pointer, value and base URI."""

    pointer: str
    node: Any  # dict or bool
    base: str  # base URI in effect inside this schema (after its own $id)
    slot: str  # the keyword whose value holds this schema ("" for the root)


def _children(node: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(keyword, pointer suffix, subschema) for every subschema slot of ``node``.

    Only well-shaped slots are followed: the meta-schema check reports the
    malformed ones, and the walk must not crash before it gets the chance.
    """
    for keyword in _ONE:
        if keyword in node:
            yield keyword, "/" + _escape(keyword), node[keyword]
    for keyword in _LIST:
        value = node.get(keyword)
        if isinstance(value, list):
            for index, item in enumerate(value):
                yield keyword, f"/{_escape(keyword)}/{index}", item
    for keyword in _MAP:
        value = node.get(keyword)
        if isinstance(value, dict):
            for name, item in value.items():
                yield keyword, f"/{_escape(keyword)}/{_escape(name)}", item


def _walk(schema: Any, root_uri: str, dialect: str) -> list[_Location]:
    """Every schema location in document order, refusing a foreign ``$schema`` on the way.

    Only applicator slots are followed, so a ``"$ref"`` member inside ``enum``,
    ``const``, ``default``, ``examples`` or among ``properties``' names is data,
    never a reference.  Iterative, so a hostile schema cannot exhaust the stack
    (its depth is bounded anyway, but this code does not rely on that).

    Any ``$schema`` that differs from the dialect is refused, on a root, an
    embedded resource, or a plain subschema: jsonschema switches validator class
    on ``$schema`` wherever it finds one, so a plain subschema would otherwise
    be validated under another dialect too.
    """
    found: list[_Location] = []
    stack: list[tuple[str, Any, str, str]] = [("", schema, root_uri, "")]
    while stack:
        pointer, node, parent_base, slot = stack.pop()
        if not isinstance(node, dict | bool):
            continue  # not a schema; the meta-schema check says so
        base = parent_base
        if isinstance(node, dict):
            if "$schema" in node and not _same_dialect(node["$schema"], dialect):
                raise _refuse(
                    "foreign_dialect",
                    pointer + "/$schema",
                    f"$schema {node['$schema']!r} selects another dialect than the Schema "
                    f"Reference's {dialect}; embedded resources must use the same dialect",
                )
            if pointer and isinstance(node.get("$id"), str):
                base = urldefrag(urljoin(parent_base, node["$id"]))[0]
            found.append(_Location(pointer, node, base, slot))
            children = [
                (pointer + suffix, child, base, keyword)
                for keyword, suffix, child in _children(node)
            ]
            stack.extend(reversed(children))
        else:
            found.append(_Location(pointer, node, base, slot))
    return found


def _check_meta_schema(validator_class: Any, schema: Any, dialect: str) -> None:
    """Validate the schema against the dialect's bundled meta-schema, offline.

    jsonschema's ``check_schema`` would use a registry that falls back to
    fetching unknown URIs; the meta-schemas only reference each other, but the
    refusing registry makes "never fetched" a property of the code rather than of
    the meta-schemas' content.  Formats are checked here too (``pattern`` must be
    a regex, ``$ref`` a URI reference), as ``check_schema`` would.
    """
    offline: Registry[Any] = Registry(
        retrieve=_RefusingRetriever()  # type: ignore[call-arg, unused-ignore]
    )
    meta = validator_class(
        validator_class.META_SCHEMA,
        registry=offline,
        format_checker=_format_checker(validator_class),
    )
    error = best_match(meta.iter_errors(schema))
    if error is not None:
        text = str(error.message)
        if len(text) > 200:
            text = text[:197] + "..."
        raise _refuse(
            "meta_schema",
            _pointer(error.absolute_path),
            f"the schema is not valid against the {dialect} meta-schema: {text}",
        )


def _check_ids(locations: list[_Location], root_uri: str) -> dict[str, str]:
    """Refuse relative or duplicate ``$id`` values; return resource URI -> pointer.

    The draft requires an absolute URI in every embedded resource's ``$id``
    ("used as a reference target"; we require it of every embedded resource, so
    that whether a resource is targeted never changes whether a schema is
    valid).  A duplicate would make a reference ambiguous, so it is refused too.
    """
    resources = {root_uri: ""}
    for location in locations:
        node = location.node
        if not isinstance(node, dict) or "$id" not in node:
            continue
        value = node["$id"]
        where = location.pointer + "/$id"
        if not isinstance(value, str) or not urlsplit(value).scheme:
            raise _refuse(
                "embedded_resource_id",
                where,
                f"$id {value!r} is not an absolute URI; inline schema resources must "
                "identify themselves with an absolute URI",
            )
        if not location.pointer:
            continue  # the root's URI is root_uri already
        if location.base in resources:
            raise _refuse(
                "embedded_resource_id",
                where,
                f"$id {value!r} identifies more than one schema resource in this schema",
            )
        resources[location.base] = location.pointer
    return resources


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
            name = segment.replace("~1", "/").replace("~0", "~")
            pointer, node = f"{pointer}/{_escape(name)}", node[name]
        else:
            return None
    return pointer


def _reference_edges(
    locations: list[_Location],
    registry: Registry[Any],
    retriever: _RefusingRetriever,
    resources: Mapping[str, str],
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
                continue  # absent; a non-string was refused by the meta-schema
            where = f"{loc.pointer}/{keyword}"
            asked = len(retriever.attempts)
            try:
                resolved = registry.resolver(base_uri=loc.base).lookup(ref)
            except (referencing.exceptions.Unresolvable, LookupError, ValueError, TypeError):
                # referencing lets ValueError (a non-integer array index) and
                # TypeError escape from JSON Pointer fragments; both mean "nowhere".
                if len(retriever.attempts) > asked:
                    raise _refuse(
                        "external_reference",
                        where,
                        f"{keyword} {ref!r} points outside the inline schema; version 1.0 "
                        "never retrieves schemas from the network or the filesystem",
                    ) from None
                raise _refuse(
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
                raise _refuse(
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


def _check_reference_graph(
    locations: list[_Location], reference_edges: Mapping[str, list[str]], limits: Limits
) -> None:
    """Refuse reference cycles that consume no instance, and over-long reference chains.

    The graph joins each schema to its in-place subschemas (weight 0) and to its
    reference targets (weight 1); consuming keywords are left out, because they
    move to a smaller part of the instance and so always terminate.  A cycle in
    what is left would make validation (and jsonschema's unevaluated* bookkeeping,
    which follows the same edges) recurse forever.  With no cycle the graph is a
    DAG, and the heaviest path from a schema is the longest chain of reference
    hops evaluated on one instance value, which ``max_reference_depth`` bounds.

    Every schema is a starting point, not only the root, so an unreachable
    ``$defs`` cycle is refused as well: it is a defect in the document either way.
    The search is iterative and in document order, so the reported pointer is
    deterministic.
    """
    edges: dict[str, list[tuple[str, int]]] = {}
    for loc in locations:
        if not isinstance(loc.node, dict):
            continue
        out = [
            (loc.pointer + suffix, 0)
            for keyword, suffix, _ in _children(loc.node)
            if keyword in _IN_PLACE
        ]
        out += [(target, 1) for target in reference_edges.get(loc.pointer, ())]
        edges[loc.pointer] = out

    on_stack: set[str] = set()
    depth: dict[str, int] = {}  # finished nodes: heaviest chain of hops from here
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
                raise _refuse(
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
        raise _limit(
            "reference_too_deep",
            deepest.pointer,
            "the chain of references followed from this schema without consuming instance "
            "is longer than the reference-depth limit",
        )


@dataclass(frozen=True)
class _Runtime:
    """What validation needs besides the validator: where each schema object sits.

    ``pointers`` maps ``id()`` of every schema object of the runtime copy to its
    pointer; ``booleans`` maps the stand-ins for ``true``/``false`` subschemas to
    the boolean and the keyword that held it.
    """

    pointers: Mapping[int, str]
    booleans: Mapping[int, tuple[bool, str]]


def _desugar_booleans(root: Any, locations: list[_Location]) -> tuple[Any, _Runtime]:
    """Replace boolean subschemas by their object equivalents, in place; return the new root.

    JSON Schema defines ``true`` as ``{}`` and ``false`` as ``{"not": {}}``.
    The rewrite exists because jsonschema loses the location of a failure
    inside a ``false`` subschema: its ``descend`` returns the "False schema
    does not allow" error before adding the member name, so
    ``{"properties": {"x": false}}`` reports the failure at the object instead
    of at ``/x``.  The object forms go through the normal path bookkeeping.  It
    runs after every check, on the already-verified structure: references were
    resolved against the original (a pointer *into* a former ``false`` was
    refused there), and the rewrite keeps every pointer, ``$id`` and anchor.
    """
    pointers: dict[int, str] = {}
    booleans: dict[int, tuple[bool, str]] = {}
    for loc in locations:
        if not isinstance(loc.node, bool):
            pointers[id(loc.node)] = loc.pointer
            continue
        stand_in: dict[str, Any] = {} if loc.node else {"not": {}}
        pointers[id(stand_in)] = loc.pointer
        booleans[id(stand_in)] = (loc.node, loc.slot)
        if not loc.pointer:
            root = stand_in
            continue
        parent_pointer, _, last = loc.pointer.rpartition("/")
        parent = _resolve_pointer(root, parent_pointer)
        if isinstance(parent, list):
            parent[int(last)] = stand_in
        else:
            parent[last.replace("~1", "/").replace("~0", "~")] = stand_in
    return root, _Runtime(pointers=pointers, booleans=booleans)


def _resolve_pointer(root: Any, pointer: str) -> Any:
    """The value at a canonical pointer produced by :func:`_walk`."""
    node = root
    for segment in pointer.split("/")[1:]:
        if isinstance(node, list):
            node = node[int(segment)]
        else:
            node = node[segment.replace("~1", "/").replace("~0", "~")]
    return node


def _too_deep() -> InlineSchemaError:
    return _limit("schema_too_deep", "", "the schema is nested more deeply than allowed")


def _check_size(schema: Any, limits: Limits) -> bytes:
    """Depth, then JCS form and size; returns the JCS bytes.

    Depth comes first because it is measured iteratively with a cut-off, which
    also guards the recursive JCS serializer against a hostile nesting or a
    cyclic Python value.
    """
    if json_depth(schema, limits.max_schema_depth) > limits.max_schema_depth:
        raise _too_deep()
    try:
        encoded = canonical_bytes(schema)
    except (CanonicalizationError, RecursionError) as exc:
        text = str(exc) if isinstance(exc, CanonicalizationError) else "nesting too deep"
        raise _refuse("not_json", "", f"the schema is not an I-JSON value: {text}") from None
    if len(encoded) > limits.max_schema_bytes:
        raise _limit("schema_too_large", "", "the schema is larger than allowed")
    return encoded


def compile_inline_schema(
    schema: Any, dialect: str, limits: Limits = DEFAULT_LIMITS
) -> CompiledSchema:
    """Apply every inline-schema rule of the draft and return a reusable validator.

    The checks run cheapest and most fundamental first (dialect, resource
    limits, dialect of every subschema, meta-schema, ``$id`` values, references,
    reference graph), so the first violation reported is the most basic one;
    the whole run is timed against ``max_compile_seconds``.

    The validator works on a private copy decoded from the schema's JCS bytes:
    the caller cannot change it afterwards, shared Python sub-objects cannot
    confuse the identity-based bookkeeping, and two schemas with one digest
    validate identically.

    Raises :class:`InlineSchemaError` on the first violation, and RuntimeError
    when jsonschema cannot assert every defined format (a broken install).
    """
    started = time.perf_counter()

    def check_clock() -> None:
        # Measured, not interrupted: the limit refuses a compilation that overran.
        if time.perf_counter() - started > limits.max_compile_seconds:
            raise _limit("compile_time", "", "checking and compiling the schema took too long")

    if not isinstance(dialect, str) or dialect not in SUPPORTED_DIALECTS:
        raise _refuse(
            "dialect",
            "",
            f"dialect {dialect!r} is not supported; supported: "
            + ", ".join(sorted(SUPPORTED_DIALECTS)),
        )
    ensure_format_checkers()
    validator_class = _VALIDATOR_CLASSES[dialect]

    private = json.loads(_check_size(schema, limits))
    root_id = private.get("$id") if isinstance(private, dict) else None
    root_uri = (
        urldefrag(root_id)[0] if isinstance(root_id, str) and urlsplit(root_id).scheme
        else SYNTHETIC_BASE
    )  # fmt: skip
    locations = _walk(private, root_uri, dialect)
    check_clock()

    try:
        _check_meta_schema(validator_class, private, dialect)
    except RecursionError:
        # Only reachable with a schema-depth limit raised far above the default.
        raise _too_deep() from None
    check_clock()

    resources = _check_ids(locations, root_uri)
    retriever = _RefusingRetriever()
    registry: Registry[Any] = (
        # referencing's attrs alias ``retrieve`` is invisible to mypy's attrs plugin.
        Registry(retrieve=retriever)  # type: ignore[call-arg, unused-ignore]
        .with_resource(root_uri, DRAFT202012.create_resource(private))
        .crawl()
    )
    reference_edges = _reference_edges(locations, registry, retriever, resources)
    check_clock()

    _check_reference_graph(locations, reference_edges, limits)

    runtime_root, runtime = _desugar_booleans(private, locations)
    runtime_registry: Registry[Any] = (
        Registry(retrieve=retriever)  # type: ignore[call-arg, unused-ignore]
        .with_resource(root_uri, DRAFT202012.create_resource(runtime_root))
        .crawl()
    )
    validator = validator_class(
        runtime_root, registry=runtime_registry, format_checker=_format_checker(validator_class)
    )
    check_clock()
    return CompiledSchema(
        schema=schema, dialect=dialect, limits=limits, _validator=validator, _runtime=runtime
    )


def _json_type(value: Any) -> str:
    """JSON Schema's name for the type of ``value`` (1.0 is an integer, as in JSON Schema)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _resugar(value: Any, booleans: Mapping[int, tuple[bool, str]]) -> Any:
    """``value`` with the stand-ins of :func:`_desugar_booleans` turned back into booleans.

    ``expected`` values come from the runtime copy (``anyOf`` reports its whole
    list of subschemas); a caller must see the schema as published.
    """
    if id(value) in booleans:
        return booleans[id(value)][0]
    if isinstance(value, dict):
        return {key: _resugar(item, booleans) for key, item in value.items()}
    if isinstance(value, list):
        return [_resugar(item, booleans) for item in value]
    return value


@contextlib.contextmanager
def _bounded() -> Iterator[None]:
    """Turn the ways instance validation can fail on us into the draft's conditions.

    jsonschema recurses once per schema and instance level; the limits keep
    that far below Python's stack, but a RecursionError is still caught rather
    than trusted away.  An unresolvable reference cannot happen for a schema
    that passed compilation; if it did, the schema is what is broken, not the
    instance, hence interface_invalid.
    """
    try:
        yield
    except RecursionError:
        raise ConditionError(
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            "validating the instance needs more nesting than allowed",
        ) from None
    except referencing.exceptions.Unresolvable:
        raise _refuse(
            "unresolvable_reference", "", "a reference did not resolve during validation"
        ) from None


def _is_related(path: str, hidden: str) -> bool:
    """True when one pointer is the other or lies below it."""
    return path == hidden or path.startswith(hidden + "/") or hidden.startswith(path + "/")


@dataclass(frozen=True, eq=False)
class CompiledSchema:
    """A schema that passed every inline rule, with the validator built from it.

    Immutable and reusable across requests; compare by identity.  ``schema`` is
    the value as given; validation uses a private copy (see
    :func:`compile_inline_schema`).  ``limits`` are the limits it was compiled
    under, applied again to each instance.
    """

    schema: Any
    dialect: str
    limits: Limits = DEFAULT_LIMITS
    _validator: Any = field(default=None, repr=False)
    _runtime: _Runtime = field(default_factory=lambda: _Runtime({}, {}), repr=False)

    def validate(self, instance: Any, *, sensitive: Iterable[str] = ()) -> tuple[ErrorDetail, ...]:
        """Return () if ``instance`` is valid, else at most 20 details in a stable order.

        A bad instance never raises: it yields details.  Raises ConditionError
        with ``resource_limit_exceeded`` when the instance is deeper or larger
        than the limits allow, or when validating it would exhaust the stack.

        ``sensitive`` holds JSON Pointers into the instance whose values must not
        be disclosed (the draft: details "MUST NOT disclose ... input values
        prohibited by local security policy").  A detail whose instance path is
        one of them, lies below one, or contains one (its actual value would
        include the sensitive member) carries no ``actual``; ``expected`` comes
        from the public schema and is kept.
        """
        hidden = tuple(sensitive)
        refusal = self._admit(instance)
        if refusal is not None:
            return (refusal,)
        details: dict[tuple[str, str, str], ErrorDetail] = {}
        with _bounded():
            errors = itertools.islice(self._validator.iter_errors(instance), _MAX_RAW_ERRORS)
            for error in errors:
                # best_match descends into anyOf/oneOf context only when one
                # branch is clearly the most relevant; otherwise it keeps the
                # combinator's own error rather than guess.
                for detail in self._details(best_match([error]), hidden):
                    key = (detail.instance_path, detail.schema_path or "", detail.keyword or "")
                    details.setdefault(key, detail)
        return tuple(details[key] for key in sorted(details)[:MAX_DETAILS])

    def is_valid(self, instance: Any) -> bool:
        """True when :meth:`validate` would return no details (same limits, same errors)."""
        if self._admit(instance) is not None:
            return False
        with _bounded():
            return next(iter(self._validator.iter_errors(instance)), None) is None

    def _admit(self, instance: Any) -> ErrorDetail | None:
        """Apply the instance limits; a non-JSON instance becomes one detail at the root."""
        limits = self.limits
        if json_depth(instance, limits.max_instance_depth) > limits.max_instance_depth:
            raise ConditionError(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED, "the instance is nested more deeply than allowed"
            )
        try:
            size = len(canonical_bytes(instance))
        except (CanonicalizationError, RecursionError):
            return ErrorDetail(instance_path="", keyword="json", expected="I-JSON value")
        if size > limits.max_instance_bytes:
            raise ConditionError(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED, "the instance is larger than allowed"
            )
        return None

    def _schema_pointer(self, error: Any) -> str:
        """Pointer to the failing keyword in the schema value.

        jsonschema's ``absolute_schema_path`` is an evaluation path: across a
        ``$ref`` it silently drops the ``$ref`` and continues with the target's
        keywords (``/properties/a/type`` for a type inside ``#/$defs/x``), which
        is not a location in the schema.  The schema object the error came from
        is known, though, and the compile step recorded where every schema
        object sits, so the real location is rebuilt from that.
        """
        where = self._runtime.pointers.get(id(error.schema))
        if where is None:  # not expected; the evaluation path is the best left
            return _pointer(error.absolute_schema_path)
        if id(error.schema) in self._runtime.booleans:
            return where  # the keyword is the stand-in's, not the schema's
        return f"{where}/{_escape(error.validator)}"

    def _details(self, error: Any, hidden: tuple[str, ...]) -> Iterator[ErrorDetail]:
        """The draft's detail entries for one (most specific) jsonschema error."""
        path = _pointer(error.absolute_path)
        schema_path = self._schema_pointer(error)
        keyword: str | None = error.validator
        instance = error.instance
        booleans = self._runtime.booleans
        # Stand-ins back to booleans, e.g. for ``unevaluatedProperties: false``.
        expected = _resugar(error.validator_value, booleans)
        stand_in = booleans.get(id(error.schema))
        if stand_in is not None:
            # A ``false`` subschema failed: name the keyword that held it.
            keyword = stand_in[1] or None
            expected = False

        def detail(at: str, expected: Any, actual: Any, has_actual: bool = True) -> ErrorDetail:
            show = has_actual and not any(_is_related(at, h) for h in hidden)
            return ErrorDetail(
                instance_path=at,
                schema_path=schema_path,
                keyword=keyword,
                expected=expected,
                actual=actual if show else None,
                has_actual=show,
            )

        if keyword == "required" and isinstance(instance, dict):
            # One entry per missing member, located where the member should be.
            for name in error.validator_value:
                if name not in instance:
                    yield detail(f"{path}/{_escape(name)}", name, None, has_actual=False)
        elif keyword == "type" and stand_in is None:
            # As in the draft's example: the actual JSON type, not the value.
            yield detail(path, expected, _json_type(instance))
        else:
            yield detail(path, expected, instance)
