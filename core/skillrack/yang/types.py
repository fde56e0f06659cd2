"""A YANG leaf's type as the JSON Schema of its RFC 7951 encoding.

RFC 7951 section 6 fixes the JSON form of each built-in type; the restrictions
a typedef chain adds (ranges, lengths, patterns, enums, bits) are read from
pyang's type specification, which keeps every level of the chain (``base``).
What the JSON value cannot show (a leafref's target existing, an
instance-identifier pointing at data) is returned as a note for the caller to
write into the schema and the report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from skillrack.yang.errors import YangError
from skillrack.yang.numeric import decimal_pattern, integer_pattern
from skillrack.yang.xsd_regex import XsdPatternError, to_ecma

__all__ = ["TypeSchema", "leaf_type_schema"]

_JSON_INTEGERS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
_STRING_INTEGERS = {"int64": (-(2**63), 2**63 - 1), "uint64": (0, 2**64 - 1)}
_DECIMAL64 = (-(2**63), 2**63 - 1)

#: RFC 4648 base64 with padding (RFC 7951 section 6.6).
BASE64 = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
#: RFC 7951 section 6.11: an absolute data path with module-qualified first names and
#: predicates; the syntax only (whether the instance exists is a note).
_ID = "[A-Za-z_][A-Za-z0-9_.-]*"
_PREDICATE = "\\[(?:[^\\]'\"]|'[^']*'|\"[^\"]*\")*\\]"
INSTANCE_IDENTIFIER = f"^(?:/(?:{_ID}:)?{_ID}(?:{_PREDICATE})*)+$"


@dataclass
class TypeSchema:
    """The JSON Schema of a type, and what it could not say (notes for the report)."""

    schema: dict[str, Any]
    notes: list[dict[str, Any]] = field(default_factory=list)


def _chain(spec: Any) -> list[Any]:
    out = []
    while spec is not None:
        out.append(spec)
        spec = getattr(spec, "base", None)
    return out


def _builtin(spec: Any) -> Any:
    return _chain(spec)[-1]


def _bound(value: Any, default: Any) -> Any:
    if value in ("min", "max"):
        return default
    return getattr(value, "value", value)


def _intervals(spec: Any, attribute: str, low: Any, high: Any) -> list[tuple[Any, Any]]:
    """The most derived ``range``/``length`` of the chain, 'min'/'max' resolved.

    A derived restriction is a subset of its base's (pyang checks it), so the
    most derived one is the effective set; its 'min' and 'max' are the base's
    effective bounds.
    """
    for index, level in enumerate(_chain(spec)):
        values = getattr(level, attribute, None)
        if values:
            base_low, base_high = low, high
            outer = _intervals(level.base, attribute, low, high) if level.base else []
            if outer:
                base_low, base_high = outer[0][0], outer[-1][1]
            out = []
            for lo, hi in values:
                lo_v = _bound(lo, base_low if lo == "min" else base_high)
                hi_v = lo_v if hi is None else _bound(hi, base_high if hi == "max" else base_low)
                out.append((lo_v, hi_v))
            return out
        del index
    return []


def _number_schema(intervals: list[tuple[int, int]]) -> dict[str, Any]:
    if len(intervals) == 1:
        lo, hi = intervals[0]
        return {"type": "integer", "minimum": lo, "maximum": hi}
    return {
        "type": "integer",
        "anyOf": [{"minimum": lo, "maximum": hi} for lo, hi in intervals],
    }


def _lengths(spec: Any, key_min: str, key_max: str) -> dict[str, Any]:
    intervals = _intervals(spec, "lengths", 0, None)
    if not intervals:
        return {}

    def one(lo: Any, hi: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if lo:
            out[key_min] = lo
        if hi is not None:
            out[key_max] = hi
        return out

    if len(intervals) == 1:
        return one(*intervals[0])
    return {"anyOf": [one(lo, hi) for lo, hi in intervals]}


def _patterns(spec: Any, where: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for level in reversed(_chain(spec)):
        for pattern in getattr(level, "res", ()) or ():
            text = getattr(pattern, "spec", str(pattern))
            try:
                ecma = to_ecma(text)
            except XsdPatternError as exc:
                position = getattr(pattern, "pos", None)
                at = f"{position.ref}:{position.line}: " if position is not None else ""
                raise YangError(f"{at}{where}: {exc}") from None
            if getattr(pattern, "invert_match", False):
                out.append({"not": {"pattern": ecma}})
            else:
                out.append({"pattern": ecma})
    return out


def _string_schema(spec: Any, where: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    lengths = _lengths(spec, "minLength", "maxLength")
    patterns = _patterns(spec, where)
    parts = []
    if "anyOf" in lengths:
        parts.append({"anyOf": lengths.pop("anyOf")})
    schema.update(lengths)
    if len(patterns) == 1 and "pattern" in patterns[0]:
        schema["pattern"] = patterns[0]["pattern"]
    else:
        parts.extend(patterns)
    if parts:
        schema["allOf"] = parts
    return schema


def _enum_names(spec: Any) -> list[str]:
    for level in _chain(spec):
        enums = getattr(level, "enums", None)
        if enums is not None:
            return [name for name, _value in enums]
    return []


def _bit_names(spec: Any) -> list[str]:
    for level in _chain(spec):
        bits = getattr(level, "bits", None)
        if bits is not None:
            return [name for name, _position in bits]
    return []


def bits_pattern(names: list[str]) -> str:
    """Space-separated bit names, each at most once, in any order (RFC 7951 section 6.5)."""
    if not names:
        return "^$"
    alternatives = "|".join(_escape(name) for name in names)
    word = f"(?:{alternatives})"
    # a name may not appear twice: no position starts with a name seen again later
    repeated = f"(?!(?:.* )?({alternatives}) (?:.* )?\\1(?: |$))"
    return f"^{repeated}(?:{word}(?: {word})*)?$"


def _escape(name: str) -> str:
    return "".join(
        c if c.isascii() and (c.isalnum() or c == "_") else f"\\u{{{ord(c):X}}}" for c in name
    )


@dataclass(frozen=True)
class Context:
    """What a type needs from its surroundings."""

    #: The module whose namespace the leaf is in (an identity of it may be unqualified).
    module: str
    #: Every identity derived from all the given base identities, as ``(module, name)``.
    identities: Callable[[list[Any]], list[tuple[str, str]]]
    where: str


def leaf_type_schema(type_stmt: Any, leaf: Any, context: Context) -> TypeSchema:
    """The schema of ``type_stmt`` (a pyang ``type`` statement) on ``leaf``."""
    spec = type_stmt.i_type_spec
    if spec is None:
        raise YangError(f"{context.where}: pyang did not resolve type {type_stmt.arg!r}")
    builtin = _builtin(spec)
    name = builtin.name
    notes: list[dict[str, Any]] = []
    if name in _JSON_INTEGERS:
        intervals = _intervals(spec, "ranges", *_JSON_INTEGERS[name]) or [_JSON_INTEGERS[name]]
        return TypeSchema(_number_schema(intervals))
    if name in _STRING_INTEGERS:
        intervals = _intervals(spec, "ranges", *_STRING_INTEGERS[name]) or [_STRING_INTEGERS[name]]
        return TypeSchema({"type": "string", "pattern": integer_pattern(intervals)})
    if name == "decimal64":
        digits = builtin.fraction_digits
        intervals = _intervals(spec, "ranges", *_DECIMAL64) or [_DECIMAL64]
        return TypeSchema({"type": "string", "pattern": decimal_pattern(intervals, digits)})
    if name == "boolean":
        return TypeSchema({"type": "boolean"})
    if name == "empty":
        return TypeSchema({"const": [None]})
    if name == "string":
        return TypeSchema(_string_schema(spec, context.where))
    if name == "enumeration":
        return TypeSchema({"enum": _enum_names(spec)})
    if name == "bits":
        return TypeSchema({"type": "string", "pattern": bits_pattern(_bit_names(spec))})
    if name == "binary":
        schema: dict[str, Any] = {"type": "string", "contentEncoding": "base64", "pattern": BASE64}
        lengths = _intervals(spec, "lengths", 0, None)
        if lengths:
            notes.append(
                {
                    "binary-length": " | ".join(
                        f"{lo}..{'max' if hi is None else hi}" for lo, hi in lengths
                    )
                }
            )
        return TypeSchema(schema, notes)
    if name == "identityref":
        bases = [base.i_identity for base in builtin.idbases if hasattr(base, "i_identity")]
        values: list[str] = []
        for module, identity in context.identities(bases):
            values.append(f"{module}:{identity}")
            if module == context.module:
                values.append(identity)
        if not values:
            names = ", ".join(base.arg for base in bases)
            notes.append({"identityref": f"no identity derived from {names} is loaded"})
        return TypeSchema({"type": "string", "enum": sorted(set(values))}, notes)
    if name == "instance-identifier":
        if _require_instance(type_stmt):
            notes.append({"instance-identifier": "the instance must exist"})
        return TypeSchema({"type": "string", "pattern": INSTANCE_IDENTIFIER}, notes)
    if name == "leafref":
        target = _leafref_target(spec, leaf)
        if target is None:
            raise YangError(f"{context.where}: the leafref's target was not resolved by pyang")
        inner = leaf_type_schema(target.search_one("type"), target, context)
        path = next((level.path_ for level in _chain(spec) if hasattr(level, "path_")), None)
        notes.extend(inner.notes)
        if _require_instance(type_stmt):
            notes.append({"leafref": getattr(path, "arg", str(path))})
        return TypeSchema(inner.schema, notes)
    if name == "union":
        members: list[dict[str, Any]] = []
        for member in builtin.types:
            inner = leaf_type_schema(member, leaf, context)
            members.append(inner.schema)
            notes.extend(inner.notes)
        return TypeSchema({"anyOf": members}, notes)
    raise YangError(f"{context.where}: type {name!r} is not supported")


def _require_instance(type_stmt: Any) -> bool:
    """``require-instance`` along the typedef chain (default true).

    Read from the statements, not pyang's type specification: pyang shares one
    specification object per built-in type, and a module that sets
    ``require-instance false`` on a bare ``instance-identifier`` changes it for all.
    """
    while type_stmt is not None:
        require = type_stmt.search_one("require-instance")
        if require is not None:
            return bool(require.arg == "true")
        typedef = getattr(type_stmt, "i_typedef", None)
        type_stmt = typedef.search_one("type") if typedef is not None else None
    return True


def _leafref_target(spec: Any, leaf: Any) -> Any:
    for level in _chain(spec):
        target = getattr(level, "i_target_node", None)
        if target is not None:
            return target
    pointer = getattr(leaf, "i_leafref_ptr", None)
    return pointer[0] if pointer else None
