"""Validating instances against a compiled inline schema, reported as the draft's details.

:class:`CompiledSchema` is what :func:`skillrack.interface.inline.compile_inline_schema`
returns once every inline rule holds.  Its validator resolves references through
a registry that refuses retrieval exactly as the checks' registry did, so
instance validation cannot fetch anything either, and it reports failures as the
draft's ``details`` entries: located in the instance and in the schema as
published, bounded in number, and with sensitive values withheld.

The validator is :class:`~skillrack.interface.bounded_validator.BoundedValidator`
(patterns under a time limit); an instance is first measured against the
limits (:mod:`skillrack.interface.plain_json`) and, for most schemas, answered
by a predicate equal to jsonschema's outcome
(:mod:`skillrack.interface.validity_check`); jsonschema runs only to report
what is wrong.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import referencing.exceptions
from jsonschema.exceptions import (  # type: ignore[import-untyped, unused-ignore]
    best_match,
)

from skillrack.errors import ConditionError, ErrorCode, ErrorDetail
from skillrack.interface import patterns
from skillrack.interface.bounded_validator import TIMED_OUT
from skillrack.interface.canonical import CanonicalizationError, canonical_bytes
from skillrack.interface.limits import DEFAULT_LIMITS, WIRE_DATA_DEPTH, Limits, json_depth
from skillrack.interface.plain_json import measure_plain_json
from skillrack.interface.pointers import escape, resolve, to_pointer, unescape
from skillrack.interface.schemaerror import refuse
from skillrack.interface.schemawalk import Location
from skillrack.interface.validity_check import Check, compile_validity_check

#: Most details one validation reports, and most raw errors it looks at to find
#: them, so that a huge, thoroughly wrong instance costs bounded work.
MAX_DETAILS: Final = 20
_MAX_RAW_ERRORS: Final = 1000


@dataclass(frozen=True)
class _Runtime:
    """What validation needs besides the validator: where each schema object sits.

    ``pointers`` maps ``id()`` of every schema object of the runtime copy to its
    pointer; ``booleans`` maps the stand-ins for ``true``/``false`` subschemas to
    the boolean and the keyword that held it; ``dialects`` maps the schema
    objects whose ``$schema`` the runtime copy dropped to that value.
    """

    pointers: Mapping[int, str]
    booleans: Mapping[int, tuple[bool, str]]
    dialects: Mapping[int, Any] = field(default_factory=dict)


def desugar_booleans(root: Any, locations: list[Location]) -> tuple[Any, _Runtime]:
    """Replace boolean subschemas by their object equivalents, in place; return the new root.

    Also drops ``$schema`` from every schema object (kept in the runtime's
    ``dialects`` for the details), for the reason given where it is done.

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
    dialects: dict[int, Any] = {}
    for loc in locations:
        if not isinstance(loc.node, bool):
            pointers[id(loc.node)] = loc.pointer
            if isinstance(loc.node, dict) and "$schema" in loc.node:
                # Every subschema was checked to be of the one dialect.  Without
                # ``$schema`` jsonschema cannot switch a ``$ref`` target or an
                # embedded resource to its stock validator class, whose
                # pattern matching has no time limit (``BoundedValidator``).
                dialects[id(loc.node)] = loc.node.pop("$schema")
            continue
        stand_in: dict[str, Any] = {} if loc.node else {"not": {}}
        pointers[id(stand_in)] = loc.pointer
        booleans[id(stand_in)] = (loc.node, loc.slot)
        if not loc.pointer:
            root = stand_in
            continue
        parent_pointer, _, last = loc.pointer.rpartition("/")
        parent = resolve(root, parent_pointer)
        if isinstance(parent, list):
            parent[int(last)] = stand_in
        else:
            parent[unescape(last)] = stand_in
    return root, _Runtime(pointers=pointers, booleans=booleans, dialects=dialects)


