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

Every defined format has its checker here, in :data:`CHECKERS`; none comes from
jsonschema, which checks formats only with the packages of its
``format-nongpl`` extra (one of which, ``rfc3987-syntax``, took seconds to
import at every start).  skillrack depends on plain ``jsonschema``.

``iri`` and ``iri-reference`` are checked by mapping the IRI to a URI (RFC 3987
section 3.1: every ``ucschar``/``iprivate`` code point percent-encoded as
UTF-8) and checking that URI with the same linear-time checker as ``uri``;
other non-ASCII code points make it invalid.  ``iprivate`` is accepted
anywhere rather than only in the query, the one leniency of the mapping.

``idn-hostname`` (RFC 5890 section 2.3.2.3) is checked by ``idna``, the IDNA 2008
implementation jsonschema used for it too (RFC 5891 section 4, with the
contextual rules of RFC 5892: labels, A-labels of at most 63 octets, 253 in
all), plus the one RFC 1123 host name rule ``idna.encode`` leaves out: no
trailing dot (it accepts a fully qualified name, as DNS does).  The label
separators RFC 3490 section 3.1 names (``.``, U+3002, U+FF0E, U+FF61) all
separate labels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import idna

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


#: The characters RFC 3490 section 3.1 makes label separators.
_DOTS: Final = frozenset(".\u3002\uff0e\uff61")


def is_idn_hostname(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    if not instance or instance[-1] in _DOTS:
        return False
    try:
        idna.encode(instance)
    except (idna.IDNAError, UnicodeError):
        return False
    return True


#: A checker for every format JSON Schema defines: the exact RFC grammars
#: (:mod:`skillrack.interface.rfc_formats`), the IRIs mapped onto them, and
#: internationalized host names.
CHECKERS: Final[Mapping[str, Checker]] = {
    **EXACT_CHECKERS,
    "idn-hostname": is_idn_hostname,
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
    names: frozenset[str],
) -> dict[str, tuple[Callable[[object], bool], tuple[type[BaseException], ...]]]:
    """``FormatChecker.checkers`` for ``names``: each bounded, none raising (``raises=()``)."""
    return {name: (bounded(check), ()) for name, check in CHECKERS.items() if name in names}
