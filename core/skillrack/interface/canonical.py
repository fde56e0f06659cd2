"""JCS (RFC 8785) canonical bytes and the draft's ``sha256:<hex>`` digests.

Both the schema digest (over ``resolution.schema``) and the Skill Interface
Document Digest (over the whole document) are "SHA-256 over the UTF-8 bytes of
the JCS serialization".  JCS only accepts I-JSON: NaN, infinities, integers
beyond IEEE-754 double precision, lone surrogates and duplicate object members
have no canonical form, so they are refused here instead of being digested in
some implementation-specific way that another agent would not reproduce.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from json.encoder import encode_basestring  # what json.dumps(ensure_ascii=False) writes
from typing import Any, Final

import rfc8785

from skillrack.errors import SkillrackError

DIGEST_PREFIX = "sha256:"
DIGEST_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")


class CanonicalizationError(SkillrackError, ValueError):
    """The value has no JCS representation (the draft's JCS input rules)."""


#: The largest integer magnitude JCS accepts (IEEE-754 double precision).
_SAFE_INTEGER: Final = 2**53 - 1


def _plain(value: Any) -> bool:
    """True when ``json.dumps`` writes exactly the JCS form of ``value``.

    That holds for exact ``dict`` (string keys), ``list``, ``str``, ``bool``,
    ``None`` and ``int`` within the safe range, when no key holds a character
    at or above U+D800: ``json.dumps`` with sorted keys, no ASCII escaping and
    compact separators escapes strings as RFC 8785 does (the same short
    escapes, ``\\u00xx`` in lowercase hex for the other control characters),
    and code-point order of such keys is their UTF-16 order.  Floats (ECMAScript
    number formatting), other types and other keys go to ``rfc8785``.  Recursive
    on purpose: a cyclic or very deep value raises RecursionError, and then
    ``rfc8785`` decides what happens.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return bool(-_SAFE_INTEGER <= value <= _SAFE_INTEGER)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not (key.isascii() or max(key, default="") < "\ud800"):
                return False
            if type(item) is not str and not _plain(item):
                return False
        return True
    if kind is list:
        return all(type(item) is str or _plain(item) for item in value)
    return False


#: JCS bytes computed inside a :func:`remembering` block, by object identity.
_remembered: ContextVar[dict[int, tuple[Any, bytes]] | None] = ContextVar(
    "skillrack_remembered_jcs", default=None
)


@contextmanager
def remembering() -> Iterator[None]:
    """Inside this block, the JCS bytes of one object or array (by identity) are made once.

    For a caller that serializes the same values several times and changes
    none of them meanwhile: assembling a skill digests each schema when it
    builds its Schema Reference, again when it verifies the document, and
    sizes it once more when it compiles it.  Each value is kept referenced
    with its bytes until the block ends, so no identity is reused inside it.
    """
    if _remembered.get() is not None:  # nested: the outer block remembers
        yield
        return
    token = _remembered.set({})
    try:
        yield
    finally:
        _remembered.reset(token)


def canonical_bytes(value: Any, *, from_parts: bool = False) -> bytes:
    """Return the JCS serialization of ``value`` as UTF-8 bytes.

    JSON values of the common kinds (no floats) are written by the C encoder
    of ``json``, which gives the same bytes several times faster; assembly
    digests every schema and document several times (and inside
    :func:`remembering`, serializes each only once).  Everything else, and
    every value JCS refuses, goes through ``rfc8785``.

    ``from_parts``: inside a :func:`remembering` block, an object or array
    built around values serialized before (a document around its schemas)
    is written from their remembered bytes, its own few members in Python,
    rather than serialized whole again.  JCS writes an object as its members
    sorted by name, each name and value in JCS, so the bytes are the same;
    anything :func:`_plain` would not pass (a float, say) serializes the
    whole value the usual way, with the usual refusal.
    """
    memo = _remembered.get()
    if memo is None or not isinstance(value, dict | list):
        return _canonical_bytes(value)
    known = memo.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    encoded = _from_parts(value, memo) if from_parts else None
    if encoded is None:
        encoded = _canonical_bytes(value)
    memo[id(value)] = (value, encoded)
    return encoded


_LITERALS: Final[dict[Any, bytes]] = {True: b"true", False: b"false", None: b"null"}


def _from_parts(value: Any, memo: dict[int, tuple[Any, bytes]]) -> bytes | None:
    """JCS bytes of ``value`` from the remembered bytes of its parts; None: "serialize it whole".

    Written by hand only where :func:`_plain` holds (the member names sort
    the same in Python as in UTF-16, and strings, safe integers and literals
    are written as ``json.dumps`` writes them); anything else returns None.
    """
    try:
        return _joined_bytes(value, memo)
    except (RecursionError, ValueError):  # a cycle, or a lone surrogate: the usual way decides
        return None


def _joined_bytes(value: Any, memo: dict[int, tuple[Any, bytes]]) -> bytes | None:
    kind = type(value)
    if kind is dict or kind is list:
        known = memo.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        parts: list[bytes] = []
        if kind is dict:
            for key in value:
                if type(key) is not str or not (key.isascii() or max(key, default="") < "\ud800"):
                    return None
            for key in sorted(value):
                part = _joined_bytes(value[key], memo)
                if part is None:
                    return None
                parts.append(_string(key) + b":" + part)
            return b"{" + b",".join(parts) + b"}"
        for item in value:
            part = _joined_bytes(item, memo)
            if part is None:
                return None
            parts.append(part)
        return b"[" + b",".join(parts) + b"]"
    if kind is str:
        return _string(value)
    if kind is bool or value is None:
        return _LITERALS[value]
    if kind is int and -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
        return str(value).encode("ascii")
    return None


def _string(text: str) -> bytes:
    """``json.dumps(text, ensure_ascii=False)`` in UTF-8; a lone surrogate raises."""
    return encode_basestring(text).encode("utf-8")


def _canonical_bytes(value: Any) -> bytes:
    try:
        if _plain(value):
            return json.dumps(
                value, ensure_ascii=False, sort_keys=True, separators=(",", ":")
            ).encode("utf-8")
    except (RecursionError, ValueError):  # very deep, cyclic, or a lone surrogate
        pass
    try:
        return rfc8785.dumps(value)
    except rfc8785.IntegerDomainError as exc:
        raise CanonicalizationError(
            "integer outside the IEEE-754 double precision range (|n| > 2^53 - 1) "
            "cannot be canonicalized; carry it as a string"
        ) from exc
    except rfc8785.FloatDomainError as exc:
        raise CanonicalizationError("NaN and infinities cannot be canonicalized") from exc
    except rfc8785.CanonicalizationError as exc:
        raise CanonicalizationError(f"value cannot be canonicalized: {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise CanonicalizationError(f"value is not JSON: {exc}") from exc


def digest_of(value: Any) -> str:
    """``sha256:`` followed by the 64 lowercase hex digits of SHA-256(JCS(value))."""
    return DIGEST_PREFIX + hashlib.sha256(canonical_bytes(value)).hexdigest()


def is_digest(text: object) -> bool:
    """True when ``text`` has the exact digest syntax of interface version 1.0."""
    return isinstance(text, str) and DIGEST_PATTERN.fullmatch(text) is not None


def _refuse_constant(name: str) -> Any:
    raise CanonicalizationError(f"{name} is not JSON and cannot be canonicalized")


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)  # built in C; fewer members than pairs means a name repeats
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise CanonicalizationError(f"duplicate object member {key!r} (I-JSON forbids it)")
            seen.add(key)
    return obj


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON text under the I-JSON rules JCS assumes.

    Python's ``json`` accepts ``NaN``/``Infinity`` and keeps the last of two
    duplicate members; both would make a digest that another implementation
    cannot reproduce, so both are refused.  Lone surrogates and out-of-range
    numbers are caught when the parsed value is canonicalized.
    """
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        value = json.loads(
            text, parse_constant=_refuse_constant, object_pairs_hook=_refuse_duplicates
        )
    except UnicodeDecodeError as exc:
        raise CanonicalizationError("input is not valid UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise CanonicalizationError(
            f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError as exc:
        raise CanonicalizationError("JSON nesting is too deep") from exc
    canonical_bytes(value)  # refuse what JCS cannot represent, at the edge
    return value
