"""Validating instances against a compiled inline schema, reported as the draft's details.

:class:`CompiledSchema` is what :func:`skillrack.interface.inline.compile_inline_schema`
returns once every inline rule holds.  Its validator resolves references through
a registry that refuses retrieval exactly as the checks' registry did, so
instance validation cannot fetch anything either, and it reports failures as the
draft's ``details`` entries: located in the instance and in the schema as
published, bounded in number, and with sensitive values withheld.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

import referencing.exceptions
import regex
import rfc8785
from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]
from jsonschema import validators as jsonschema_validators
from jsonschema._types import (  # type: ignore[import-untyped, unused-ignore]
    draft202012_type_checker,
)
from jsonschema._utils import equal, uniq  # type: ignore[import-untyped, unused-ignore]
from jsonschema.exceptions import (  # type: ignore[import-untyped, unused-ignore]
    ValidationError,
    best_match,
)

from skillrack.errors import ConditionError, ErrorCode, ErrorDetail
from skillrack.interface import patterns
from skillrack.interface.canonical import CanonicalizationError, canonical_bytes
from skillrack.interface.limits import DEFAULT_LIMITS, WIRE_DATA_DEPTH, Limits, json_depth
from skillrack.interface.pointers import escape, resolve, to_pointer, unescape
from skillrack.interface.schemaerror import refuse
from skillrack.interface.schemawalk import Location

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


# -- pattern matching under a time limit -----------------------------------------------------
#
# jsonschema matches ``pattern``, ``patternProperties`` and the patterns that
# ``additionalProperties`` skips with Python's ``re``, which cannot be stopped.
# ``BoundedValidator`` is draft 2020-12 with those three keywords matching
# through ``patterns.search`` instead (same meaning, a time limit); a match that
# runs out of time is a failure at the string it was matching.  The schema
# checks refuse the one remaining path, ``patternProperties`` evaluated for
# ``unevaluatedProperties`` (see ``skillrack.interface.inline``).


#: ``expected`` of the detail for an instance refused because a match was cut off.
TIMED_OUT: Final = "a pattern match within the time limit"


def _timed_out(exc: patterns.PatternTimeLimit, **where: Any) -> Any:
    return ValidationError(f"{exc}; the value is treated as not matching", **where)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "string"):
        return
    try:
        matched = patterns.search(pattern, instance)
    except patterns.PatternTimeLimit as exc:
        yield _timed_out(exc)
        return
    if not matched:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, pattern_properties: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for name, value in instance.items():
            try:
                matched = patterns.search(pattern, name)
            except patterns.PatternTimeLimit as exc:
                yield _timed_out(exc, path=(name,), instance=value)
                continue
            if matched:
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    listed = tuple(schema.get("patternProperties", {}))
    extras = []
    for name in instance:
        if name in known:
            continue
        try:
            if any(patterns.search(pattern, name) for pattern in listed):
                continue
        except patterns.PatternTimeLimit as exc:
            yield _timed_out(exc, path=(name,), instance=instance[name])
            continue
        extras.append(name)
    if validator.is_type(additional, "object"):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)
    elif not additional and extras:
        names = ", ".join(repr(name) for name in sorted(extras))
        yield ValidationError(f"Additional properties are not allowed ({names} unexpected)")


BoundedValidator: Any = jsonschema_validators.extend(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)


# -- the common case, fast --------------------------------------------------------------------
#
# Every request validates four instances (the request object, the arguments,
# each supporting record, the result), and jsonschema spends most of its time
# building evaluation state for each subschema it descends into.  Two shortcuts
# give exactly the outcome jsonschema alone gives:
#
# * ``measure_plain_json`` computes the depth and the JCS size of an instance
#   made only of dict, list, str, int, float, bool and None without building
#   the JCS bytes; anything else is measured the long way, from its JCS bytes.
# * ``compile_validity_check`` turns a schema into a predicate that answers
#   True only when jsonschema would report no error.  It knows the keywords
#   domain schemas use; a schema with any other validating keyword (or a
#   ``$ref`` it cannot resolve to a place in the same schema) gets no predicate,
#   and False or an exception means "ask jsonschema".  Errors and their details
#   always come from jsonschema.

_INT_RANGE: Final = 2**53 - 1
#: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``, built once.
_COMPACT: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_INFINITY: Final = float("inf")


def _float_length_delta(value: float) -> int:
    """JCS length of a finite float minus the length of ``repr`` (what ``json.dumps`` writes)."""
    text = repr(value)
    if value == 0:
        return 1 - len(text)  # "0" for 0.0 and -0.0
    if "e" in text:
        return len(rfc8785.dumps(value)) - len(text)
    return -2 if text.endswith(".0") else 0  # JCS writes 26.0 as 26


def _scalar_delta(value: Any) -> int | None:
    """JCS length minus ``json.dumps`` length of a scalar; None when JCS refuses it or is unsure."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return 0
    if kind is int:
        return 0 if -_INT_RANGE <= value <= _INT_RANGE else None
    if kind is float:
        if value != value or value in (_INFINITY, -_INFINITY):
            return None
        return _float_length_delta(value)
    return None


