"""YANG ``pattern`` (an XML Schema regular expression) rewritten as an ECMA-262 ``pattern``.

YANG patterns are XSD regular expressions (XML Schema Part 2, appendix F, as
RFC 7950 section 9.4.5 says), implicitly anchored at both ends; JSON Schema's
``pattern`` is ECMA-262, unanchored.  The two read the same characters
differently: in XSD ``^`` and ``$`` are ordinary characters, ``\\d`` is every
Unicode decimal digit (``\\p{Nd}``), ``\\w`` is everything but punctuation,
separators and "other", ``.`` excludes only ``\\n`` and ``\\r``, and a class
may subtract another (``[a-z-[aeiou]]``).

So the pattern is parsed here with the XSD grammar, every character class
(escapes, categories, ranges, negation, subtraction) is computed as a set of
code points, and the ECMA pattern is written with explicit code points only
(``\\u{..}`` escapes, ``u`` mode), inside ``^(?:...)$``.  Nothing of either
syntax can leak through, and skillrack's own ECMA reader
(:mod:`skillrack.interface.ecma_regex`) reads it back as the same set.

The Unicode categories (``\\p{L}``, ``\\p{Nd}`` behind ``\\d``...) come from
Python's :mod:`unicodedata`, so they follow this interpreter's Unicode
version: an engine with another version can disagree on code points assigned
in between (docs/known-limits.md).  Two constructs are refused, naming
themselves, rather than translated approximately: Unicode block escapes
(``\\p{IsBasicLatin}``: XSD pins its block list to an old Unicode version) and
the XML name escapes ``\\i \\I \\c \\C`` (they depend on the XML edition).
"""

from __future__ import annotations

import functools
import sys
import unicodedata

from skillrack.interface.code_points import Ranges, complement, normal
from skillrack.yang.errors import YangError

__all__ = ["XsdPatternError", "to_ecma"]

_MAX = sys.maxunicode
#: The longest pattern ``format: regex`` accepts (``skillrack.interface.formats``).
MAX_ECMA_CHARS = 8192

#: XSD metacharacters outside a class: escaped with ``\\`` to be literal.
_META = frozenset(".\\?*+{}()|[]")
_SINGLE_ESCAPES = {"n": 0x0A, "r": 0x0D, "t": 0x09}
_SINGLE_LITERAL_ESCAPES = frozenset("\\|.?*+(){}-[]^")
_CATEGORIES = frozenset(
    {
        "L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No",
        "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Z", "Zs", "Zl", "Zp",
        "S", "Sm", "Sc", "Sk", "So", "C", "Cc", "Cf", "Co", "Cn",
    }
)  # fmt: skip


class XsdPatternError(YangError):
    """A YANG pattern that is not an XSD regular expression, or uses a construct not supported."""


