"""Inline domain schemas: every rule the draft puts on ``resolution.schema``, then a validator.

Interface version 1.0 carries each domain schema inline, and the draft ("Deliver
schemas inline in version 1.0") turns that into hard rules: every ``$ref`` and
``$dynamicRef`` must land inside the same schema value, an embedded resource
used as a reference target needs an absolute ``$id``, every one the same
dialect, nothing may be fetched from the network or the filesystem (the only
outside content is a trusted local copy of the dialect's meta-schema), and
every ``format`` JSON Schema Validation defines is an assertion.  "Resource
limits" adds size, nesting, reference depth, reference cycles and compilation
time.

All of those are checked here, once, by :func:`compile_inline_schema`, so that
the assembler (checking its own documents) and the client (checking a document
it retrieved) cannot disagree.  A failure is an :class:`InlineSchemaError`
carrying a short machine ``rule`` and a JSON Pointer into the schema; the
document layer adds the prefix that locates the schema in the document.

This module decides which checks run and in which order; the structural ones
(locations, ``$id`` values, references, the reference graph) live in
:mod:`skillrack.interface.schemawalk`.  The validator that comes out,
:class:`~skillrack.interface.validation.CompiledSchema`, resolves references through a
registry that refuses retrieval exactly as the checks' registry did, so
instance validation cannot fetch anything either, and it reports failures as
the draft's ``details`` entries (see :mod:`skillrack.interface.validation`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

from jsonschema import FormatChecker  # type: ignore[import-untyped, unused-ignore]
from jsonschema.exceptions import best_match  # type: ignore[import-untyped, unused-ignore]

from skillrack.interface.bounded_validator import BoundedValidator
from skillrack.interface.canonical import CanonicalizationError, canonical_bytes
from skillrack.interface.compile_clock import CompileClock, clocked_meta_validator, running
from skillrack.interface.formats import CHECKERS, bounded_checkers
from skillrack.interface.limits import DEFAULT_LIMITS, Limits, json_depth
from skillrack.interface.meta_check import passes_meta_schema
from skillrack.interface.patterns import check_pattern
from skillrack.interface.pointers import escape, to_pointer
from skillrack.interface.schemaerror import InlineSchemaError, limit_exceeded, refuse
from skillrack.interface.schemawalk import (
    Location,
    RefusingRetriever,
    check_ids,
    check_reference_graph,
    check_targets_identified,
    needs_crawl,
    reference_edges,
    root_base,
    schema_registry,
    walk,
)
from skillrack.interface.validation import CompiledSchema, desugar_booleans

__all__ = [
    "DEFINED_FORMATS",
    "DRAFT_2020_12",
    "SUPPORTED_DIALECTS",
    "CompiledSchema",
    "InlineSchemaError",
    "compile_inline_schema",
    "ensure_format_checkers",
]

DRAFT_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"

#: Dialects a Schema Reference may name.  Only 2020-12: 2019-09 would need
#: ``$recursiveRef`` and array-form ``items`` in every walk of
#: :mod:`skillrack.interface.schemawalk`, for a dialect the draft's examples do not use.
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

#: Draft 2020-12 with its pattern matching under a time limit (``skillrack.interface.patterns``).
_VALIDATOR_CLASSES: Final[Mapping[str, Any]] = {DRAFT_2020_12: BoundedValidator}


def ensure_format_checkers() -> None:
    """Refuse to run when a defined format has no checker.

    jsonschema passes any ``format`` it has no checker for, and the draft makes
    every defined format an assertion, so a format missing from
    :data:`skillrack.interface.formats.CHECKERS` would silently stop being
    checked.  The host calls this at start-up (and every compilation calls it
    again, which costs a set difference).
    """
    missing = DEFINED_FORMATS - set(CHECKERS)
    if missing:
        raise RuntimeError(
            "skillrack has no checker for the format(s) "
            + ", ".join(sorted(missing))
            + "; the draft makes them assertions (skillrack.interface.formats.CHECKERS)"
        )


_FORMAT_CHECKERS: dict[Any, Any] = {}


def _format_checker(validator_class: Any) -> Any:
    """The dialect's checker: skillrack's checkers for the defined formats, and no others.

    Not jsonschema's per-dialect table, so that a checker some other library
    registers globally for a vendor format cannot turn that format into an
    assertion: only the formats the draft names are asserted.  Built once per
    dialect; the bounded checkers hold no state of their own.
    """
    checker = _FORMAT_CHECKERS.get(validator_class)
    if checker is None:
        checker = FormatChecker(formats=())
        # Each under the size cap and the time budget, never raising
        # (:mod:`skillrack.interface.formats`).
        checker.checkers = bounded_checkers(DEFINED_FORMATS)
        _FORMAT_CHECKERS[validator_class] = checker
    return checker


_PATTERN_KEYWORDS: Final = frozenset({"pattern", "patternProperties"})


def _check_patterns(locations: list[Location], tick: Callable[[], None]) -> None:
    """Every pattern compiles for matching, and none is matched where no time limit applies.

    The meta-schema's ``regex`` format has already read each pattern as
    ECMA-262; matching uses the ``regex`` package, under a time limit
    (``skillrack.interface.patterns``), so its rewrite must compile there too.  jsonschema
    evaluates ``unevaluatedProperties`` by matching ``patternProperties`` with
    ``re`` itself, out of reach of that limit, so a schema that has both is
    refused rather than left open to a pattern that never finishes.
    """
    unevaluated = next(
        (
            loc
            for loc in locations
            if isinstance(loc.node, dict) and "unevaluatedProperties" in loc.node
        ),
        None,
    )
    for loc in locations:
        tick()
        node = loc.node
        if not isinstance(node, dict) or _PATTERN_KEYWORDS.isdisjoint(node):
            continue  # nothing below would be found
        found: list[tuple[str, Any]] = []
        if isinstance(node.get("pattern"), str):
            found.append((f"{loc.pointer}/pattern", node["pattern"]))
        listed = node.get("patternProperties")
        if isinstance(listed, dict):
            if listed and unevaluated is not None:
                raise refuse(
                    "pattern_unbounded",
                    f"{loc.pointer}/patternProperties",
                    "patternProperties in a schema that uses unevaluatedProperties (at "
                    f"{unevaluated.pointer or '/'}) cannot be matched under a time limit; "
                    "use additionalProperties or propertyNames instead",
                )
            found += [(f"{loc.pointer}/patternProperties/{escape(key)}", key) for key in listed]
        for pointer, pattern in found:
            problem = check_pattern(pattern)
            if problem is not None:
                raise refuse("pattern", pointer, f"pattern {pattern!r} cannot be used: {problem}")


class _MetaVerdicts:
    """Schemas already found valid against their meta-schema, by dialect, limits and JCS digest.

    The meta-schema check is most of a compilation (about 70% of assembling a
    skill), and a plugin's skills often share schemas.  Its verdict depends
    only on the dialect and the schema's value, and two values with one JCS
    form are the same value, so a pass is remembered by the SHA-256 of the JCS
    bytes.  Only passes are kept: a refusal is checked again, so every refusal
    and its message are the full check's own.  The limits are part of the key so
    that a schema checked under generous limits is not waved through a
    compilation under a tighter compile-time limit; a remembered pass costs no
    time, so the limit is still met for the work actually done.  Bounded
    (least recently used out first), because a client also compiles the
    schemas of documents it retrieves.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._passed: OrderedDict[tuple[str, Limits, bytes], None] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key: tuple[str, Limits, bytes]) -> bool:
        with self._lock:
            if key not in self._passed:
                return False
            self._passed.move_to_end(key)
            return True

    def add(self, key: tuple[str, Limits, bytes]) -> None:
        with self._lock:
            self._passed[key] = None
            self._passed.move_to_end(key)
            while len(self._passed) > self.size:
                self._passed.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._passed.clear()