def measure_plain_json(value: Any, limit: int) -> tuple[int | None, int | None]:
    """``(depth, JCS size)`` of a plain JSON value, or None for what it cannot measure.

    The depth is :func:`skillrack.interface.limits.json_depth`'s (cut off above
    ``limit``), and when it is above ``limit`` the size is not computed.  The
    size is ``len(canonical_bytes(value))``: ``json.dumps`` (compact, UTF-8,
    unsorted: order does not change the length) writes every string, integer
    and literal exactly as JCS does, and floats differ only in a way
    :func:`_float_length_delta` corrects.  Depth is None as soon as a value of
    another type, a non-string key, an integer JCS refuses or a non-finite
    float is found: the caller then measures the long way.
    """
    deepest = 0
    delta = _scalar_delta(value) if type(value) is not dict and type(value) is not list else 0
    if delta is None:
        return None, None
    stack: list[tuple[Any, int]] = [(value, 1)] if type(value) in (dict, list) else []
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest, None
        if type(node) is dict:
            for key in node:
                if type(key) is not str:
                    return None, None
            children: Iterable[Any] = node.values()
        else:
            children = node
        for child in children:
            kind = type(child)
            if kind is str:
                continue
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
                continue
            more = _scalar_delta(child)
            if more is None:
                return None, None
            delta += more
    try:
        return deepest, len(_COMPACT.encode(value).encode("utf-8")) + delta
    except (ValueError, TypeError, RecursionError):  # e.g. a lone surrogate: JCS refuses it
        return deepest, None


Check = Callable[[Any], bool]


class _Unsupported(Exception):
    """The schema uses something the fast predicate does not implement."""


def _always(instance: Any) -> bool:
    return True


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


#: jsonschema's draft 2020-12 type checker, type by type (checked to be the one in use).
_TYPES: Final[Mapping[str, Check]] = {
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: (
        (not isinstance(v, bool) and isinstance(v, int))
        or (isinstance(v, float) and v.is_integer())
    ),
    "null": lambda v: v is None,
    "number": _is_number,
    "object": lambda v: isinstance(v, dict),
    "string": lambda v: isinstance(v, str),
}

#: Keywords that change how references resolve; the predicate does not follow them.
_SCOPE_KEYWORDS: Final = frozenset(
    {"$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveAnchor", "$recursiveRef"}
)


