"""A predicate equal to "jsonschema reports no error", for the schemas domain skills use.

jsonschema spends most of its time building evaluation state for each
subschema it descends into, and most instances are valid.
``compile_validity_check`` turns a schema into a predicate that answers True
only when jsonschema would report no error.  It knows the keywords domain
schemas use; a schema with any other validating keyword (or a ``$ref`` it
cannot resolve to a place in the same schema) gets no predicate, and False or
an exception means "ask jsonschema".  Errors and their details always come
from jsonschema (``skillrack.interface.validation``).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Final

import referencing.exceptions
import regex
from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]
from jsonschema._types import (  # type: ignore[import-untyped, unused-ignore]
    draft202012_type_checker,
)
from jsonschema._utils import equal, uniq  # type: ignore[import-untyped, unused-ignore]

from skillrack.interface import patterns
from skillrack.interface.bounded_validator import BoundedValidator

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
