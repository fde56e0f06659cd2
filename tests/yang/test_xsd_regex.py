"""YANG patterns (XSD) rewritten as ECMA-262, judged against libxml2's XSD engine.

The oracle is independent of the translation: lxml's ``XMLSchema`` (libxml2)
validates a string against an XSD ``pattern`` facet, which is what pyang's
``XSDPattern`` does.  The patterns are every ``pattern`` of the IETF and IANA
modules pyang ships, plus constructs picked to differ between the two
syntaxes; the strings are seeded random mixtures of characters each pattern
mentions, ASCII noise and a few non-ASCII digits and letters.
"""

from __future__ import annotations

import random
import re

import pytest
from helpers.yang_modules import IANA, IETF

from skillrack.interface.patterns import search
from skillrack.yang.xsd_regex import XsdPatternError, to_ecma

pyang_types = pytest.importorskip("pyang.types")

EXTRA = [
    r"$a^",
    r"\d+",
    r"\w",
    r"[a-z-[aeiou]]+",
    r"[^\s]+",
    r".+",
    r"(ab|cd){2,3}",
    r"\p{L}\P{N}",
    r"[\p{Lu}-[A-Z]]",
    r"a{0,2}b?c*",
    r"[\-\[\]]+",
]


def _ietf_patterns() -> list[str]:
    found: set[str] = set()
    for directory in (IETF, IANA):
        for path in sorted(directory.glob("*.yang")):
            text = path.read_text(encoding="utf-8")
            for match in re.finditer(r"\bpattern\s+(['\"])(.*?)\1\s*[;{]", text, re.S):
                quote, body = match.group(1), match.group(2)
                if "+" in body and ("'\n" in body or '"\n' in body):
                    continue  # concatenated pieces: left to pyang's own reading below
                if quote == '"':
                    body = body.replace("\\\\", "\\")
                found.add(body)
    return sorted(found)


def _strings(pattern: str, rnd: random.Random) -> list[str]:
    alphabet = sorted(set(re.sub(r"\\[pP]\{[^}]*\}", "", pattern)) - set("\\"))
    alphabet += [*"aZ09:.-/ _%$^", "\u0661", "\u00e9", "\u4e00", "\n"]
    out = []
    for _ in range(60):
        length = rnd.randint(0, 14)
        out.append("".join(rnd.choice(alphabet) for _ in range(length)))
    return out


@pytest.mark.parametrize("pattern", [*EXTRA, *_ietf_patterns()])
def test_translation_matches_libxml2(pattern: str) -> None:
    oracle = pyang_types.XSDPattern(pattern, None, False)
    if not oracle:
        pytest.skip(f"libxml2 does not read {pattern!r} either")
    ecma = to_ecma(pattern)
    rnd = random.Random(pattern)
    wrong = [text for text in _strings(pattern, rnd) if bool(oracle(text)) != search(ecma, text)]
    assert wrong == []


@pytest.mark.parametrize(
    ("pattern", "names"),
    [
        (r"\p{IsBasicLatin}+", "block escape"),
        (r"\i\c*", "XML name escape"),
        ("[a-", "unclosed"),
        ("a{2,1}", "maximum below its minimum"),
        ("(a", "unclosed '('"),
        (r"\w+\W", "narrow its Unicode classes"),
    ],
)
def test_unsupported_or_malformed_patterns_name_themselves(pattern: str, names: str) -> None:
    with pytest.raises(XsdPatternError, match=re.escape(names)):
        to_ecma(pattern)