class _FastCompiler:
    """Builds the predicate, keyword by keyword, from jsonschema's own definitions."""

    def __init__(self, validator: Any) -> None:
        self.validator = validator
        self.root = validator.schema
        self.memo: dict[int, Check] = {}
        formats = validator.format_checker
        self.formats = formats.checkers if formats is not None else None

    def node(self, schema: Any) -> Check:
        key = id(schema)
        known = self.memo.get(key)
        if known is not None:
            return known
        if not isinstance(schema, dict):
            raise _Unsupported("a subschema that is not an object")
        cell: list[Check] = []
        self.memo[key] = lambda instance: cell[0](instance)  # recursion through $ref
        check = self._build(schema)
        cell.append(check)
        self.memo[key] = check
        return check

    def _build(self, schema: dict[str, Any]) -> Check:
        checks: list[Check] = []
        for keyword, value in schema.items():
            if keyword in _SCOPE_KEYWORDS or (keyword == "$id" and schema is not self.root):
                raise _Unsupported(keyword)
            if keyword not in Draft202012Validator.VALIDATORS:
                continue  # an annotation or a container ($defs): jsonschema ignores it too
            build = _BUILDERS.get(keyword)
            if build is None:
                raise _Unsupported(keyword)
            check = build(self, value, schema)
            if check is not _always:
                checks.append(check)
        if not checks:
            return _always
        if len(checks) == 1:
            return checks[0]
        frozen = tuple(checks)

        def all_of_keywords(instance: Any) -> bool:
            for check in frozen:  # noqa: SIM110 (a loop: no generator per call)
                if not check(instance):
                    return False
            return True

        return all_of_keywords

    # Each builder mirrors the function of the same name in jsonschema._keywords.

    def type_(self, types: Any, schema: Any) -> Check:
        names = [types] if isinstance(types, str) else list(types)
        preds = tuple(_TYPES[name] for name in names)
        if len(preds) == 1:
            return preds[0]
        return lambda v: any(pred(v) for pred in preds)

    def properties(self, properties: Any, schema: Any) -> Check:
        pairs = tuple(
            (name, sub_check)
            for name, sub in properties.items()
            if (sub_check := self.node(sub)) is not _always
        )

        table = dict(pairs)
        declared = len(table)

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            # Whichever side is shorter: a schema's few members against a
            # meta-schema's fifty declared keywords, or the other way round.
            if len(v) < declared:
                for name, item in v.items():
                    sub = table.get(name)
                    if sub is not None and not sub(item):
                        return False
                return True
            for name, sub in pairs:  # noqa: SIM110 (a loop: no generator per call)
                if name in v and not sub(v[name]):
                    return False
            return True

        return check if pairs else _always

    def required(self, names: Any, schema: Any) -> Check:
        wanted = tuple(names)
        return lambda v: not isinstance(v, dict) or all(name in v for name in wanted)

    def additional_properties(self, extra: Any, schema: Any) -> Check:
        known = schema.get("properties", {})
        listed = tuple(schema.get("patternProperties", {}))
        for listed_pattern in listed:
            patterns.compiled(listed_pattern)  # an unusable pattern: no predicate

        def matches(name: str) -> bool:
            return any(patterns.search(pattern, name) for pattern in listed)

        if isinstance(extra, dict):
            sub = self.node(extra)
            if sub is _always:
                return _always
        elif extra:
            return _always
        else:
            sub = None

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for name in v:
                if name in known or (listed and matches(name)):
                    continue
                if sub is None or not sub(v[name]):
                    return False
            return True

        return check

    def pattern_properties(self, patterns_: Any, schema: Any) -> Check:
        pairs = tuple((p, self.node(sub)) for p, sub in patterns_.items())
        for pattern, _ in pairs:
            patterns.compiled(pattern)  # an unusable pattern: no predicate

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for pattern, sub in pairs:
                for name, item in v.items():
                    if patterns.search(pattern, name) and not sub(item):
                        return False
            return True

        return check

    def property_names(self, names: Any, schema: Any) -> Check:
        sub = self.node(names)
        return lambda v: not isinstance(v, dict) or all(sub(name) for name in v)

    def items(self, items: Any, schema: Any) -> Check:
        prefix = len(schema.get("prefixItems", []))
        if items is False:
            return lambda v: not isinstance(v, list) or len(v) <= prefix
        if not isinstance(items, dict):
            return _always
        sub = self.node(items)
        if sub is _always:
            return _always
        return lambda v: not isinstance(v, list) or all(sub(item) for item in v[prefix:])

    def prefix_items(self, subschemas: Any, schema: Any) -> Check:
        subs = tuple(self.node(sub) for sub in subschemas)
        return lambda v: (
            not isinstance(v, list) or all(sub(item) for item, sub in zip(v, subs, strict=False))
        )

    def enum(self, values: Any, schema: Any) -> Check:
        options = tuple(values)
        if not options or any(type(each) is not str for each in options):
            return lambda v: any(equal(each, v) for each in options)
        # Strings only (the meta-schema's simpleTypes, most enums): ``equal``
        # compares a string option to a string with ``==``, which for an exact
        # ``str`` is what a set lookup does.
        names = frozenset(options)

        def check(v: Any) -> bool:
            if type(v) is str:
                return v in names
            return any(equal(each, v) for each in options)

        return check

    def const(self, value: Any, schema: Any) -> Check:
        return lambda v: equal(v, value)

    def min_length(self, bound: Any, schema: Any) -> Check:
        return lambda v: not isinstance(v, str) or not len(v) < bound

    def max_length(self, bound: Any, schema: Any) -> Check:
        return lambda v: not isinstance(v, str) or not len(v) > bound

    def pattern(self, pattern: Any, schema: Any) -> Check:
        patterns.compiled(pattern)  # an unusable pattern: no predicate
        return lambda v: not isinstance(v, str) or patterns.search(pattern, v)

    def format(self, name: Any, schema: Any) -> Check:
        if self.formats is None or name not in self.formats:
            return _always
        func, raises = self.formats[name]

        def check(v: Any) -> bool:
            try:
                return bool(func(v))
            except raises:
                return False

        return check

    def minimum(self, bound: Any, schema: Any) -> Check:
        return lambda v: not _is_number(v) or not v < bound

    def maximum(self, bound: Any, schema: Any) -> Check:
        return lambda v: not _is_number(v) or not v > bound

    def exclusive_minimum(self, bound: Any, schema: Any) -> Check:
        return lambda v: not _is_number(v) or not v <= bound

    def exclusive_maximum(self, bound: Any, schema: Any) -> Check:
        return lambda v: not _is_number(v) or not v >= bound

    def multiple_of(self, divisor: Any, schema: Any) -> Check:
        def check(v: Any) -> bool:
            if not _is_number(v):
                return True
            if isinstance(divisor, float):
                quotient = v / divisor
                try:
                    failed = int(quotient) != quotient
                except OverflowError:
                    failed = (Fraction(v) / Fraction(divisor)).denominator != 1
            else:
                failed = v % divisor
            return not failed

        return check

    def min_items(self, bound: Any, schema: Any) -> Check:
        return lambda v: not (isinstance(v, list) and len(v) < bound)

    def max_items(self, bound: Any, schema: Any) -> Check:
        return lambda v: not (isinstance(v, list) and len(v) > bound)

    def unique_items(self, unique: Any, schema: Any) -> Check:
        if not unique:
            return _always
        return lambda v: not isinstance(v, list) or bool(uniq(v))

    def min_properties(self, bound: Any, schema: Any) -> Check:
        return lambda v: not (isinstance(v, dict) and len(v) < bound)

    def max_properties(self, bound: Any, schema: Any) -> Check:
        return lambda v: not (isinstance(v, dict) and len(v) > bound)

    def dependent_required(self, dependencies: Any, schema: Any) -> Check:
        pairs = tuple((name, tuple(needed)) for name, needed in dependencies.items())
        return lambda v: (
            not isinstance(v, dict)
            or all(name not in v or all(each in v for each in needed) for name, needed in pairs)
        )

    def all_of(self, subschemas: Any, schema: Any) -> Check:
        subs = tuple(self.node(sub) for sub in subschemas)
        return lambda v: all(sub(v) for sub in subs)

    def any_of(self, subschemas: Any, schema: Any) -> Check:
        subs = tuple(self.node(sub) for sub in subschemas)
        return lambda v: any(sub(v) for sub in subs)

    def one_of(self, subschemas: Any, schema: Any) -> Check:
        subs = tuple(self.node(sub) for sub in subschemas)
        return lambda v: sum(1 for sub in subs if sub(v)) == 1

    def not_(self, subschema: Any, schema: Any) -> Check:
        sub = self.node(subschema)
        return lambda v: not sub(v)

    def if_(self, condition: Any, schema: Any) -> Check:
        test = self.node(condition)
        then = self.node(schema["then"]) if "then" in schema else _always
        otherwise = self.node(schema["else"]) if "else" in schema else _always
        return lambda v: then(v) if test(v) else otherwise(v)

    def ref(self, reference: Any, schema: Any) -> Check:
        if not isinstance(reference, str) or not reference.startswith("#"):
            raise _Unsupported("$ref outside the schema's own document")
        resolved = self.validator._resolver.lookup(reference)
        return self.node(resolved.contents)


