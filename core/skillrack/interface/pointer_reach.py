"""Whether a JSON Pointer can name a value in some instance of a schema.

A skill's resource pointers (``Skill(resources=("/device_id", ...))``) say
where in the arguments the resources a call touches are; authorization
policies and approvals match on the values found there.  A pointer that no
valid argument can ever contain (``/interface`` when the input schema's
member is ``interfaces`` and no other member is allowed) makes every rule on
that resource silently never match, so assembly refuses it, with the nearest
member name, rather than let a policy be written against nothing.

The question asked is the generous one: *could* some instance that
validates have a value there?  So only what the schema rules out refuses a
step: a member name outside ``properties`` where ``additionalProperties``
(or ``unevaluatedProperties``) is ``false`` and no ``patternProperties``
matches, a step into a value whose ``type`` cannot be an object or an array,
an index past ``maxItems`` or ``prefixItems`` closed by ``items: false``, a
``false`` schema.  ``anyOf``/``oneOf`` need one branch to allow the step,
``allOf`` every branch; a local ``$ref`` is followed; anything the walk does
not understand (a remote ``$ref``, ``if``/``then``, ``dependentSchemas``)
counts as allowing it, since refusing a valid declaration would be worse
than missing a typo.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from skillrack.interface.pointers import MISSING, find, unescape

#: Local ``$ref`` hops followed at most along one pointer (a recursive schema ends here).
MAX_REF_HOPS = 32
#: An array index as RFC 6901 spells it (as :mod:`skillrack.interface.pointers` reads it).
_INDEX = re.compile(r"0|[1-9][0-9]*")


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    return [unescape(token) for token in pointer[1:].split("/")]


def _types(schema: Mapping[str, Any]) -> set[str] | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {str(k) for k in kind}
    return None


class _Walk:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.hops = 0

    def deref(self, schema: Mapping[str, Any]) -> Any:
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#") or self.hops >= MAX_REF_HOPS:
            return None
        self.hops += 1
        target = find(self.root, unquote(ref[1:]))
        return None if target is MISSING else target

    def reach(self, schema: Any, tokens: list[str]) -> str | None:
        """Why no instance of ``schema`` has a value at ``tokens``; None when one may."""
        if schema is False:
            return "the schema there allows no value"
        if not isinstance(schema, Mapping) or not tokens:
            return None
        target = self.deref(schema)
        if target is not None:
            reason = self.reach(target, tokens)
            if reason is not None:
                return reason
        for branch in schema.get("allOf") or []:
            reason = self.reach(branch, tokens)
            if reason is not None:
                return reason
        for word in ("anyOf", "oneOf"):
            branches = schema.get(word)
            if isinstance(branches, list) and branches:
                reasons = [self.reach(b, tokens) for b in branches]
                if all(r is not None for r in reasons):
                    return next(r for r in reasons if r is not None)
        return self.step(schema, tokens)

    def step(self, schema: Mapping[str, Any], tokens: list[str]) -> str | None:
        token, rest = tokens[0], tokens[1:]
        kinds = _types(schema)
        object_ok = kinds is None or "object" in kinds
        array_ok = (kinds is None or "array" in kinds) and _INDEX.fullmatch(token) is not None
        if not object_ok and not array_ok:
            return f"{token!r} is inside a value of type {' or '.join(sorted(kinds or []))}"
        reasons: list[str] = []
        if object_ok:
            reason = self._member(schema, token, rest)
            if reason is None:
                return None
            reasons.append(reason)
        if array_ok:
            reason = self._item(schema, int(token), rest)
            if reason is None:
                return None
            reasons.append(reason)
        return reasons[0]

    def _member(self, schema: Mapping[str, Any], name: str, rest: list[str]) -> str | None:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        if name in properties:
            return self.reach(properties[name], rest)
        patterns = schema.get("patternProperties")
        for pattern, sub in (patterns if isinstance(patterns, Mapping) else {}).items():
            try:
                matched = re.search(str(pattern), name) is not None
            except re.error:
                matched = True  # an ECMA-262 pattern Python cannot read: give it the benefit
            if matched:
                return self.reach(sub, rest)
        other = schema.get("additionalProperties", schema.get("unevaluatedProperties", True))
        if other is False:
            return f"no member {name!r} is allowed there{_nearest(name, sorted(properties))}"
        return self.reach(other, rest)

    def _item(self, schema: Mapping[str, Any], index: int, rest: list[str]) -> str | None:
        most = schema.get("maxItems")
        if isinstance(most, int) and index >= most:
            return f"index {index} is past maxItems {most}"
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        if index < len(prefix):
            return self.reach(prefix[index], rest)
        return self.reach(schema.get("items", True), rest)


def _nearest(name: str, members: list[str]) -> str:
    """``; the nearest member is 'x'``, or the members there when none is close."""
    close = difflib.get_close_matches(name, members, n=1, cutoff=0.5)
    if close:
        return f"; the nearest member is {close[0]!r}"
    if members:
        shown = ", ".join(repr(m) for m in members[:8]) + (", ..." if len(members) > 8 else "")
        return f"; the members there are {shown}"
    return "; no member is allowed there at all"


def pointer_problem(schema: Any, pointer: str) -> str | None:
    """Why ``pointer`` resolves in no instance of ``schema``, or None when it may resolve."""
    return _Walk(schema).reach(schema, _tokens(pointer))


__all__ = ["MAX_REF_HOPS", "pointer_problem"]
