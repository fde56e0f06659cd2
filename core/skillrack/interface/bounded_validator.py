"""Draft 2020-12 validation whose regular expressions run under a time limit.

jsonschema matches ``pattern``, ``patternProperties`` and the patterns that
``additionalProperties`` skips with Python's ``re``, which cannot be stopped.
``BoundedValidator`` is draft 2020-12 with those three keywords matching
through ``patterns.search`` instead (same meaning, a time limit); a match that
runs out of time is a failure at the string it was matching.  The schema
checks refuse the one remaining path, ``patternProperties`` evaluated for
``unevaluatedProperties`` (see ``skillrack.interface.inline``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]
from jsonschema import validators as jsonschema_validators
from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped, unused-ignore]

from skillrack.interface import patterns

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