_BUILDERS: Final[Mapping[str, Callable[[_FastCompiler, Any, Any], Check]]] = {
    "$ref": _FastCompiler.ref,
    "additionalProperties": _FastCompiler.additional_properties,
    "allOf": _FastCompiler.all_of,
    "anyOf": _FastCompiler.any_of,
    "const": _FastCompiler.const,
    "dependentRequired": _FastCompiler.dependent_required,
    "enum": _FastCompiler.enum,
    "exclusiveMaximum": _FastCompiler.exclusive_maximum,
    "exclusiveMinimum": _FastCompiler.exclusive_minimum,
    "format": _FastCompiler.format,
    "if": _FastCompiler.if_,
    "items": _FastCompiler.items,
    "maxItems": _FastCompiler.max_items,
    "maxLength": _FastCompiler.max_length,
    "maxProperties": _FastCompiler.max_properties,
    "maximum": _FastCompiler.maximum,
    "minItems": _FastCompiler.min_items,
    "minLength": _FastCompiler.min_length,
    "minProperties": _FastCompiler.min_properties,
    "minimum": _FastCompiler.minimum,
    "multipleOf": _FastCompiler.multiple_of,
    "not": _FastCompiler.not_,
    "oneOf": _FastCompiler.one_of,
    "pattern": _FastCompiler.pattern,
    "patternProperties": _FastCompiler.pattern_properties,
    "prefixItems": _FastCompiler.prefix_items,
    "properties": _FastCompiler.properties,
    "propertyNames": _FastCompiler.property_names,
    "required": _FastCompiler.required,
    "type": _FastCompiler.type_,
    "uniqueItems": _FastCompiler.unique_items,
}


def compile_validity_check(validator: Any) -> Check | None:
    """The predicate for ``validator``'s schema, or None when it would not be exact.

    Only for jsonschema's own draft 2020-12 validator with its stock type
    checker: the predicate copies their semantics, not anybody else's.
    """
    if type(validator) not in (Draft202012Validator, BoundedValidator):
        return None
    if validator.TYPE_CHECKER is not draft202012_type_checker:
        return None
    try:
        return _FastCompiler(validator).node(validator.schema)
    except (
        _Unsupported,
        referencing.exceptions.Unresolvable,
        KeyError,
        TypeError,
        regex.error,
        RecursionError,  # a long chain of references and nesting: jsonschema validates it
    ):
        return None


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
    resolver) was about a twentieth of assembling a skill, and most schemas
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
        also sends the instance to jsonschema, which then fails as it always did.
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