def _subtract(ranges: Ranges, minus: Ranges) -> Ranges:
    """``ranges`` without ``minus``: the intersection with its complement."""
    keep = complement(minus)
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(ranges) and j < len(keep):
        lo = max(ranges[i][0], keep[j][0])
        hi = min(ranges[i][1], keep[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if ranges[i][1] < keep[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


@functools.cache
def _category_table() -> dict[str, Ranges]:
    """Every two-letter general category as ranges, computed once (about 0.3 s)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    previous = None
    start = 0
    for code in range(_MAX + 2):
        category = unicodedata.category(chr(code)) if code <= _MAX else None
        if category != previous:
            if previous is not None:
                spans.setdefault(previous, []).append((start, code - 1))
            previous, start = category, code
    return {name: tuple(value) for name, value in spans.items()}


@functools.cache
def category(name: str) -> Ranges:
    """The code points of a general category (``"L"`` is every ``"L?"`` category)."""
    table = _category_table()
    if len(name) == 2:
        return table.get(name, ())
    return normal([span for key, value in table.items() if key[0] == name for span in value])


_SPACE: Ranges = ((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20))
_DOT: Ranges = complement(((0x0A, 0x0A), (0x0D, 0x0D)))


@functools.cache
def _word() -> Ranges:
    """XSD ``\\w``: every code point but punctuation, separators and "other" (``\\p{C}``)."""
    return complement(normal([*category("P"), *category("Z"), *category("C")]))


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, why: str) -> XsdPatternError:
        return XsdPatternError(f"pattern {self.text!r}: {why} (at offset {self.pos})")

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def regexp(self) -> str:
        branches = [self.branch()]
        while self.peek() == "|":
            self.pos += 1
            branches.append(self.branch())
        return "|".join(branches)

    def branch(self) -> str:
        out: list[str] = []
        while self.peek() not in ("", "|", ")"):
            out.append(self.piece())
        return "".join(out)

    def piece(self) -> str:
        atom = self.atom()
        char = self.peek()
        if char in ("?", "*", "+"):
            self.pos += 1
            return atom + char
        if char == "{":
            close = self.text.find("}", self.pos)
            body = self.text[self.pos + 1 : close] if close > 0 else ""
            low, comma, high = body.partition(",")
            if not low.isdigit() or (high and not high.isdigit()):
                raise self.fail("a quantifier is {n}, {n,} or {n,m}")
            if high and int(high) < int(low):
                raise self.fail(f"quantifier {{{body}}} has its maximum below its minimum")
            self.pos = close + 1
            return (
                atom
                + "{"
                + str(int(low))
                + ("," if comma else "")
                + (str(int(high)) if high else "")
                + "}"
            )
        return atom

    def atom(self) -> str:
        char = self.peek()
        if char == "(":
            self.pos += 1
            inner = self.regexp()
            if self.peek() != ")":
                raise self.fail("unclosed '('")
            self.pos += 1
            return f"(?:{inner})"
        if char == "[":
            return _set(self.class_expr())
        if char == "\\":
            ranges = self.escape(in_class=False)
            return _set(ranges)
        if char == ".":
            self.pos += 1
            return _set(_DOT)
        if char in _META:
            raise self.fail(f"{char!r} must be escaped to be a literal")
        self.pos += 1
        return _literal(ord(char))

    def escape(self, *, in_class: bool) -> Ranges:
        """After a backslash: a single character, a multi-character escape or a category."""
        self.pos += 1
        char = self.peek()
        if not char:
            raise self.fail("a pattern cannot end with a backslash")
        self.pos += 1
        if char in _SINGLE_ESCAPES:
            code = _SINGLE_ESCAPES[char]
            return ((code, code),)
        if char in _SINGLE_LITERAL_ESCAPES:
            return ((ord(char), ord(char)),)
        if char in "sS":
            return _SPACE if char == "s" else complement(_SPACE)
        if char in "dD":
            digits = category("Nd")
            return digits if char == "d" else complement(digits)
        if char in "wW":
            return _word() if char == "w" else complement(_word())
        if char in "iIcC":
            raise self.fail(
                f"the XML name escape \\{char} is not supported (its meaning depends on the "
                "XML edition); write the characters as a class"
            )
        if char in "pP":
            if self.peek() != "{":
                raise self.fail(f"\\{char} needs a {{name}}")
            close = self.text.find("}", self.pos)
            if close < 0:
                raise self.fail(f"unclosed \\{char}{{")
            name = self.text[self.pos + 1 : close]
            self.pos = close + 1
            if name.startswith("Is"):
                raise self.fail(
                    f"the Unicode block escape \\{char}{{{name}}} is not supported (XSD pins "
                    "block ranges to an old Unicode version); write the block as a range"
                )
            if name not in _CATEGORIES:
                raise self.fail(f"unknown Unicode category {name!r}")
            ranges = category(name)
            return ranges if char == "p" else complement(ranges)
        raise self.fail(f"unknown escape \\{char}")

    def class_expr(self) -> Ranges:
        """``[`` group (``-`` class)? ``]``: negation and subtraction computed on the sets."""
        self.pos += 1  # [
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        items: list[tuple[int, int]] = []
        first = True
        minus: Ranges | None = None
        while True:
            char = self.peek()
            if not char:
                raise self.fail("unclosed '['")
            if char == "]" and not first:
                self.pos += 1
                break
            if char == "-" and self.text[self.pos + 1 : self.pos + 2] == "[" and not first:
                self.pos += 1
                minus = self.class_expr()
                if self.peek() != "]":
                    raise self.fail("a subtraction must end its class")
                self.pos += 1
                break
            if char == "[":
                raise self.fail("'[' must be escaped inside a class")
            if char == "\\":
                escaped = self.escape(in_class=True)
                if len(escaped) == 1 and escaped[0][0] == escaped[0][1]:
                    low = escaped[0][0]
                else:
                    items.extend(escaped)
                    first = False
                    continue
            else:
                self.pos += 1
                low = ord(char)
            first = False
            if self.peek() == "-" and self.text[self.pos + 1 : self.pos + 2] not in ("]", "["):
                self.pos += 1
                high_char = self.peek()
                if not high_char:
                    raise self.fail("unclosed '['")
                if high_char == "\\":
                    escaped = self.escape(in_class=True)
                    if len(escaped) != 1 or escaped[0][0] != escaped[0][1]:
                        raise self.fail("a range must end with a single character")
                    high = escaped[0][0]
                else:
                    self.pos += 1
                    high = ord(high_char)
                if high < low:
                    raise self.fail("a range runs backwards")
                items.append((low, high))
            else:
                items.append((low, low))
        ranges = normal(items)
        if negated:
            ranges = complement(ranges)
        if minus is not None:
            ranges = _subtract(ranges, minus)
        return ranges


def _code(code: int) -> str:
    """A code point as itself where that is unambiguous and visible, else ``\\u{..}``.

    Letters, digits, punctuation and symbols beyond ASCII are written as
    themselves: the sets behind ``\\d`` or ``\\p{L}`` stay a few thousand
    characters long (skillrack checks ``format: regex`` on at most 8192).
    """
    char = chr(code)
    if char.isascii():
        return char if char.isalnum() else f"\\u{{{code:X}}}"
    if unicodedata.category(char)[0] in "LNPS":
        return char
    return f"\\u{{{code:X}}}"


def _literal(code: int) -> str:
    return _code(code)


def _set(ranges: Ranges) -> str:
    """An ECMA class for the set; ``[^\\u{0}-\\u{10FFFF}]`` (no code point) when empty."""
    if not ranges:
        return "[^\\u{0}-\\u{10FFFF}]"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _literal(ranges[0][0])
    body = "".join(_code(lo) if lo == hi else f"{_code(lo)}-{_code(hi)}" for lo, hi in ranges)
    return f"[{body}]"


@functools.lru_cache(maxsize=1024)
def to_ecma(pattern: str) -> str:
    """The ECMA-262 (``u`` mode) pattern matching exactly the strings the XSD ``pattern`` matches.

    Raises :class:`XsdPatternError` naming the construct and its offset when the
    pattern is malformed or uses a construct this translation refuses.
    """
    parser = _Parser(pattern)
    body = parser.regexp()
    if parser.pos < len(pattern):
        raise parser.fail("unmatched ')'")
    ecma = f"^(?:{body})$"
    if len(ecma) > MAX_ECMA_CHARS:
        raise XsdPatternError(
            f"pattern {pattern!r} needs {len(ecma)} characters in ECMA-262, more than the "
            f"{MAX_ECMA_CHARS} skillrack checks (format: regex); narrow its Unicode classes"
        )
    return ecma