def _resugar(value: Any, runtime: _Runtime) -> Any:
    """``value`` as published: the rewrites of :func:`desugar_booleans` undone.

    ``expected`` values come from the runtime copy (``anyOf`` reports its whole
    list of subschemas); a caller must see the schema as published, with its
    booleans and its ``$schema``.
    """
    if id(value) in runtime.booleans:
        return runtime.booleans[id(value)][0]
    if isinstance(value, dict):
        published = {key: _resugar(item, runtime) for key, item in value.items()}
        if id(value) in runtime.dialects:
            published = {"$schema": runtime.dialects[id(value)], **published}
        return published
    if isinstance(value, list):
        return [_resugar(item, runtime) for item in value]
    return value


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


#: The deepest ``actual`` value a detail carries: ``{"error": {"details": [{"actual":
#: ...}]}}`` must fit in one Data Part (:data:`WIRE_DATA_DEPTH`), and a deeper
#: value is left out, as a sensitive one is.  (``expected`` comes from a schema,
#: whose depth limit already keeps it shallower.)
_DETAIL_VALUE_DEPTH: Final = WIRE_DATA_DEPTH - 4


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
        raise refuse(
            "unresolvable_reference", "", "a reference did not resolve during validation"
        ) from None


def _is_related(path: str, hidden: str) -> bool:
    """True when one pointer is the other or lies below it."""
    return path == hidden or path.startswith(hidden + "/") or hidden.startswith(path + "/")


class _FastSlot:
    """A compiled schema's validity check, built once, on first use.

    Two threads may both build it the first time; both get an equivalent
    predicate and one of them is kept, so no lock is needed.
    """

    __slots__ = ("_built", "_check")

    def __init__(self) -> None:
        self._built = False
        self._check: Check | None = None

    def get(self, validator: Any) -> Check | None:
        if not self._built:
            try:
                self._check = None if validator is None else compile_validity_check(validator)
            finally:  # built or not, never tried again on every request
                self._built = True
        return self._check


class _ValidatorSlot:
    """A compiled schema's jsonschema validator, built on first use.

    Building one (jsonschema combines the registry with its own and makes a
    resolver) costs about a twentieth of assembling a skill, and most schemas
    are validated through the compiled validity check, which needs it only
    when it is built itself.  Two threads may both build it the first time;
    both get an equivalent validator and one of them is kept, so no lock is
    needed.  Shared by :meth:`CompiledSchema.given_as`, like :class:`_FastSlot`.
    """

    __slots__ = ("_build", "_validator")

    def __init__(self, build: Callable[[], Any] | None) -> None:
        self._build = build
        self._validator: Any = None

    def get(self) -> Any:
        if self._validator is None and self._build is not None:
            self._validator = self._build()
        return self._validator


