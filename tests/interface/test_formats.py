"""Every defined ``format`` is checked exactly as its RFC says; no value ends in a newline.

Before, jsonschema's checkers matched with ``re.match(...$)``, so ``date-time``,
``time``, ``hostname``, ``uri`` and ``uri-reference`` accepted a trailing
``"\\n"``, ``email`` accepted anything holding an ``@`` and ``ipv6`` a zone
index.  The corpora below are answered through a compiled schema, the path
every request takes; each format's invalid list holds its valid values with a
trailing newline as well.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from typing import Any

import pytest

from skillrack.errors import ErrorCode
from skillrack.interface.canonical import is_digest
from skillrack.interface.document import InterfaceError, verify_document
from skillrack.interface.inline import DEFINED_FORMATS, DRAFT_2020_12, compile_inline_schema
from skillrack.interface.rfc_formats import EXACT_CHECKERS
from skillrack.interface.versions import is_version

CORPORA: dict[str, tuple[list[str], list[str]]] = {
    "date-time": (
        ["2024-02-29T12:30:00Z", "1985-04-12T23:20:50.52Z", "1996-12-19T16:39:57-08:00",
         "1990-12-31T23:59:60Z", "1990-12-31T15:59:60-08:00", "2024-01-01t00:00:00z"],
        ["2023-02-29T12:30:00Z", "2024-01-01 00:00:00Z", "2024-01-01T00:00:00",
         "2024-01-01T24:00:00Z", "2024-01-01T12:00:60Z", "2024-13-01T00:00:00Z",
         "2024-01-01T00:00:00+24:00", "\uff12024-01-01T00:00:00Z", "2024-01-01T00:00:00.Z"],
    ),
    "date": (["2024-02-29", "2000-02-29", "1963-06-19"],
             ["1900-02-29", "2024-04-31", "2024-1-01", "20240101", "2024-01-0\u0661"]),
    "time": (["08:30:06Z", "08:30:06.283185Z", "23:59:60Z", "01:29:60+01:30", "12:00:00-05:00"],
             ["08:30:06", "8:30:06Z", "22:59:60Z", "12:00:00+5:00", "12:00:00+05:60"]),
    "duration": (["P4DT12H30M5S", "P1Y", "P2W", "PT0.5S"[:0] + "PT36H", "P1M", "PT1M"],
                 ["P", "PT", "P1D2H", "P1W1D", "1D", "P1YT", "P\u0661D"]),
    "hostname": (["www.example.com", "a", "xn--nw2a.com", "a-b.c", "a" * 63 + ".com"],
                 ["-a.com", "a-.com", "a_b.com", "a..com", ".", "a" * 64 + ".com",
                  "ex ample.com", "é.com", ("a" * 63 + ".") * 4 + "com"]),
    "email": (['joe.bloggs@example.com', 'te~st@example.com', '"joe bloggs"@example.com',
               'joe@[127.0.0.1]', 'joe@[IPv6:::1]', 'a@b'],
              ['2962', '.test@example.com', 'te..st@example.com', 'test.@example.com',
               'joe@bad_host.com', 'jo e@example.com', 'joe@', '@example.com', 'jöe@example.com',
               'joe@[300.0.0.1]']),
    "idn-email": (["실례@실례.테스트", "joe.bloggs@example.com"], ["2962", "실례@실례..테스트"]),
    "ipv4": (["192.168.0.1", "0.0.0.0", "255.255.255.255"],
             ["256.0.0.1", "192.168.0", "087.10.0.1", "1.2.3.4.5", "\u0661.2.3.4", "0x7f.0.0.1"]),
    "ipv6": (["::1", "::", "2001:db8::ff00:42:8329", "::ffff:192.0.2.128", "1:2:3:4:5:6:7:8"],
             ["::1%eth0", "12345::", "1:2:3:4:5:6:7:8:9", ":::", "::ffff:192.0.2.0128",
              "::1 ", "\u0661::"]),
    "uri": (["http://example.com/a?b=c#d", "urn:isbn:0451450523", "mailto:a@b.c",
             "http://[::1]:80/", "http://user@host:8080/p%20q", "tag:example.com,2024:x"],
            ["//example.com", "/a", "http://exa mple.com", "http://example.com/%zz",
             "1http://x", "http://[::1%eth0]/", "http://x/\\", "http://x:8a/"]),
    "uri-reference": (["/a/b", "a/b?c", "#frag", "", "//host/p", "http://x/y"],
                      ["\\\\WINDOWS\\file", "a b", "#frag#", "a:b:c d", "%"]),
    "uri-template": (["http://example.com/{user}", "{+path}/here", "{?x,y*}", "{var:30}", "x"],
                     ["http://example.com/{user", "{}", "{var:0}", "{a b}", "a b"]),
    "uuid": (["2eb8aa08-aa98-11ea-b4aa-73b441d16380", "2EB8AA08-AA98-11EA-B4AA-73B441D16380"],
             ["2eb8aa08aa9811eab4aa73b441d16380", "{2eb8aa08-aa98-11ea-b4aa-73b441d16380}",
              "2eb8aa08-aa98-11ea-b4aa-73b441d1638",
              "urn:uuid:2eb8aa08-aa98-11ea-b4aa-73b441d16380"]),
    "json-pointer": (["", "/", "/a/b", "/a~0b/c~1d", "/a\nb"], ["a", "/a~", "/a~2", "#/a"]),
    "relative-json-pointer": (["0", "1/a", "0#", "2-1/x", "0+1"],
                              ["-1", "01", "#", "0##", "1a", "+1/a", "0\n", "0#\n", "1\r\n"]),
    "regex": (["^[a-z]+$", "(?<x>a)\\k<x>", "\\u{1F600}", "[^]", "\\p{L}", "[\\P{sc=Grek}]"],
              ["(?P<x>a)", "\\-", "a{2,1}", "(", "\\p{letter}", "\\p{Greek}"]),
}  # fmt: skip


def _conforms(fmt: str, value: str) -> bool:
    return compile_inline_schema({"format": fmt}, DRAFT_2020_12).is_valid(value)


@pytest.mark.parametrize("fmt", sorted(CORPORA))
def test_each_format_accepts_exactly_its_rfc_grammar(fmt: str) -> None:
    valid, invalid = CORPORA[fmt]
    assert [v for v in valid if not _conforms(fmt, v)] == []
    # A valid value with a trailing line terminator is never valid (except where the
    # grammar ends in one that takes any character: a JSON Pointer token, a regex).
    if fmt not in ("json-pointer", "relative-json-pointer", "regex"):
        invalid = invalid + [v + "\n" for v in valid] + [v + "\r\n" for v in valid]
    assert [v for v in invalid if _conforms(fmt, v)] == []


def test_every_exact_checker_is_a_defined_format_and_passes_non_strings() -> None:
    assert set(EXACT_CHECKERS) <= DEFINED_FORMATS
    assert set(CORPORA) == set(EXACT_CHECKERS)
    assert all(check(12) and check(None) for check in EXACT_CHECKERS.values())


def test_a_detail_names_the_field_and_the_format() -> None:
    compiled = compile_inline_schema(
        {"properties": {"when": {"type": "string", "format": "date-time"}}}, DRAFT_2020_12
    )
    [detail] = compiled.validate({"when": "2024-01-01T00:00:00Z\n"})
    assert (detail.instance_path, detail.keyword, detail.expected) == (
        "/when",
        "format",
        "date-time",
    )


@pytest.mark.parametrize(
    ("pointer", "value"),
    [
        ("/skill_version", "1.0\n"),
        ("/skill_version", "1.0\r\n"),
        ("/input_schema/version", "1.0\n"),
        ("/input_schema/digest", None),  # the real digest with "\n" appended
        ("/input_schema/schema_uri", "https://example.com/s\n"),
    ],
)
def test_every_version_string_digest_and_uri_in_a_document_is_fully_matched(
    draft_document: dict[str, Any], pointer: str, value: str | None
) -> None:
    document = copy.deepcopy(draft_document)
    *parents, last = pointer.strip("/").split("/")
    holder = document
    for name in parents:
        holder = holder[name]
    holder[last] = holder[last] + "\n" if value is None else value
    with pytest.raises(InterfaceError) as caught:
        verify_document(document)
    assert caught.value.code == ErrorCode.INTERFACE_INVALID
    assert caught.value.pointer == pointer
    verify_document(draft_document)  # the document as published still passes


def test_version_strings_and_digests_are_matched_whole_in_code_too() -> None:
    digest = "sha256:" + "0" * 64
    assert is_version("1.0") and is_digest(digest)
    assert not any(is_version(v) for v in ("1.0\n", "1.0\r\n", "\n1.0", "1.0 "))
    assert not any(is_digest(d) for d in (digest + "\n", "\n" + digest, digest + "\r"))


def test_a_format_grammar_is_compiled_at_its_first_check_not_at_import() -> None:
    """Every start imports the checkers; it compiles only the grammars a check uses."""
    probe = (
        "from skillrack.interface import rfc_formats as r\n"
        "patterns = {n: p for n, p in vars(r).items() if isinstance(p, r._Pattern)}\n"
        "assert len(patterns) > 20 and all(p._compiled is None for p in patterns.values())\n"
        "date = r.EXACT_CHECKERS['date']\n"
        "assert date('2024-02-29') and not date('2023-02-29')\n"
        "print(sorted(n for n, p in patterns.items() if p._compiled is not None))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["['_DATE']"]
