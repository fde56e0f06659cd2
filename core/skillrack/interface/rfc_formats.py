"""The defined ``format`` values checked exactly as their RFCs define them.

jsonschema's checkers come from several libraries that test with Python's
``re.match(...$)``: ``$`` matches before a final newline, so ``date-time``,
``time``, ``hostname``, ``uri`` and ``uri-reference`` accepted
``"2024-01-01T00:00:00Z\\n"`` and the like, ``email`` accepted anything with an
``@``, and ``ipv6`` accepted a zone index (``::1%eth0``) RFC 4291 does not
define.  Two conforming agents could then disagree on the same arguments.

Every checker here matches the whole string (``fullmatch``, explicit ASCII
classes, never ``\\d`` or ``$``), and implements the grammar named beside it:

==========================  ====================================================
``date-time`` ``date``      RFC 3339 section 5.6 (``T``/``Z`` in either case,
``time``                    days per month and leap years, a leap second only
                            at 23:59:60 UTC), ``time`` needing its offset
``duration``                RFC 3339 Appendix A
``hostname``                RFC 1123 section 2.1 (labels of letters, digits and
                            inner hyphens, at most 63 octets, 253 in all)
``email``                   RFC 5321 section 4.1.2 ``Mailbox`` (dot-string or
                            quoted local part, domain or address literal)
``idn-email``               RFC 6531 section 3.3 (``Mailbox`` with UTF-8 in the
                            local part and U-labels in the domain)
``ipv4``                    RFC 2673 section 3.2 dotted-quad, no leading zeros
``ipv6``                    RFC 4291 section 2.2, no zone index
``uri`` ``uri-reference``   RFC 3986 ``URI`` and ``URI-reference``
``uri-template``            RFC 6570 section 2
``uuid``                    RFC 4122 section 3 string representation
``json-pointer``            RFC 6901 section 3
``relative-json-pointer``   draft-bhutton-relative-json-pointer-00 section 3
``regex``                   ECMA-262 with the ``u`` flag, as skillrack matches
                            ``pattern`` (:mod:`skillrack.interface.ecma_regex`)
==========================  ====================================================

``idn-hostname``, ``iri`` and ``iri-reference`` are checked in
:mod:`skillrack.interface.formats`.  A value that is not a string
passes every format, as JSON Schema says.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Final

from skillrack.interface.patterns import check_pattern

__all__ = ["EXACT_CHECKERS"]

_A = re.ASCII


class _Pattern:
    """A regular expression compiled at its first ``fullmatch``, not at import.

    An agent checks the few formats its schemas name; compiling all of these
    at import cost every start about 25 M instructions (callgrind; see
    benchmarks/README.md, "Start-up counted in instructions").
    """

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def fullmatch(self, text: str) -> re.Match[str] | None:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._source, self._flags)
        return compiled.fullmatch(text)


# -- RFC 3339 ------------------------------------------------------------------------------

_DATE = _Pattern(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", _A)
_TIME = _Pattern(
    r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))", _A
)
_DUR_TIME = r"T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
_DUR_DATE = r"(?:[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)"
_DURATION = _Pattern(rf"P(?:{_DUR_DATE}(?:{_DUR_TIME})?|{_DUR_TIME}|[0-9]+W)", _A)


def _days_in(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _is_date(text: str) -> bool:
    match = _DATE.fullmatch(text)
    if match is None:
        return False
    year, month, day = (int(part) for part in match.groups())
    return 1 <= month <= 12 and 1 <= day <= _days_in(year, month)


def _is_time(text: str) -> bool:
    match = _TIME.fullmatch(text)
    if match is None:
        return False
    hour, minute, second = int(match[1]), int(match[2]), int(match[3])
    off_hour, off_minute = (int(match[6]), int(match[7])) if match[5] else (0, 0)
    if hour > 23 or minute > 59 or second > 60 or off_hour > 23 or off_minute > 59:
        return False
    if second == 60:  # a leap second happens at 23:59:60 UTC only
        sign = -1 if match[5] == "-" else 1
        utc = (hour * 60 + minute - sign * (off_hour * 60 + off_minute)) % (24 * 60)
        return utc == 23 * 60 + 59
    return True


def is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    date, sep, time = value[:10], value[10:11], value[11:]
    return sep in ("T", "t") and _is_date(date) and _is_time(time)


def is_date(value: object) -> bool:
    return not isinstance(value, str) or _is_date(value)


def is_time(value: object) -> bool:
    return not isinstance(value, str) or _is_time(value)


def is_duration(value: object) -> bool:
    return not isinstance(value, str) or _DURATION.fullmatch(value) is not None


# -- host names and mail addresses ---------------------------------------------------------

_LABEL = _Pattern(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", _A)


def _is_hostname(text: str) -> bool:
    if not text or len(text) > 253:
        return False
    return all(_LABEL.fullmatch(label) for label in text.split("."))


def is_hostname(value: object) -> bool:
    return not isinstance(value, str) or _is_hostname(value)


_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_DOT_STRING = _Pattern(rf"{_ATEXT}+(?:\.{_ATEXT}+)*", _A)
_QUOTED = _Pattern(r'"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"', _A)
_UTF8_ATEXT = r"(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]|[^\x00-\x7f])"
_UTF8_DOT_STRING = _Pattern(rf"{_UTF8_ATEXT}+(?:\.{_UTF8_ATEXT}+)*")
_UTF8_QUOTED = _Pattern(r'"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|[^\x00-\x7f]|\\[\x20-\x7e])*"')
_GENERAL_LITERAL = _Pattern(r"[A-Za-z0-9-]*[A-Za-z0-9]:[\x21-\x5a\x5e-\x7e]+", _A)


def _address_literal(text: str) -> bool:
    """RFC 5321 section 4.1.3: ``[IPv4]``, ``[IPv6:...]`` or a general literal."""
    if not (text.startswith("[") and text.endswith("]")):
        return False
    inner = text[1:-1]
    if inner[:5].lower() == "ipv6:":
        return _is_ipv6(inner[5:])
    return _is_ipv4(inner) or (
        _GENERAL_LITERAL.fullmatch(inner) is not None and inner[:5].lower() != "ipv6:"
    )


def _mailbox(text: str, local: Callable[[str], bool], domain: Callable[[str], bool]) -> bool:
    at = text.rfind("@")
    if at <= 0:
        return False
    local_part, domain_part = text[:at], text[at + 1 :]
    if len(local_part.encode("utf-8")) > 64 or len(domain_part.encode("utf-8")) > 255:
        return False
    return local(local_part) and (domain(domain_part) or _address_literal(domain_part))


def is_email(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return _mailbox(
        value,
        lambda local: bool(_DOT_STRING.fullmatch(local) or _QUOTED.fullmatch(local)),
        _is_hostname,
    )


def _is_idn_domain(text: str) -> bool:
    """U-labels allowed: each label, IDNA-encoded, must be a host name label (RFC 5890)."""
    if (
        not text
        or len(text) > 253
        or any(ord(c) < 0x80 and not c.isalnum() and c not in "-." for c in text)
    ):
        return False
    try:
        ascii_form = text.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    return _is_hostname(ascii_form)


def is_idn_email(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return _mailbox(
        value,
        lambda local: bool(_UTF8_DOT_STRING.fullmatch(local) or _UTF8_QUOTED.fullmatch(local)),
        _is_idn_domain,
    )


# -- IP addresses --------------------------------------------------------------------------

_IPV4 = _Pattern(r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}"
                   r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])", _A)  # fmt: skip
_IPV6_CHARS = _Pattern(r"[0-9A-Fa-f:.]+", _A)


def _is_ipv4(text: str) -> bool:
    return _IPV4.fullmatch(text) is not None


def _is_ipv6(text: str) -> bool:
    # The character check first: ``ipaddress`` also takes a zone index (``%eth0``).
    if _IPV6_CHARS.fullmatch(text) is None:
        return False
    if "." in text and not _is_ipv4(text[text.rfind(":") + 1 :]):
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def is_ipv4(value: object) -> bool:
    return not isinstance(value, str) or _is_ipv4(value)


def is_ipv6(value: object) -> bool:
    return not isinstance(value, str) or _is_ipv6(value)


# -- RFC 3986 URIs -------------------------------------------------------------------------

_PCT = r"%[0-9A-Fa-f]{2}"
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCHAR = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_SCHEME = _Pattern(r"[A-Za-z][A-Za-z0-9+.-]*", _A)
_USERINFO = _Pattern(rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*", _A)
_REG_NAME = _Pattern(rf"(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*", _A)
_IPV_FUTURE = _Pattern(rf"[vV][0-9A-Fa-f]+\.[{_UNRESERVED}{_SUB_DELIMS}:]+", _A)
_PORT = _Pattern(r"[0-9]*", _A)
_SEGMENTS = _Pattern(rf"(?:{_PCHAR}|/)*", _A)
_QUERY = _Pattern(rf"(?:{_PCHAR}|[/?])*", _A)
_NOSCHEME_FIRST = _Pattern(rf"(?:[{_UNRESERVED}{_SUB_DELIMS}@]|{_PCT})+", _A)
#: RFC 3986 Appendix B: splits any string into the five components.
_SPLIT = _Pattern(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.DOTALL)


def _authority(text: str) -> bool:
    userinfo, at, hostport = text.rpartition("@")
    if at and _USERINFO.fullmatch(userinfo) is None:
        return False
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            return False
        literal, rest = hostport[1:end], hostport[end + 1 :]
        if not (_is_ipv6(literal) or _IPV_FUTURE.fullmatch(literal)):
            return False
    else:
        colon = hostport.rfind(":")
        literal, rest = (hostport[:colon], hostport[colon:]) if colon >= 0 else (hostport, "")
        if _REG_NAME.fullmatch(literal) is None:  # an IPv4 address is also a reg-name
            return False
    return not rest or (rest[0] == ":" and _PORT.fullmatch(rest[1:]) is not None)


def _uri_reference(text: str, *, absolute: bool) -> bool:
    match = _SPLIT.fullmatch(text)
    if match is None:  # pragma: no cover - the split matches every string
        return False
    scheme, authority, path, query, fragment = match.groups()
    if scheme is None:
        if absolute:
            return False
        # A relative reference: a colon in the first segment would read as a scheme.
        first = path.split("/", 1)[0]
        if first and not path.startswith("/") and _NOSCHEME_FIRST.fullmatch(first) is None:
            return False
    elif _SCHEME.fullmatch(scheme) is None:
        return False
    if authority is not None:
        if not _authority(authority) or (path and not path.startswith("/")):
            return False
    elif path.startswith("//"):
        return False
    if _SEGMENTS.fullmatch(path) is None:
        return False
    return all(part is None or _QUERY.fullmatch(part) is not None for part in (query, fragment))


def is_uri(value: object) -> bool:
    return not isinstance(value, str) or _uri_reference(value, absolute=True)


def is_uri_reference(value: object) -> bool:
    return not isinstance(value, str) or _uri_reference(value, absolute=False)


# -- the rest ------------------------------------------------------------------------------

_LITERAL = r"(?:[\x21\x23\x24\x26\x28-\x3b\x3d\x3f-\x5b\x5d\x5f\x61-\x7a\x7e]|%[0-9A-Fa-f]{2}" \
           r"|[\xa0-\ud7ff\ue000-\ufdcf\ufdf0-\uffef\U00010000-\U0010fffd])"  # fmt: skip
_VARCHAR = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\*)?"
_EXPRESSION = rf"\{{[+#./;?&=,!@|]?{_VARSPEC}(?:,{_VARSPEC})*\}}"
_URI_TEMPLATE = _Pattern(rf"(?:{_LITERAL}|{_EXPRESSION})*")
_UUID = _Pattern(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}", _A)
_JSON_POINTER = _Pattern(r"(?:/(?:[^/~]|~[01])*)*", re.DOTALL)
_RELATIVE = _Pattern(r"(?:0|[1-9][0-9]*)(?:[+-][1-9][0-9]*)?", _A)


def is_uri_template(value: object) -> bool:
    return not isinstance(value, str) or _URI_TEMPLATE.fullmatch(value) is not None


def is_uuid(value: object) -> bool:
    return not isinstance(value, str) or _UUID.fullmatch(value) is not None


def is_json_pointer(value: object) -> bool:
    return not isinstance(value, str) or _JSON_POINTER.fullmatch(value) is not None


def is_relative_json_pointer(value: object) -> bool:
    if not isinstance(value, str):
        return True
    prefix = re.match(r"[0-9+-]*", value, _A)
    head = prefix.group() if prefix else ""
    tail = value[len(head) :]
    return _RELATIVE.fullmatch(head) is not None and (tail == "#" or is_json_pointer(tail))


def is_regex(value: object) -> bool:
    return not isinstance(value, str) or check_pattern(value) is None


#: The checkers of this module, by format name (:data:`skillrack.interface.formats.CHECKERS`
#: has every defined format).
EXACT_CHECKERS: Final[Mapping[str, Callable[[object], bool]]] = {
    "date-time": is_date_time,
    "date": is_date,
    "time": is_time,
    "duration": is_duration,
    "hostname": is_hostname,
    "email": is_email,
    "idn-email": is_idn_email,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "uri": is_uri,
    "uri-reference": is_uri_reference,
    "uri-template": is_uri_template,
    "uuid": is_uuid,
    "json-pointer": is_json_pointer,
    "relative-json-pointer": is_relative_json_pointer,
    "regex": is_regex,
}
