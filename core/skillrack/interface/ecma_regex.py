"""ECMA-262 regular expressions (as JSON Schema's ``pattern`` means them), rewritten for ``regex``.

JSON Schema's ``pattern``, ``patternProperties`` and ``format: regex`` are
ECMA-262 regular expressions, and JSON Schema 2020-12 recommends reading them
with the ``u`` flag.  Read with Python's syntax they mean something else in
ways that change validity: ``$`` matches before a final ``"\\n"`` (so
``^[0-9]+$`` accepted ``"80\\n"``), ``\\d`` and ``\\w`` take every Unicode digit
and letter, ``.`` stops only at ``"\\n"``.  Two conforming agents could then
disagree on whether the same arguments are valid.

skillrack keeps matching with the ``regex`` package, because its matches take a
timeout (:mod:`skillrack.interface.patterns`), and rewrites each ECMA pattern
into a ``regex`` pattern that means exactly the same:

- ``^`` and ``$`` become ``\\A`` and ``\\Z`` (no ``m`` flag exists in a schema);
- ``.``, ``\\d \\D \\w \\W \\s \\S`` and every character class become explicit
  code-point sets, computed here (``[^]`` is any code point, ``[]`` none);
- ``\\b`` and ``\\B`` become lookarounds over ECMA's ``[A-Za-z0-9_]``;
- every literal is written as an escaped code point, so no ``regex`` syntax
  can leak through;
- a backreference to a group that has not matched matches the empty string,
  as in ECMA (``(?(n)\\n|)``).

- a Unicode property escape ``\\p{..}``/``\\P{..}`` becomes the explicit set
  of its code points, named exactly as ECMA-262 names them
  (:mod:`skillrack.interface.unicode_properties`), alone or inside a class.

The pattern is parsed with the ``u``-mode grammar (no Annex B leniency):
whatever that grammar refuses is refused, with the reason and the position.
A few constructs are refused although ECMA accepts them, because ``regex``
would not answer the same: backreferences whose group lies inside a repeated
atom or a lookbehind, or that appear in a lookbehind (ECMA resets captures
on every repetition and matches lookbehinds right to left), and the one
binary property the ``regex`` package has no table for
(``Changes_When_NFKC_Casefolded``).  A schema that needs one is told so at
compilation (``interface_invalid``), never silently given another meaning.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from skillrack.errors import SkillrackError
from skillrack.interface.code_points import Ranges, complement, normal
from skillrack.interface.unicode_properties import UNSUPPORTED, property_ranges

__all__ = ["EcmaPatternError", "translate"]

_MAX_CODE_POINT = 0x10FFFF
_SYNTAX = frozenset("^$\\.*+?()[]{}|")
_CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}


_DIGIT: Ranges = ((0x30, 0x39),)
_WORD: Ranges = normal([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
#: ECMA WhiteSpace (TAB VT FF SP NBSP ZWNBSP and Unicode Zs) plus LineTerminator.
_SPACE: Ranges = normal(
    [
        (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
        (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ]
)  # fmt: skip
_LINE_TERMINATORS: Ranges = normal([(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)])
_CLASS_ESCAPES: dict[str, Ranges] = {
    "d": _DIGIT,
    "D": complement(_DIGIT),
    "w": _WORD,
    "W": complement(_WORD),
    "s": _SPACE,
    "S": complement(_SPACE),
}


class EcmaPatternError(SkillrackError, ValueError):
    """A pattern that is not an ECMA-262 (``u`` flag) regular expression, or not translatable."""


def _char(code: int) -> str:
    if 0x30 <= code <= 0x39 or 0x41 <= code <= 0x5A or 0x61 <= code <= 0x7A:
        return chr(code)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\U{code:08x}"


def _ranges(ranges: Ranges) -> str:
    return "".join(_char(lo) if lo == hi else f"{_char(lo)}-{_char(hi)}" for lo, hi in ranges)


def _set(ranges: Ranges) -> str:
    """A class matching exactly ``ranges``; written negated when that is shorter (``.``, ``\\D``).

    Both forms mean the same code points (a negated class in ``regex`` takes every
    code point, surrogates included); the short one is the fast one to match.
    """
    if not ranges:
        return "(?!)"
    rest = complement(ranges)
    if not rest:
        return "(?s:.)"
    if len(rest) < len(ranges):
        return "[^" + _ranges(rest) + "]"
    return "[" + _ranges(ranges) + "]"


_W = _set(_WORD)
_WORD_BOUNDARY = f"(?:(?<={_W})(?!{_W})|(?<!{_W})(?={_W}))"
_NOT_WORD_BOUNDARY = f"(?:(?<={_W})(?={_W})|(?<!{_W})(?!{_W}))"


@dataclass
class _Group:
    number: int
    in_repeat: bool
    in_lookbehind: bool


@dataclass
class _Parser:
    source: str
    pos: int = 0
    groups: list[_Group] = field(default_factory=list)
    names: dict[str, int] = field(default_factory=dict)
    #: (position, group number or name, inside a lookbehind, groups open there) per backreference.
    backrefs: list[tuple[int, int | str, bool, tuple[int, ...]]] = field(default_factory=list)
    open_groups: list[int] = field(default_factory=list)
    repeat_depth: int = 0
    lookbehind_depth: int = 0
    #: Whether the atom just parsed is one class or one code point (no group needed).
    single: bool = False

    def fail(self, why: str, at: int | None = None) -> EcmaPatternError:
        where = self.pos if at is None else at
        return EcmaPatternError(f"{why} at position {where}")

    def peek(self, ahead: int = 0) -> str:
        index = self.pos + ahead
        return self.source[index] if index < len(self.source) else ""

    def take(self) -> str:
        char = self.peek()
        if not char:
            raise self.fail("unexpected end of pattern")
        self.pos += 1
        return char

    # -- structure ----------------------------------------------------------------------------

    def disjunction(self) -> str:
        alternatives = [self.alternative()]
        while self.peek() == "|":
            self.pos += 1
            alternatives.append(self.alternative())
        return "|".join(alternatives)

    def alternative(self) -> str:
        out: list[str] = []
        while self.peek() and self.peek() not in "|)":
            out.append(self.term())
        return "".join(out)

    def term(self) -> str:
        start = self.pos
        char = self.peek()
        if char == "^":
            self.pos += 1
            return self.no_quantifier("\\A", start)
        if char == "$":
            self.pos += 1
            return self.no_quantifier("\\Z", start)
        if char == "\\" and self.peek(1) in ("b", "B"):
            self.pos += 2
            return self.no_quantifier(
                _WORD_BOUNDARY if char + self.source[self.pos - 1] == "\\b" else _NOT_WORD_BOUNDARY,
                start,
            )
        if char == "(" and self.peek(1) == "?" and self.peek(2) in ("=", "!"):
            self.pos += 3
            inner = self.disjunction()
            self.close()
            return self.no_quantifier(f"(?{self.source[start + 2]}{inner})", start)
        if self.source.startswith(("(?<=", "(?<!"), self.pos):
            kind = self.source[self.pos + 3]
            self.pos += 4
            self.lookbehind_depth += 1
            inner = self.disjunction()
            self.lookbehind_depth -= 1
            self.close()
            return self.no_quantifier(f"(?<{kind}{inner})", start)
        return self.quantified(start)

    def no_quantifier(self, text: str, start: int) -> str:
        if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.quantifier_ahead()):
            raise self.fail("nothing to repeat")
        return text

    def close(self) -> None:
        if self.peek() != ")":
            raise self.fail("missing ')'")
        self.pos += 1

    def quantifier_ahead(self) -> bool:
        rest = self.source[self.pos :]
        end = rest.find("}")
        if end < 0:
            return False
        low, _, high = rest[1:end].partition(",")
        return low.isascii() and low.isdigit() and (not high or (high.isascii() and high.isdigit()))

    def quantified(self, start: int) -> str:
        # Whether the atom repeats decides how its groups may be referenced, so look first.
        atom_end = self.scan_atom_end()
        repeats = self.repeats_at(atom_end)
        if repeats:
            self.repeat_depth += 1
        atom = self.atom()
        if repeats:
            self.repeat_depth -= 1
        quantifier = self.quantifier()
        if not quantifier:
            return atom
        if self.single:  # one class or one code point: quantified as it is (faster)
            return atom + quantifier
        return f"(?:{atom}){quantifier}"

    def repeats_at(self, index: int) -> bool:
        if index >= len(self.source):
            return False
        char = self.source[index]
        if char in "*+":
            return True
        if char == "{":
            saved, self.pos = self.pos, index
            try:
                if not self.quantifier_ahead():
                    return False
                body = self.source[index + 1 : self.source.index("}", index)]
                low, comma, high = body.partition(",")
                return not (not comma and int(low) <= 1) and not (comma and high and int(high) <= 1)
            finally:
                self.pos = saved
        return False

    def scan_atom_end(self) -> int:
        """Where the atom starting here ends (a cheap scan; the parse checks it properly)."""
        src, i = self.source, self.pos
        if i >= len(src):
            return i
        char = src[i]
        if char == "\\":
            if src.startswith("\\u{", i) or src.startswith("\\p{", i) or src.startswith("\\P{", i):
                close = src.find("}", i)
                return close + 1 if close > 0 else len(src)
            if src.startswith("\\k<", i):
                close = src.find(">", i)
                return close + 1 if close > 0 else len(src)
            if src.startswith("\\u", i) and i + 1 < len(src):
                end = i + 6
                if src[i + 6 : i + 8] == "\\u":
                    end = i + 12
                return end
            if src.startswith("\\x", i):
                return i + 4
            if src.startswith("\\c", i):
                return i + 3
            j = i + 1
            if j < len(src) and src[j].isdigit():
                while j < len(src) and src[j].isascii() and src[j].isdigit():
                    j += 1
                return j
            return i + 2
        if char == "[":
            j = i + 1
            while j < len(src) and src[j] != "]":
                j += 2 if src[j] == "\\" else 1
            return j + 1
        if char == "(":
            depth, j = 0, i
            while j < len(src):
                c = src[j]
                if c == "\\":
                    j += 2
                    continue
                if c == "[":
                    j += 1
                    while j < len(src) and src[j] != "]":
                        j += 2 if src[j] == "\\" else 1
                elif c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                    if depth == 0:
                        return j + 1
                j += 1
            return j
        return i + 1

    def quantifier(self) -> str:
        char = self.peek()
        if char in ("*", "+", "?"):
            self.pos += 1
            text = char
        elif char == "{" and self.quantifier_ahead():
            end = self.source.index("}", self.pos)
            low, comma, high = self.source[self.pos + 1 : end].partition(",")
            if comma and high and int(high) < int(low):
                raise self.fail("numbers out of order in {} quantifier")
            self.pos = end + 1
            text = "{" + low + ("," if comma else "") + (high if comma else "") + "}"
            if not comma:
                text = "{" + low + "}"
        else:
            return ""
        if self.peek() == "?":
            self.pos += 1
            text += "?"
        return text

    def atom(self) -> str:
        self.single = False
        char = self.peek()
        if char == ".":
            self.pos += 1
            self.single = True
            return _set(complement(_LINE_TERMINATORS))
        if char == "(":
            return self.group()
        if char == "[":
            text = _set(self.char_class())
            self.single = text.startswith("[")  # not "(?!)" nor "(?s:.)"
            return text
        if char == "\\":
            text = self.atom_escape()
            self.single = not text.startswith(("(", "\x00"))  # not a backreference
            return text
        if char in _SYNTAX:
            raise self.fail(f"unexpected {char!r}" if char != ")" else "unmatched ')'")
        self.pos += 1
        self.single = True
        return _char(ord(char))

    def group(self) -> str:
        start = self.pos
        self.pos += 1
        if self.peek() == "?":
            if self.peek(1) == ":":
                self.pos += 2
                inner = self.disjunction()
                self.close()
                return f"(?:{inner})"
            if self.peek(1) != "<":
                raise self.fail("invalid group", start)
            self.pos += 2
            name_start = self.pos
            end = self.source.find(">", self.pos)
            name = self.source[self.pos : end] if end >= 0 else ""
            if not _is_group_name(name):
                raise self.fail("invalid capture group name", name_start)
            if name in self.names:
                raise self.fail(f"duplicate capture group name {name!r}", name_start)
            self.pos = end + 1
            self.names[name] = len(self.groups) + 1
        number = len(self.groups) + 1
        self.groups.append(_Group(number, self.repeat_depth > 0, self.lookbehind_depth > 0))
        self.open_groups.append(number)
        inner = self.disjunction()
        self.open_groups.pop()
        self.close()
        return f"({inner})"

    # -- escapes -----------------------------------------------------------------------------

    def atom_escape(self) -> str:
        start = self.pos
        self.pos += 1
        char = self.take()
        if char in _CLASS_ESCAPES:
            return _set(_CLASS_ESCAPES[char])
        if char in ("p", "P"):
            return _set(self.property_escape(char, start))
        if char == "k":
            if self.peek() != "<":
                raise self.fail("invalid named reference", start)
            end = self.source.find(">", self.pos)
            name = self.source[self.pos + 1 : end] if end >= 0 else ""
            if not _is_group_name(name):
                raise self.fail("invalid named reference", start)
            self.pos = end + 1
            return self.backref(name, start)
        if char.isascii() and char.isdigit() and char != "0":
            while self.peek().isascii() and self.peek().isdigit():
                self.pos += 1
            return self.backref(int(self.source[start + 1 : self.pos]), start)
        return _char(self.character_escape(char, start, in_class=False))

    def property_escape(self, char: str, start: int) -> Ranges:
        """``\\p{name}`` (``char`` ``p``) or its complement ``\\P{name}``, as code points."""
        end = self.source.find("}", self.pos) if self.peek() == "{" else -1
        name = self.source[self.pos + 1 : end] if end >= 0 else ""
        if name in UNSUPPORTED:
            raise self.fail(f"\\{char}{{{name}}} is not supported: no table for it", start)
        ranges = property_ranges(name) if name else None
        if ranges is None:
            raise self.fail(f"invalid Unicode property escape \\{char}{{{name}}}", start)
        self.pos = end + 1
        return complement(ranges) if char == "P" else ranges

    def backref(self, target: int | str, start: int) -> str:
        self.backrefs.append((start, target, self.lookbehind_depth > 0, tuple(self.open_groups)))
        return f"\x00{len(self.backrefs) - 1}\x00"  # resolved once every group is known

    def character_escape(self, char: str, start: int, *, in_class: bool) -> int:
        if char in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[char]
        if char == "c":
            letter = self.peek()
            if not (letter.isascii() and letter.isalpha()):
                raise self.fail("invalid \\c escape", start)
            self.pos += 1
            return ord(letter) % 32
        if char == "0":
            if self.peek().isascii() and self.peek().isdigit():
                raise self.fail("invalid decimal escape", start)
            return 0
        if char == "x":
            digits = self.source[self.pos : self.pos + 2]
            if len(digits) != 2 or not _is_hex(digits):
                raise self.fail("invalid \\x escape", start)
            self.pos += 2
            return int(digits, 16)
        if char == "u":
            return self.unicode_escape(start)
        if char in _SYNTAX or char == "/" or (in_class and char == "-"):
            return ord(char)
        raise self.fail(f"invalid escape \\{char}", start)

    def unicode_escape(self, start: int) -> int:
        if self.peek() == "{":
            end = self.source.find("}", self.pos)
            digits = self.source[self.pos + 1 : end] if end >= 0 else ""
            if not digits or not _is_hex(digits) or int(digits, 16) > _MAX_CODE_POINT:
                raise self.fail("invalid Unicode escape", start)
            self.pos = end + 1
            return int(digits, 16)
        digits = self.source[self.pos : self.pos + 4]
        if len(digits) != 4 or not _is_hex(digits):
            raise self.fail("invalid Unicode escape", start)
        self.pos += 4
        code = int(digits, 16)
        trail = self.source[self.pos : self.pos + 6]
        if (
            0xD800 <= code <= 0xDBFF
            and trail[:2] == "\\u"
            and _is_hex(trail[2:])
            and len(trail) == 6
        ):
            low = int(trail[2:], 16)
            if 0xDC00 <= low <= 0xDFFF:  # a surrogate pair is one code point under ``u``
                self.pos += 6
                return 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        return code

    # -- classes -----------------------------------------------------------------------------

    def char_class(self) -> Ranges:
        self.pos += 1
        negate = self.peek() == "^"
        if negate:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while True:
            char = self.peek()
            if not char:
                raise self.fail("missing ']'")
            if char == "]":
                self.pos += 1
                break
            first_at = self.pos
            first = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                second = self.class_atom()
                if isinstance(first, tuple) or isinstance(second, tuple):
                    raise self.fail("invalid character class range", first_at)
                if first > second:
                    raise self.fail("range out of order in character class", first_at)
                ranges.append((first, second))
                continue
            if isinstance(first, tuple):
                ranges.extend(first)
            else:
                ranges.append((first, first))
        merged = normal(ranges)
        return complement(merged) if negate else merged

    def class_atom(self) -> int | Ranges:
        start = self.pos
        char = self.take()
        if char != "\\":
            return ord(char)
        escaped = self.take()
        if escaped in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[escaped]
        if escaped == "b":
            return 0x08
        if escaped in ("p", "P"):
            return self.property_escape(escaped, start)
        return self.character_escape(escaped, start, in_class=True)


def _is_hex(text: str) -> bool:
    return bool(text) and all(c in "0123456789abcdefABCDEF" for c in text)


def _is_group_name(name: str) -> bool:
    """ASCII identifier names only: others are refused rather than guessed at."""
    return (
        bool(name)
        and name.isascii()
        and (name[0].isalpha() or name[0] in "_$")
        and all(c.isalnum() or c in "_$" for c in name)
    )


@functools.lru_cache(maxsize=2048)
def translate(pattern: str) -> str:
    """The ``regex`` pattern that matches exactly what ECMA-262 ``pattern`` (``u`` flag) matches.

    Raises :class:`EcmaPatternError` (one line: what and where) when ``pattern``
    is not a ``u``-mode ECMA-262 pattern, or uses a construct skillrack
    cannot translate faithfully.
    """
    if not isinstance(pattern, str):
        raise EcmaPatternError("a pattern must be a string")
    parser = _Parser(pattern)
    out = parser.disjunction()
    if parser.pos < len(pattern):
        raise parser.fail("unmatched ')'")
    for index, (start, target, in_lookbehind, open_groups) in enumerate(parser.backrefs):
        number = parser.names.get(target) if isinstance(target, str) else target
        if number is None:
            raise parser.fail(f"no capture group named {target!r}", start)
        if number > len(parser.groups):
            raise parser.fail(f"no capture group {number}", start)
        group = parser.groups[number - 1]
        if in_lookbehind or group.in_repeat or group.in_lookbehind:
            raise parser.fail(
                "a backreference to a group in a repeated atom or a lookbehind, or inside a "
                "lookbehind, is not supported (ECMA resets and orders those captures differently)",
                start,
            )
        # A group still open where it is referenced has captured nothing yet: ECMA
        # matches the empty string there, as it does for a group that did not take part.
        text = "(?:)" if number in open_groups else f"(?({number})\\{number}|)"
        out = out.replace(f"\x00{index}\x00", text, 1)
    return out
