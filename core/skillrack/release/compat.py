"""Schema evolution: immutable published versions, and changes that look breaking.

The draft ("Schema Evolution and Compatibility"): "Schema publishers MUST treat
a published schema version and digest as immutable. A changed schema receives
a new version and digest."  That part is exact and is an error.  Whether a
change is *breaking* is not: "Structural compatibility checking is necessary
but not sufficient", and a change of units or meaning needs a new major version
however the structure looks.  :func:`breaking_changes` is therefore a
heuristic that errs on the side of saying too much, and its findings are
warnings: a property removed, a property newly required, a type narrowed, an
enumerated value removed (or values newly enumerated), ``additionalProperties``
or ``unevaluatedProperties`` tightened, a bound, ``pattern`` or ``format``
added or tightened, an ``anyOf``/``oneOf`` alternative removed.

It does not know whether a schema is used for input or output (one schema can
be both: an upstream output composed into a downstream input), so it reports
any narrowing.  Local ``$ref`` values (``#...`` JSON Pointers) are followed;
other references are compared as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from skillrack.interface.pointers import PointerError, escape, resolve

#: ``...:1.0``, ``.../v2.3``: a version as the last segment of a schema URI (``\Z``, not
#: ``$``, which would also end before a final newline).
_VERSION_TAIL = re.compile(r"(?<=[:/_-])v?((?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*))\Z")

_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_MAX_DEPTH = 64
_MAX_CHANGES = 50


def uri_version(schema_uri: str) -> str | None:
    """The version a schema URI ends with (``urn:acme:thing:1.2`` -> ``1.2``), if any."""
    match = _VERSION_TAIL.search(schema_uri)
    return match.group(1) if match else None


def family_of(schema_uri: str) -> str:
    """The governed schema family: the URI without a trailing version segment."""
    return _VERSION_TAIL.sub("", schema_uri)


@dataclass(frozen=True)
class Change:
    """A change that looks breaking: a short rule, where (in the new schema), and what."""

    rule: str
    pointer: str
    message: str


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _values(schema: Mapping[str, Any]) -> list[Any] | None:
    if "const" in schema:
        return [schema["const"]]
    enum = schema.get("enum")
    return list(enum) if isinstance(enum, list) else None


def _types(schema: Mapping[str, Any]) -> set[str] | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    values = _values(schema)
    return {_json_type(v) for v in values} if values is not None else None


def _covered(kind: str, allowed: set[str]) -> bool:
    return kind in allowed or (kind == "integer" and "number" in allowed)


def _same(a: Any, b: Any) -> bool:
    """JSON equality (``1 == True`` in Python, not in JSON)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


