"""``pattern`` means what ECMA-262 says, proven against JavaScript's own ``RegExp``.

JSON Schema's ``pattern`` is an ECMA-262 regular expression (read with the
``u`` flag, as 2020-12 recommends); skillrack rewrites each one for the
``regex`` package (:mod:`skillrack.interface.ecma_regex`) so that matches keep
their time limit.  The differential test below runs one Node process over the
whole corpus and requires skillrack to give the same answer in every case:
match, no match, or "not a pattern".  Without the rewrite ``^[0-9]+$`` accepts
``"80\\n"``, ``\\d`` accepts Arabic-Indic digits and ``.`` accepts ``"\\r"``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import regex
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack.errors import ErrorCode
from skillrack.interface import patterns, unicode_properties
from skillrack.interface.ecma_regex import EcmaPatternError, translate
from skillrack.interface.inline import DRAFT_2020_12, compile_inline_schema
from skillrack.interface.schemaerror import InlineSchemaError
from skillrack.testing.serve import error_of, invoke, skill_request

NODE = shutil.which("node")
SCRIPT = Path(__file__).resolve().parents[1] / "helpers" / "ecma_regexp.js"

#: Strings every pattern is tried on, besides its own.
COMMON = [
    "",
    "a",
    "80",
    "80\n",
    "\n",
    "abc",
    "A_1",
    "\u0668\u0660",
    "é",
    "😀",
    " ",
    "\u00a0",
    "\ufeff",
]

#: (pattern, strings it is tried on besides COMMON).
CORPUS: list[tuple[str, list[str]]] = [
    # anchors: no implicit anchoring, $ only at the very end, no multiline
    ("^[0-9]+$", ["8", "80\n", "\n80", "x80", "80x", "0123"]),
    ("[0-9]+", ["x80y", "xy", "\n8\n"]),
    ("^abc", ["abc\n", "\nabc", "xabc"]),
    ("abc$", ["abc\n", "abc\r", "xabc", "abc\u2028"]),
    ("^$", ["\n", "\r\n"]),
    ("^a$|^b$", ["a\n", "b", "ab"]),
    ("a$\n?", ["a\n", "a"]),
    # \d \w \s \b and their negations
    ("^\\d+$", ["0123456789", "\u0661٢", "\uff18", "²", "12a"]),
    ("^\\D+$", ["abc", "\u0668", "a1"]),
    ("^\\w+$", ["abc_XYZ_09", "é", "ß", "ǅ", "a-b", "K", "\u017f"]),
    ("^\\W+$", ["-", "é", "_", "!?"]),
    (
        "^\\s+$",
        [
            "\t\n\v\f\r ",
            "\u00a0",
            "\u1680",
            "\u2000\u200a",
            "\u2028\u2029",
            "\u202f",
            "\u205f",
            "\u3000",
            "\ufeff",
            "\u180e",
            "\u200b",
            "\x1c",
            "\x85",
        ],
    ),
    ("^\\S+$", ["abc", "a b", "\ufeff", "\x85", "\x1c"]),
    ("\\bfoo\\b", ["foo", "a foo b", "foobar", "éfooé", "_foo", "foo_", "1foo"]),
    ("\\Bfoo", ["afoo", "foo", "éfoo", " foo"]),
    ("^\\b$", [""]),
    ("^\\B$", [""]),
    # . and line terminators
    ("^.$", ["\n", "\r", "\u2028", "\u2029", "\u0085", "😀", "\t", "x"]),
    ("^a.c$", ["a\nc", "a\rc", "abc", "a\u2028c", "a😀c"]),
    ("^.*$", ["abc\ndef", "abc", "a\rb"]),
    ("[^]", ["\n", ""]),
    ("^[^]*$", ["a\nb\r\u2028"]),
    ("[]", ["", "x"]),
    ("a[]", ["a"]),
    ("^[^a]$", ["\n", "a", "b"]),
    # classes
    ("^[a-z]+$", ["abc", "aBc", "é"]),
    ("^[\\d\\s]+$", ["1 2\n3", "\u0661", "\u2028"]),
    ("^[\\D]$", ["1", "a"]),
    ("^[^\\W]$", ["a", "-", "é"]),
    ("^[^\\d\\s]$", ["a", "1", " "]),
    ("^[\\w-]+$", ["a-b", "a.b"]),
    ("^[-a]$", ["-", "a", "b"]),
    ("^[a-]$", ["-", "a"]),
    ("^[\\-]$", ["-"]),
    ("^[.]$", [".", "a", "\n"]),
    ("^[\\b]$", ["\b", "b"]),
    ("^[\\]\\[]+$", ["[]", "]["]),
    ("^[[]$", ["[", "]"]),
    ("^[😀-😂]$", ["😁", "😃", "\ud83d"]),
    ("^[\\u0041-\\u005A]+$", ["ABC", "abc"]),
    ("^[\\u{1F600}-\\u{1F64F}]$", ["😀", "🙏", "🚀"]),
    ("^[\\x41-\\x43]$", ["A", "C", "D"]),
    ("^[\\cA-\\cZ]$", ["\x01", "\x1a", "A"]),
    ("^[^\\n\\r]*$", ["ab", "a\nb", "a\rb"]),
    ("^[\\s\\S]$", ["\n", "x"]),
    ("^[\\0]$", ["\x00", "0"]),
    # escapes
    ("^\\u00e9$", ["é", "e\u0301"]),
    ("^\\u{e9}$", ["é"]),
    ("^\\uD83D\\uDE00$", ["😀"]),  # (a JSON string never holds a pair as two code points)
    ("^\\uD83D$", ["\ud83d", "😀"]),
    ("^\\x41$", ["A"]),
    ("^\\t\\n\\v\\f\\r$", ["\t\n\v\f\r"]),
    ("^\\cJ$", ["\n", "J"]),
    ("^\\/$", ["/"]),
    ("^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\$", [".*+?()[]{}|^$\\"]),
    ("^\\0$", ["\x00"]),
    ("^😀+$", ["😀😀", "\ud83d"]),
    ("^é$", ["é", "É"]),
    # quantifiers
    ("^a{2}$", ["aa", "aaa", "a"]),
    ("^a{2,}$", ["aa", "aaaa", "a"]),
    ("^a{2,3}$", ["aa", "aaa", "aaaa"]),
    ("^a{0}$", ["", "a"]),
    ("^a*?$", ["aaa"]),
    ("^a+?b$", ["aab"]),
    ("^a??b$", ["ab", "b", "aab"]),
    ("^(?:ab)+$", ["abab", "aba"]),
    ("^(a|ab)(c|bcd)(d*)$", ["abcd"]),
    ("^(?:a|)+$", ["aaa", ""]),
    ("^(a*)*$", ["aaa", "b"]),
    ("^(a*)+$", ["", "aa"]),
    ("^x{1}{", []),
    # groups, lookarounds, backreferences
    ("^(a)(b)?\\2c$", ["ac", "abbc", "abc"]),
    ("(a)|\\1b", ["b", "a"]),
    ("^(?:(a)|b)\\1$", ["b", "aa", "a"]),
    ("^\\1(a)$", ["a", "aa"]),
    ("^(a\\1)$", ["a", "aa"]),
    ("^(?<x>[ab])\\k<x>$", ["aa", "ab", "bb"]),
    ("^(?<$x_1>a)\\k<$x_1>$", ["aa"]),
    ("(?=(a+))a*b\\1", ["baaabac", "b"]),
    ("^(?=.*[0-9])(?=.*[a-z]).{4,}$", ["ab12", "abcd", "1234", "a1"]),
    ("^(?!foo)\\w+$", ["foo", "foobar", "bar"]),
    ("(?<=\\$)\\d+", ["$10", "10", "€10"]),
    ("(?<!\\$)\\b\\d+", ["$10", "10", "x$10"]),
    ("(?<=^a*)b", ["aaab", "xb", "b"]),
    ("^(?!(a)b)\\w\\1c$", ["ac", "aac", "xc"]),
    ("^(?=(a))\\w\\1$", ["aa", "ab"]),
    ("^((a)|b)+$", ["ab", "ba"]),
    ("^(?:(?=a)|b)+$", ["b", "a"]),
    # alternation and the real-world shapes domain schemas use
    ("^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)$", ["1.0", "1.0\n", "01.0", "1.10", "\u0661.\u0660"]),
    ("^sha256:[0-9a-f]{64}$", ["sha256:" + "a" * 64, "sha256:" + "a" * 64 + "\n"]),
    ("^[A-Za-z][A-Za-z0-9_-]{0,62}$", ["eth0", "Gi0/1", "x" * 64]),
    ("^(?:[0-9]{1,3}\\.){3}[0-9]{1,3}$", ["10.0.0.1", "10.0.0.1\n", "1.2.3"]),
    ("^[a-z]+(?:-[a-z]+)*$", ["core-router", "-x", "x-"]),
    ("|", ["x"]),
    ("", ["x"]),
    ("a|b|", ["c"]),
    ("^(?:)$", [""]),
    # Unicode property escapes (issue 33): ECMA's names, exactly; alone, negated, in classes
    ("^\\p{L}+$", ["héllo", "Straße", "日本", "a1", "\u0391\u03b2"]),
    ("^\\p{Letter}$", ["Z", "1", "ǅ"]),
    ("^\\p{Lu}$", ["A", "a", "Ω", "ω", "ǅ", "\U0001d400"]),
    ("^\\p{gc=Nd}+$", ["0123", "\u0661\u0662", "\uff18", "²"]),
    ("^\\p{General_Category=Decimal_Number}$", ["7", "\u0967", "x"]),
    ("^\\p{digit}$", ["7", "\u0967", "x"]),
    ("^\\P{L}+$", ["123", "a", "!?", "\u00a0"]),
    ("^\\P{Lu}$", ["A", "a", "1"]),
    ("^\\p{Script=Greek}+$", ["\u03b1\u03b2\u03b3", "Ωmega", "ΑΒΓ", "ͅ"]),
    ("^\\p{sc=Grek}$", ["\u03b1", "a"]),
    ("^\\p{Script_Extensions=Greek}$", ["\u03b1", "\u0342", "a"]),
    ("^\\P{Script=Greek}+$", ["abc", "\u03b1b"]),
    ("^\\p{Script=Latin}+$", ["abc", "ÀÉ", "ß", "1"]),
    ("^\\p{sc=Cyrillic}+$", ["привет", "hello"]),
    ("^\\p{scx=Hira}$", ["ひ", "ー", "カ"]),
    ("^\\p{sc=Han}$", ["中", "a", "々"]),
    ("^\\p{Script=Arabic}+$", ["\u0627\u0644", "\u0661"]),
    ("^[\\p{Lu}\\d_]+$", ["AB_12", "Ab", "Ω_9"]),
    ("^[^\\p{L}\\p{N}]+$", ["!-?", "a", "1", " "]),
    ("^[\\P{Lu}]+$", ["abc", "aBc"]),
    ("^\\p{ASCII}+$", ["abc", "é"]),
    ("^\\p{Any}$", ["x", "\U0010ffff"]),
    ("^\\p{Alphabetic}+$", ["abc", "a1", "\u0345"]),
    ("^\\p{Alpha}$", ["a", "1"]),
    ("^\\p{White_Space}+$", [" \t\n", "\u0085", "\u200b"]),
    ("^\\p{Uppercase}$", ["A", "\u2160", "a"]),
    ("^\\p{Hex_Digit}+$", ["0aF", "g", "\uff21"]),
    ("^\\p{Emoji_Presentation}$", ["😀", "a", "\u231a"]),
    ("^\\p{Extended_Pictographic}$", ["😀", "\u00a9", "a"]),
    ("^\\p{Cs}$", ["a"]),
    ("^\\p{Cn}$", ["\U000e0080", "a"]),
]

#: Not u-mode ECMA-262 patterns: Node and skillrack must both refuse them.
INVALID = [
    "(", ")", "[", "a{", "a}", "]", "{1}", "*", "+a", "a**", "a{2,1}", "[z-a]",
    "\\", "\\-", "\\a", "\\e", "\\8", "\\1", "(a)\\2", "\\k<x>", "(?<x>a)\\k<y>",
    "(?<x>a)(?<x>b)", "(?<1x>a)", "\\u{110000}", "\\u{}", "\\u12", "\\x4", "\\c1", "\\c",
    "[\\d-z]", "[a-\\d]", "\\00", "\\01", "(?=a)*", "(?!a)+", "(?<=a)?", "^*", "$+", "\\b*",
    "(?i)a", "(?P<x>a)", "a{,3}", "[\\B]", "[\\k]", "\\p", "(?<=a", "a)", "(?:a", "x{1}{2}",
    "[\\c1]", "\\q", "\\_", "\\ ",
    # property escapes under names ECMA-262 does not have (JavaScript matches names exactly)
    "\\p{letter}", "\\p{Greek}", "\\p{sc=greek}", "\\p{Script=L}", "\\p{gc=Alphabetic}",
    "\\p{Alphabetic=Yes}", "\\p{L&}", "\\p{}", "\\p{L", "\\pL", "\\P", "[\\p{L}-z]",
    "\\p{sc=Hrkt}", "\\p{Other_Alphabetic}", "\\p{Basic_Emoji}", "\\p{Lowercase_letter}",
    "\\p{ Lu}", "\\p{IsGreek}", "\\p{InBasicLatin}",
]  # fmt: skip

#: Valid ECMA-262 that skillrack refuses, because ``regex`` would answer differently.
REFUSED = [
    "\\p{CWKCF}",
    "[\\P{Changes_When_NFKC_Casefolded}]",
    "^(?:(a)|b)*\\1$",
    "(a)+\\1",
    "(?<=(a))\\1",
    "(?<=\\1(a))b",
]


def _skillrack(pattern: str, string: str) -> bool | str:
    try:
        return patterns.search(pattern, string)
    except EcmaPatternError:
        return "syntax_error"


def _cases() -> list[tuple[str, str]]:
    cases = [(p, s) for p, own in CORPUS for s in dict.fromkeys(own + COMMON)]
    cases += [(p, "a") for p in INVALID]
    return cases


def _node(cases: list[tuple[str, str]]) -> list[Any]:
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(SCRIPT)],
        input=json.dumps(cases).encode(),
        capture_output=True,
        timeout=30,
        check=True,
    )
    answers: list[Any] = json.loads(done.stdout)
    return answers


@pytest.mark.skipif(
    NODE is None, reason="node is not installed: no reference RegExp to compare with"
)
def test_skillrack_answers_every_case_as_javascript_regexp_does() -> None:
    cases = _cases()
    assert 300 <= len(cases) <= 3000
    expected = _node(cases)
    disagreements = [
        (pattern, string, want, got)
        for (pattern, string), want in zip(cases, expected, strict=True)
        if (got := _skillrack(pattern, string)) != want
    ]
    assert disagreements == []
    # The corpus is not vacuous: both answers occur, and every INVALID pattern is one.
    assert {True, False, "syntax_error"} <= set(expected)
    assert all(answer == "syntax_error" for answer in expected[-len(INVALID) :])


@pytest.mark.skipif(
    NODE is None, reason="node is not installed: no reference RegExp to compare with"
)
def test_the_refused_patterns_are_valid_ecma_refused_with_a_reason() -> None:
    assert "syntax_error" not in _node([(p, "a") for p in REFUSED])
    for pattern in REFUSED:
        with pytest.raises(EcmaPatternError, match="not supported"):
            translate(pattern)


def test_python_meanings_no_longer_apply() -> None:
    """The differences the issue measured, without Node: each failed before the rewrite."""
    assert not patterns.search("^[0-9]+$", "80\n")
    assert not patterns.search("^\\d+$", "\u0668\u0660")
    assert not patterns.search("^\\w$", "é")
    assert not patterns.search("^.$", "\r")
    assert patterns.search("^\\s$", "\ufeff")
    assert patterns.search("[0-9]", "x8y")  # searched, not anchored


def test_a_schema_with_a_non_ecma_pattern_is_refused_with_the_position() -> None:
    with pytest.raises(InlineSchemaError) as caught:
        compile_inline_schema({"type": "string", "pattern": "(?P<x>a)"}, DRAFT_2020_12)
    assert caught.value.code == ErrorCode.INTERFACE_INVALID
    assert caught.value.pointer == "/pattern"
    assert "position" in caught.value.message
    with pytest.raises(InlineSchemaError) as caught:
        compile_inline_schema({"patternProperties": {"\\p{Letter_}": {}}}, DRAFT_2020_12)
    assert caught.value.pointer == "/patternProperties/\\p{Letter_}"
    assert "invalid Unicode property escape" in caught.value.message


def test_format_regex_is_ecma_validity() -> None:
    compiled = compile_inline_schema({"type": "string", "format": "regex"}, DRAFT_2020_12)
    assert compiled.is_valid("^[a-z]+$")
    assert compiled.is_valid("(?<x>a)\\k<x>")
    assert not compiled.is_valid("(?P<x>a)")  # Python syntax, not ECMA
    assert not compiled.is_valid("\\-")  # an identity escape u-mode does not allow
    assert not compiled.is_valid("a{2,1}")
    # u-mode property escapes (issue 33): valid by ECMA's exact names, in and out of classes
    for valid in ("\\p{L}", "^\\p{Lu}+$", "\\P{Script=Greek}", "[\\p{sc=Latn}\\d]", "\\p{Any}"):
        assert compiled.is_valid(valid), valid
    for invalid in ("\\p{letter}", "\\p{Greek}", "\\p{L", "[\\p{L}-z]", "\\pL"):
        assert not compiled.is_valid(invalid), invalid


def test_validation_uses_ecma_meaning() -> None:
    compiled = compile_inline_schema(
        {"type": "object", "properties": {"port": {"type": "string", "pattern": "^[0-9]+$"}}},
        DRAFT_2020_12,
    )
    assert compiled.validate({"port": "80"}) == ()
    [detail] = compiled.validate({"port": "80\n"})
    assert (detail.instance_path, detail.keyword) == ("/port", "pattern")
    assert not compiled.is_valid({"port": "\u0668\u0660"})


def test_a_served_skill_refuses_what_ecma_refuses_over_http() -> None:
    """Over HTTP: ``"80\\n"``, Arabic-Indic digits and a non-ECMA date-time are input_invalid."""
    skill = simple_skill(
        "ecma_port",
        input_schema={
            "type": "object",
            "properties": {
                "port": {"type": "string", "pattern": "^[0-9]+$"},
                "when": {"type": "string", "format": "date-time"},
            },
        },
    )
    registry = registry_of([("vendor", SkillsPlugin(skill)), ("allow", AllowAll())])
    registered = registry.get("ecma_port")
    assert registered is not None

    def call(base: str, arguments: dict[str, Any]) -> dict[str, Any]:
        request = skill_request(
            "ecma_port", arguments, registered.skill.version, registered.interface_digest
        )
        task: dict[str, Any] = invoke(base, request)
        return task

    with running_agent(registry) as base:
        assert call(base, {"port": "80", "when": "2024-01-01T00:00:00Z"})["status"]["state"] == (
            "TASK_STATE_COMPLETED"
        )
        for arguments, pointer in [
            ({"port": "80\n"}, "/port"),
            ({"port": "\u0668\u0660"}, "/port"),
            ({"when": "2024-01-01T00:00:00Z\n"}, "/when"),
        ]:
            task = call(base, arguments)
            assert task["status"]["state"] == "TASK_STATE_REJECTED"
            error = error_of(task)
            assert error["code"] == "input_invalid"
            assert [d["instance_path"] for d in error["details"]] == [pointer]


@pytest.mark.skipif(
    NODE is None, reason="node is not installed: no reference RegExp to compare with"
)
def test_every_property_name_skillrack_accepts_javascript_accepts_and_regex_knows() -> None:
    """The name tables of :mod:`skillrack.interface.unicode_properties`, all of them."""
    names = [*unicode_properties.GENERAL_CATEGORY, *unicode_properties.BINARY]
    unsupported = sorted(unicode_properties.UNSUPPORTED)
    names += [f"gc={n}" for n in unicode_properties.GENERAL_CATEGORY]
    names += [f"{k}={s}" for s in sorted(unicode_properties.SCRIPTS) for k in ("sc", "scx")]
    assert len(names) > 500
    answers = _node([(f"\\p{{{name}}}", "a") for name in names + unsupported])
    assert [
        n for n, a in zip(names + unsupported, answers, strict=True) if a == "syntax_error"
    ] == []
    for name in names:
        expression = unicode_properties._regex_property(name)
        assert expression is not None, name
        regex.compile(f"\\p{{{expression}}}")  # the regex package knows it too