#: Meta-schema passes remembered across compilations (see :class:`_MetaVerdicts`).
META_VERDICTS: Final = _MetaVerdicts(4096)


class _Compiled:
    """Compiled schemas by dialect, limits and the SHA-256 of their JCS bytes.

    Everything :func:`compile_inline_schema` checks and builds after the size
    check is a function of those three alone: it works on a private copy
    decoded from the JCS bytes.  So one value given again (a plugin's skills
    often share schemas; 500 generated skills share three) gets the
    :class:`CompiledSchema` already built, its validator and compiled
    validity check shared (both immutable), under the caller's own
    ``schema`` value.  Distinct values are each fully checked, and a refusal
    is never remembered: it is checked again, with the same message.  Smaller
    than :data:`META_VERDICTS`, since a validator weighs far more than a
    digest and a client compiles the schemas of every document it retrieves.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[str, Limits, bytes], CompiledSchema] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, Limits, bytes]) -> CompiledSchema | None:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def add(self, key: tuple[str, Limits, bytes], compiled: CompiledSchema) -> None:
        with self._lock:
            self._kept[key] = compiled
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


#: Schemas compiled before, by value (see :class:`_Compiled`).
COMPILED: Final = _Compiled(256)


def _check_meta_schema(validator_class: Any, schema: Any, dialect: str) -> None:
    """Validate the schema against the dialect's bundled meta-schema, offline, on the clock.

    jsonschema's ``check_schema`` would use a registry that falls back to
    fetching unknown URIs; the meta-schemas only reference each other, but a
    registry without retrieval makes "never fetched" a property of the code
    rather than of the meta-schemas' content.  Every keyword evaluated ticks the
    running compile clock (:mod:`skillrack.interface.compile_clock`).  Formats
    are checked here too (``pattern`` must be a regex, ``$ref`` a URI
    reference), as ``check_schema`` would.
    """
    meta = clocked_meta_validator(validator_class, dialect, _format_checker(validator_class))
    error = best_match(meta.iter_errors(schema))
    if error is not None:
        text = str(error.message)
        pointer = to_pointer(error.absolute_path)
        if error.validator == "format" and error.validator_value == "regex":
            # Say why the pattern is refused (ECMA-262 syntax, position) and, for a
            # ``patternProperties`` name, point at that name rather than its object.
            why = check_pattern(error.instance) or "too long to check"
            text = f"{error.instance!r} is not an ECMA-262 regular expression: {why}"
            if "propertyNames" in error.absolute_schema_path:
                pointer = f"{pointer}/{escape(error.instance)}"
        if len(text) > 200:
            text = text[:197] + "..."
        raise refuse(
            "meta_schema",
            pointer,
            f"the schema is not valid against the {dialect} meta-schema: {text}",
        )


def _too_deep() -> InlineSchemaError:
    return limit_exceeded("schema_too_deep", "", "the schema is nested more deeply than allowed")


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
        raise refuse("not_json", "", f"the schema is not an I-JSON value: {text}") from None
    if len(encoded) > limits.max_schema_bytes:
        raise limit_exceeded("schema_too_large", "", "the schema is larger than allowed")
    return encoded


def compile_inline_schema(
    schema: Any, dialect: str, limits: Limits = DEFAULT_LIMITS
) -> CompiledSchema:
    """Apply every inline-schema rule of the draft and return a reusable validator.

    The checks run cheapest and most fundamental first (dialect, resource
    limits, dialect of every subschema, meta-schema, ``$id`` values, references,
    reference graph), so the first violation reported is the most basic one.
    ``max_compile_seconds`` is enforced while they run: every loop over the
    schema, and every keyword of the meta-schema check, ticks a clock that
    stops the compilation (``resource_limit_exceeded``, rule ``compile_time``)
    as soon as the limit is exceeded.

    The validator works on a private copy decoded from the schema's JCS bytes:
    the caller cannot change it afterwards, shared Python sub-objects cannot
    confuse the identity-based bookkeeping, and two schemas with one digest
    validate identically.

    Raises :class:`InlineSchemaError` on the first violation, and RuntimeError
    when jsonschema cannot assert every defined format (a broken install).
    """
    clock = CompileClock(limits.max_compile_seconds)
    tick = clock.tick
    if not isinstance(dialect, str) or dialect not in SUPPORTED_DIALECTS:
        raise refuse(
            "dialect",
            "",
            f"dialect {dialect!r} is not supported; supported: "
            + ", ".join(sorted(SUPPORTED_DIALECTS)),
        )
    ensure_format_checkers()
    validator_class = _VALIDATOR_CLASSES[dialect]

    encoded = _check_size(schema, limits)
    verdict = (dialect, limits, hashlib.sha256(encoded).digest())
    known = COMPILED.get(verdict)
    if known is not None:
        return known.given_as(schema)
    private = json.loads(encoded)
    tick()
    root_uri = root_base(private)
    locations = walk(private, root_uri, dialect, tick)

    checker = _format_checker(validator_class)
    if verdict in META_VERDICTS:
        pass
    elif passes_meta_schema(
        private, len(encoded), validator_class, checker, min(0.5, limits.max_compile_seconds / 4)
    ):
        tick()  # the compiled check (``skillrack.interface.meta_check``) said valid
    else:
        try:
            with running(clock):
                _check_meta_schema(validator_class, private, dialect)
        except RecursionError:
            # Only reachable with a schema-depth limit raised far above the default.
            raise _too_deep() from None
        META_VERDICTS.add(verdict)

    _check_patterns(locations, tick)
    resources = check_ids(locations, root_uri, tick)
    retriever = RefusingRetriever()
    crawl = needs_crawl(locations)
    registry = schema_registry(root_uri, private, retriever, crawl=crawl)
    tick()
    edges = reference_edges(locations, registry, retriever, resources.by_uri, tick)
    check_targets_identified(resources, edges, tick)

    check_reference_graph(locations, edges, limits, tick)

    runtime_root, runtime = desugar_booleans(private, locations)
    if runtime_root is not private:  # a boolean root: its object form is a new resource
        registry = schema_registry(root_uri, runtime_root, retriever, crawl=crawl)

    # Otherwise the registry built for the checks serves: desugaring rewrote the
    # very objects it holds, in place, and added no $id or anchor.
    def make_validator(registry: Any = registry) -> Any:
        # Built on first use (validation.py's _ValidatorSlot): nothing in it
        # is a check, and most schemas are first validated long after assembly.
        return validator_class(runtime_root, registry=registry, format_checker=checker)

    tick()
    compiled = CompiledSchema(
        schema=schema,
        dialect=dialect,
        limits=limits,
        _make_validator=make_validator,
        _runtime=runtime,
    )
    COMPILED.add(verdict, compiled)
    return compiled