class _Differ:
    def __init__(self, old_root: Any, new_root: Any) -> None:
        self.old_root = old_root
        self.new_root = new_root
        self.changes: list[Change] = []
        self.visited: set[tuple[str, str]] = set()

    def add(self, rule: str, pointer: str, message: str) -> None:
        if len(self.changes) < _MAX_CHANGES:
            self.changes.append(Change(rule, pointer or "", message))

    def deref(self, node: Any, root: Any) -> tuple[Any, str | None]:
        """A node with its local ``$ref`` target merged in (siblings win), and the ref."""
        ref = node.get("$ref") if isinstance(node, Mapping) else None
        if not isinstance(ref, str) or not ref.startswith("#"):
            return node, None
        seen: set[str] = set()
        merged = {k: v for k, v in node.items() if k != "$ref"}
        while isinstance(ref, str) and ref.startswith("#") and ref not in seen:
            seen.add(ref)
            try:
                target = resolve(root, ref[1:])  # "#" alone is the root
            except PointerError:
                return node, None
            if not isinstance(target, Mapping):
                return node, None
            merged = {**{k: v for k, v in target.items() if k != "$ref"}, **merged}
            ref = target.get("$ref")
        return merged, node["$ref"]

    def walk(self, old: Any, new: Any, at: str, depth: int = 0) -> None:
        if depth > _MAX_DEPTH or len(self.changes) >= _MAX_CHANGES:
            return
        if isinstance(old, bool) or isinstance(new, bool):
            if new is False and old is not False:
                self.add("type_narrowed", at, "the subschema now accepts nothing (false)")
            elif old is True and isinstance(new, Mapping) and new:
                self.walk({}, new, at, depth + 1)
            return
        if not isinstance(old, Mapping) or not isinstance(new, Mapping):
            return
        old, old_ref = self.deref(old, self.old_root)
        new, new_ref = self.deref(new, self.new_root)
        if old_ref is not None or new_ref is not None:
            key = (str(old_ref), str(new_ref))
            if key in self.visited:
                return
            self.visited.add(key)
        self.compare_types(old, new, at)
        self.compare_values(old, new, at)
        self.compare_objects(old, new, at, depth)
        self.compare_bounds(old, new, at)
        self.compare_arrays(old, new, at, depth)
        self.compare_combinators(old, new, at, depth)

    def compare_types(self, old: Mapping[str, Any], new: Mapping[str, Any], at: str) -> None:
        before, after = _types(old), _types(new)
        if after is None:
            return
        if before is None:
            self.add("type_narrowed", f"{at}/type", f"any type became {sorted(after)}")
        elif lost := sorted(t for t in before if not _covered(t, after)):
            self.add(
                "type_narrowed",
                f"{at}/type",
                f"type {sorted(before)} became {sorted(after)} (no longer {', '.join(lost)})",
            )

    def compare_values(self, old: Mapping[str, Any], new: Mapping[str, Any], at: str) -> None:
        before, after = _values(old), _values(new)
        if after is None:
            return
        where = f"{at}/{'const' if 'const' in new else 'enum'}"
        if before is None:
            self.add("enum_value_removed", where, f"values are now restricted to {after!r}")
            return
        removed = [v for v in before if not any(_same(v, w) for w in after)]
        if removed:
            self.add("enum_value_removed", where, f"value(s) {removed!r} no longer allowed")

    def compare_objects(
        self, old: Mapping[str, Any], new: Mapping[str, Any], at: str, depth: int
    ) -> None:
        old_props = old.get("properties") if isinstance(old.get("properties"), Mapping) else {}
        new_props = new.get("properties") if isinstance(new.get("properties"), Mapping) else {}
        assert isinstance(old_props, Mapping) and isinstance(new_props, Mapping)
        for name, subschema in old_props.items():
            where = f"{at}/properties/{escape(name)}"
            if name not in new_props:
                self.add("property_removed", where, f"property {name!r} was removed")
            else:
                self.walk(subschema, new_props[name], where, depth + 1)
        before = set(old.get("required", [])) if isinstance(old.get("required"), list) else set()
        after = new.get("required", []) if isinstance(new.get("required"), list) else []
        for name in after:
            if name not in before:
                self.add("required_added", f"{at}/required", f"property {name!r} is now required")
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            was, now = old.get(keyword, True), new.get(keyword, True)
            where = f"{at}/{keyword}"
            if now is False and was is not False:
                self.add(
                    "additional_properties_tightened",
                    where,
                    f"{keyword} is now false: members the old version allowed are refused",
                )
            elif (was is True or was == {}) and isinstance(now, Mapping) and now:
                self.add(
                    "additional_properties_tightened",
                    where,
                    f"{keyword} now constrains members the old version allowed freely",
                )
            elif isinstance(was, Mapping) and isinstance(now, Mapping):
                self.walk(was, now, where, depth + 1)

    def compare_bounds(self, old: Mapping[str, Any], new: Mapping[str, Any], at: str) -> None:
        for keyword in _LOWER_BOUNDS + _UPPER_BOUNDS:
            now = new.get(keyword)
            if not _number(now):
                continue
            was = old.get(keyword)
            lower = keyword in _LOWER_BOUNDS
            if not _number(was) or (now > was if lower else now < was):
                self.add(
                    "constraint_tightened",
                    f"{at}/{keyword}",
                    f"{keyword} {'added' if not _number(was) else f'{was} ->'} {now}",
                )
        for keyword in ("pattern", "format"):
            if keyword in new and new.get(keyword) != old.get(keyword):
                was = old.get(keyword)
                self.add(
                    "constraint_tightened",
                    f"{at}/{keyword}",
                    f"{keyword} {'added' if was is None else f'{was!r} ->'} {new[keyword]!r}",
                )

    def compare_arrays(
        self, old: Mapping[str, Any], new: Mapping[str, Any], at: str, depth: int
    ) -> None:
        if "items" in new and "items" in old:
            self.walk(old["items"], new["items"], f"{at}/items", depth + 1)
        elif "items" in new and new["items"] not in (True, {}):
            self.add("type_narrowed", f"{at}/items", "array items are now constrained")
        old_prefix, new_prefix = old.get("prefixItems"), new.get("prefixItems")
        if isinstance(old_prefix, list) and isinstance(new_prefix, list):
            for index, (was, now) in enumerate(zip(old_prefix, new_prefix, strict=False)):
                self.walk(was, now, f"{at}/prefixItems/{index}", depth + 1)

    def compare_combinators(
        self, old: Mapping[str, Any], new: Mapping[str, Any], at: str, depth: int
    ) -> None:
        for keyword in ("anyOf", "oneOf", "allOf"):
            was, now = old.get(keyword), new.get(keyword)
            if not isinstance(now, list):
                continue
            if not isinstance(was, list):
                self.add("constraint_tightened", f"{at}/{keyword}", f"{keyword} added")
                continue
            if keyword != "allOf" and len(now) < len(was):
                self.add(
                    "alternative_removed",
                    f"{at}/{keyword}",
                    f"{keyword} has {len(now)} alternatives, {len(was)} before",
                )
            if keyword == "allOf" and len(now) > len(was):
                self.add(
                    "constraint_tightened",
                    f"{at}/{keyword}",
                    f"allOf has {len(now)} subschemas, {len(was)} before",
                )
            for index, (a, b) in enumerate(zip(was, now, strict=False)):
                self.walk(a, b, f"{at}/{keyword}/{index}", depth + 1)
        for keyword in ("then", "else"):
            if keyword in old and keyword in new:
                self.walk(old[keyword], new[keyword], f"{at}/{keyword}", depth + 1)


def breaking_changes(old: Any, new: Any) -> list[Change]:
    """Structural changes from ``old`` to ``new`` that look breaking (a heuristic; see above)."""
    differ = _Differ(old, new)
    differ.walk(old, new, "")
    return differ.changes
