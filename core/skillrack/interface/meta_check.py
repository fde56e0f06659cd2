"""The 2020-12 meta-schema check, compiled: "valid" without jsonschema's dynamic-scope walk.

Checked by jsonschema, a domain schema's meta-schema check is most of an
assembly (about 10 ms of every schema value, so 500 skills with distinct
schemas take about 9 s).  jsonschema evaluates the 2020-12 meta-schema as
written: seven vocabulary meta-schemas joined by ``allOf``, every subschema
reached through ``$dynamicRef: "#meta"`` resolved against the dynamic scope.

That dynamic reference always lands on the same place.  Checking a schema
starts at the dialect's meta-schema, the outermost resource with
``$dynamicAnchor: "meta"``, so every ``$dynamicRef: "#meta"`` resolves to it.
:func:`static_meta_schema` writes that down: one document whose root is the
dialect's meta-schema, the vocabularies under ``$defs``, each ``$dynamicRef``
a plain ``$ref`` to the root, each reference between the bundled meta-schemas
a pointer into the document, boolean subschemas in their object form.  The
same keywords apply to the same values, so the verdicts are the same, and
:func:`skillrack.interface.validity_check.compile_validity_check` (the predicate
instance validation already uses, held to jsonschema's answers by the tests)
compiles it into plain Python.

The predicate only answers "valid".  Anything else (invalid, a match out of
time, a value it cannot judge) sends the schema to the clocked jsonschema
check, which words the refusal as jsonschema does.  It does not tick the
compile clock, so it is used only up to :data:`FAST_CHECK_BYTES`, which it
checks in a few milliseconds (about 60 ms for 64 KiB of empty subschemas;
its pattern matches and format checks share a time budget of at most a
quarter of the compile-time limit); a larger schema takes the clocked path,
where the compile-time limit stops the work as it happens.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, Final

from jsonschema_specifications import REGISTRY as META_SCHEMAS  # type: ignore[import-untyped, unused-ignore]

from skillrack.interface import patterns
from skillrack.interface.validity_check import compile_validity_check

#: The largest schema (JCS bytes) the untimed predicate checks; larger ones go the clocked way.
FAST_CHECK_BYTES: Final = 64 * 1024

_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
_META_BASE: Final = "https://json-schema.org/draft/2020-12/meta/"

#: Keywords whose value is one subschema, a map of subschemas, or a list of them.
_ONE: Final = frozenset(
    {
        "items", "contains", "additionalProperties", "propertyNames", "if", "then", "else",
        "not", "contentSchema", "unevaluatedItems", "unevaluatedProperties",
    }
)  # fmt: skip
_MAP: Final = frozenset({"properties", "$defs", "patternProperties", "dependentSchemas"})
_LIST: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
#: Identification keywords the static document has no use for (it is one resource).
_DROPPED: Final = frozenset({"$id", "$schema", "$vocabulary", "$dynamicAnchor"})


class _NotStatic(Exception):
    """The bundled meta-schemas use something the rewrite does not know: no fast check."""


def _pointer_to(reference: str, here: str | None) -> str:
    """``reference`` (relative to vocabulary ``here``, None for the root) as a pointer here."""
    target, _, fragment = reference.partition("#")
    if fragment and not fragment.startswith("/"):
        raise _NotStatic(f"anchor reference {reference!r}")
    if not target:
        vocabulary = here
    elif target.startswith("meta/") and "/" not in target[5:]:
        vocabulary = target[5:]
    else:
        raise _NotStatic(f"reference {reference!r}")
    return ("#" if vocabulary is None else f"#/$defs/{vocabulary}") + fragment


def _rewrite(schema: Any, here: str | None) -> Any:
    """One bundled (sub)schema in the static document's terms."""
    if schema is True:
        return {}
    if schema is False:
        return {"not": {}}
    if not isinstance(schema, dict):
        raise _NotStatic(f"a subschema of type {type(schema).__name__}")
    static: dict[str, Any] = {}
    for keyword, value in schema.items():
        if keyword in _DROPPED:
            continue
        if keyword == "$dynamicRef":
            if value != "#meta":
                raise _NotStatic(f"$dynamicRef {value!r}")
            static["$ref"] = "#"
        elif keyword == "$ref":
            static["$ref"] = _pointer_to(value, here)
        elif keyword in _MAP:
            static[keyword] = {name: _rewrite(sub, here) for name, sub in value.items()}
        elif keyword in _LIST:
            static[keyword] = [_rewrite(sub, here) for sub in value]
        elif keyword in _ONE:
            static[keyword] = _rewrite(value, here)
        else:
            static[keyword] = value
    return static