@dataclass(frozen=True, eq=False)
class CompiledSchema:
    """A schema that passed every inline rule, with the validator built from it.

    Immutable and reusable across requests; compare by identity.  ``schema`` is
    the value as given; validation uses a private copy (see
    :func:`skillrack.interface.inline.compile_inline_schema`).  ``limits`` are the limits
    it was compiled under, applied again to each instance.
    """

    schema: Any
    dialect: str
    limits: Limits = DEFAULT_LIMITS
    #: Builds the jsonschema validator, on first use (see :class:`_ValidatorSlot`).
    _make_validator: Callable[[], Any] | None = field(default=None, repr=False)
    _runtime: _Runtime = field(default_factory=lambda: _Runtime({}, {}), repr=False)
    #: Where the compiled validity check is kept once built (shared by :meth:`given_as`).
    _fast_slot: _FastSlot = field(default_factory=lambda: _FastSlot(), init=False, repr=False)
    _validator_slot: _ValidatorSlot = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_validator_slot", _ValidatorSlot(self._make_validator))

    @property
    def _validator(self) -> Any:
        """The jsonschema validator of the private copy, built on first use."""
        return self._validator_slot.get()

    @property
    def _fast(self) -> Callable[[Any], bool] | None:
        """A validity check equivalent to "jsonschema reports no error", or None.

        None when the schema uses keywords :class:`_FastCompiler` does not
        know.  Built on first use, not at compilation: an agent with hundreds
        of skills starts without building a predicate for each of their
        schemas, and a schema no request uses never gets one.
        """
        return self._fast_slot.get(self._validator)

    def given_as(self, schema: Any) -> CompiledSchema:
        """This compiled schema under another ``schema`` value of the same JCS form.

        The validator, its runtime and the compiled validity check are shared
        (all immutable), not built again.
        """
        twin = copy.copy(self)
        object.__setattr__(twin, "schema", schema)
        return twin

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
        with patterns.pattern_budget() as budget:
            details = self._validate(instance, tuple(sensitive))
        if budget.timed_out and not details:
            # A match was cut off and the failure it reported was absorbed (a
            # ``not``, an ``anyOf``): an instance never passes on a timeout.
            return (ErrorDetail(instance_path="", keyword="pattern", expected=TIMED_OUT),)
        return details

    def _validate(self, instance: Any, hidden: tuple[str, ...]) -> tuple[ErrorDetail, ...]:
        refusal = self._admit(instance)
        if refusal is not None:
            return (refusal,)
        if self._valid_fast(instance):
            return ()
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
        with patterns.pattern_budget() as budget:
            if self._valid_fast(instance) and not budget.timed_out:
                return True
            with _bounded():
                valid = next(iter(self._validator.iter_errors(instance)), None) is None
        return valid and not budget.timed_out

    def _admit(self, instance: Any) -> ErrorDetail | None:
        """Apply the instance limits; a non-JSON instance becomes one detail at the root."""
        limits = self.limits
        depth, size = measure_plain_json(instance, limits.max_instance_depth)
        if depth is None:  # not plain JSON: measured the long way, with the same outcome
            depth = json_depth(instance, limits.max_instance_depth)
        if depth > limits.max_instance_depth:
            raise ConditionError(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED, "the instance is nested more deeply than allowed"
            )
        if size is None:
            try:
                size = len(canonical_bytes(instance))
            except (CanonicalizationError, RecursionError):
                return ErrorDetail(instance_path="", keyword="json", expected="I-JSON value")
        if size > limits.max_instance_bytes:
            raise ConditionError(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED, "the instance is larger than allowed"
            )
        return None

    def _valid_fast(self, instance: Any) -> bool:
        """True only when jsonschema would report no error; False means "ask jsonschema".

        Any exception (a comparison a number type refuses, a deep recursion)
        also sends the instance to jsonschema, which then reports what is wrong.
        """
        try:
            fast = self._fast
            return fast is not None and fast(instance)
        except Exception:
            return False

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
            return to_pointer(error.absolute_schema_path)
        if id(error.schema) in self._runtime.booleans:
            return where  # the keyword is the stand-in's, not the schema's
        return f"{where}/{escape(error.validator)}"

    def _details(self, error: Any, hidden: tuple[str, ...]) -> Iterator[ErrorDetail]:
        """The draft's detail entries for one (most specific) jsonschema error."""
        path = to_pointer(error.absolute_path)
        schema_path = self._schema_pointer(error)
        keyword: str | None = error.validator
        instance = error.instance
        booleans = self._runtime.booleans
        # Stand-ins back to booleans, e.g. for ``unevaluatedProperties: false``.
        expected = _resugar(error.validator_value, self._runtime)
        stand_in = booleans.get(id(error.schema))
        if stand_in is not None:
            # A ``false`` subschema failed: name the keyword that held it.
            keyword = stand_in[1] or None
            expected = False

        def detail(at: str, expected: Any, actual: Any, has_actual: bool = True) -> ErrorDetail:
            show = has_actual and not any(_is_related(at, h) for h in hidden)
            if show and json_depth(actual, _DETAIL_VALUE_DEPTH) > _DETAIL_VALUE_DEPTH:
                show = False  # the error object could not be sent (see _DETAIL_VALUE_DEPTH)
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
                    yield detail(f"{path}/{escape(name)}", name, None, has_actual=False)
        elif keyword == "type" and stand_in is None:
            # As in the draft's example: the actual JSON type, not the value.
            yield detail(path, expected, _json_type(instance))
        else:
            yield detail(path, expected, instance)
