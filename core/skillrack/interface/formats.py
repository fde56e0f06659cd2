"""The defined ``format`` checkers, under the same time budget as patterns and a size cap.

The draft makes the formats JSON Schema defines assertions, and jsonschema's
checkers come from several libraries with nothing bounding them: ``uri`` on a
3.9 MB string took 1.8 s, ``iri`` (``rfc3987-syntax``, an Earley parser) a
second or more on one kilobyte, and ``format: regex`` with ``a{4294967295}``
raised ``OverflowError`` out of validation, so a bad argument failed the skill
(``output_invalid``) instead of being ``input_invalid``.  Every checker
therefore runs through :func:`bounded`:

- a string longer than :data:`MAX_FORMAT_CHARS` does not match any format
  (no defined format needs more: hostnames stop at 253 characters, dates and
  addresses far sooner), so no checker ever sees a long string;
- the time a checker takes is charged to the validation's budget
  (:func:`skillrack.interface.patterns.charged`), the one pattern matches
  share; once it is spent, no further checker runs and the instance is refused;
- whatever a checker raises means "does not match": the detail then carries
  the pointer and ``keyword: format``, and the skill is never blamed.

``iri`` and ``iri-reference`` are checked by mapping the IRI to a URI (RFC 3987
section 3.1: every ``ucschar``/``iprivate`` code point percent-encoded as
UTF-8) and checking that URI with the same linear-time checker as ``uri``;
other non-ASCII code points make it invalid.  ``iprivate`` is accepted
anywhere rather than only in the query, the one leniency of the mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from skillrack.interface.patterns import charged
from skillrack.interface.rfc_formats import EXACT_CHECKERS, is_uri, is_uri_reference

#: The longest string a ``format`` is checked on; a longer one does not match.
MAX_FORMAT_CHARS: Final = 8192

Checker = Callable[[object], Any]

#: RFC 3987's ``ucschar`` and ``iprivate`` ranges: the non-ASCII an IRI may hold.
_IRI_RANGES: Final = (
    (0xA0, 0xD7FF),
    (0xE000, 0xF8FF),
    (0xF900, 0xFDCF),
    (0xFDF0, 0xFFEF),
    *((plane << 16, (plane << 16) + 0xFFFD) for plane in range(1, 17)),
)


def _iri_char(code: int) -> bool:
    return any(low <= code <= high for low, high in _IRI_RANGES)


def _as_uri(iri: str) -> str | None:
    """The URI an IRI maps to, or None when it holds a code point no IRI may hold."""
    if iri.isascii():
        return iri
    out: list[str] = []
    for char in iri:
        code = ord(char)
        if code < 0x80:
            out.append(char)
        elif _iri_char(code):
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
        else:
            return None
    return "".join(out)


def is_iri(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    uri = _as_uri(instance)
    return uri is not None and is_uri(uri)


def is_iri_reference(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    uri = _as_uri(instance)
    return uri is not None and is_uri_reference(uri)


#: Checkers skillrack supplies in place of jsonschema's: the exact RFC grammars
#: (:mod:`skillrack.interface.rfc_formats`), and the IRIs mapped onto them.
_REPLACED: Final[Mapping[str, Checker]] = {
    **EXACT_CHECKERS,
    "iri": is_iri,
    "iri-reference": is_iri_reference,
}


def bounded(check: Checker) -> Callable[[object], bool]:
    """``check`` under the size cap and the validation's budget; never raises."""

    def attempt(instance: object) -> bool:
        try:
            return bool(check(instance))
        except Exception:  # any failure inside a checker: the value does not match
            return False

    def run(instance: object) -> bool:
        if isinstance(instance, str) and len(instance) > MAX_FORMAT_CHARS:
            return False
        return charged(attempt, instance)

    return run


def bounded_checkers(
    checkers: Mapping[str, tuple[Checker, Any]], names: frozenset[str]
) -> dict[str, tuple[Callable[[object], bool], tuple[type[BaseException], ...]]]:
    """``FormatChecker.checkers`` for ``names``: each bounded, none raising (``raises=()``)."""
    return {
        name: (bounded(_REPLACED.get(name, check)), ())
        for name, (check, _raises) in checkers.items()
        if name in names
    }