def static_meta_schema() -> dict[str, Any]:
    """The 2020-12 meta-schema as one static document (see the module docstring).

    Raises :class:`_NotStatic` when the bundled copies use anything beyond
    ``$dynamicRef: "#meta"`` and references between the vocabularies.
    """
    root = _rewrite(META_SCHEMAS.contents(_DIALECT), None)
    if "$defs" in root:
        raise _NotStatic("$defs in the dialect's meta-schema")
    vocabularies: dict[str, Any] = {}
    for uri in META_SCHEMAS:
        if uri.startswith(_META_BASE):
            name = uri[len(_META_BASE) :]
            vocabularies[name] = _rewrite(META_SCHEMAS.contents(uri), name)
    root["$defs"] = vocabularies
    return _flattened(root)


#: Keywords of a vocabulary's root that only annotate.
_ANNOTATIONS: Final = frozenset({"title", "description", "$comment", "$defs"})


def _flattened(root: dict[str, Any]) -> dict[str, Any]:
    """The root's ``allOf`` of vocabularies folded into one ``properties``, where that is exact.

    Each vocabulary's root is ``type`` (the root's own) and ``properties``
    naming keywords no other vocabulary names; the conjunction of such
    schemas is one schema with the union of their ``properties``, which the
    predicate then checks with one lookup per member of the schema instead
    of one pass per vocabulary.  Anything else leaves the ``allOf`` as it is.
    """
    branches = root.get("allOf")
    if not isinstance(branches, list) or set(root) - _ANNOTATIONS - {"allOf", "type", "properties"}:
        return root
    merged: dict[str, Any] = dict(root.get("properties", {}))
    for branch in branches:
        target = branch.get("$ref", "") if isinstance(branch, dict) else ""
        if set(branch) != {"$ref"} or not target.startswith("#/$defs/"):
            return root
        vocabulary = root["$defs"].get(target[len("#/$defs/") :])
        if not isinstance(vocabulary, dict):
            return root
        if vocabulary.get("type") != root.get("type"):
            return root
        if set(vocabulary) - _ANNOTATIONS - {"type", "properties"}:
            return root
        listed = vocabulary.get("properties", {})
        if set(listed) & set(merged):
            return root
        merged.update(listed)
    flat = {key: value for key, value in root.items() if key != "allOf"}
    flat["properties"] = merged
    return flat


@cache
def _predicate(validator_class: Any, format_checker: Any) -> Callable[[Any], bool] | None:
    """The compiled check for this validator class and format checker, or None."""
    try:
        static = static_meta_schema()
    except (_NotStatic, LookupError):
        return None
    return compile_validity_check(validator_class(static, format_checker=format_checker))


def passes_meta_schema(
    schema: Any, size: int, validator_class: Any, format_checker: Any, seconds: float
) -> bool:
    """True only when ``schema`` is valid against the 2020-12 meta-schema; False: "ask jsonschema".

    ``size`` is the schema's JCS length.  ``format_checker`` must be the one
    the clocked check uses, so that both assert the same formats.
    ``seconds`` bounds the time its pattern matches and format checks may
    take together (the slow part of a schema full of patterns); once spent,
    the answer is "ask jsonschema", whose check the compile clock stops.
    """
    if size > FAST_CHECK_BYTES:
        return False
    check = _predicate(validator_class, format_checker)
    if check is None:
        return False
    with patterns.pattern_budget(seconds) as budget:
        try:
            valid = check(schema)
        except Exception:  # a value the predicate cannot judge: jsonschema will
            return False
    return valid and not budget.timed_out
