"""Each RFC 7951 rule of issue 30 on a module written to exercise it (tests/yang/data/rules.yang).

The verdicts expected come from RFC 7950/7951, written by hand for each case;
when ``yanglint`` is installed every case is also put to it, except the few
whose disagreement is a listed limit (``LIMIT``: leafref existence, ``must``,
key uniqueness, XSD's Unicode ``\\d``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from skillrack.interface.inline import DRAFT_2020_12, compile_inline_schema
from skillrack.interface.limits import Limits

DATA = Path(__file__).parent / "data"
FILES = [DATA / "rules.yang", DATA / "rules-aug.yang"]
BASE: dict[str, Any] = {"tags": ["x"], "needed": {"must-have": "y"}, "a": "1"}
LIMIT = "limit"
#: Removes the member from BASE.
DROP = object()

#: (what, members added to BASE (DROP removes one), valid per RFC 7950/7951, a listed limit)
CASES: list[tuple[str, dict[str, Any], bool, str]] = [
    ("base", {}, True, ""),
    ("int8 is a number", {"i8": -128}, True, ""),
    ("int8 out of range", {"i8": 128}, False, ""),
    ("int8 as a string", {"i8": "1"}, False, ""),
    ("uint32 second interval", {"u32": 4294967295}, True, ""),
    ("uint32 between intervals", {"u32": 15}, False, ""),
    ("int64 is a string", {"i64": "-100"}, True, ""),
    ("int64 with a plus sign", {"i64": "+42"}, True, ""),
    ("int64 out of range", {"i64": "101"}, False, ""),
    ("int64 as a number", {"i64": 5}, False, ""),
    ("uint64 max", {"u64": "18446744073709551615"}, True, ""),
    ("uint64 above max", {"u64": "18446744073709551616"}, False, ""),
    ("decimal64 bound", {"dec": "10.25"}, True, ""),
    ("decimal64 one digit", {"dec": "-1.5"}, True, ""),
    ("decimal64 integer", {"dec": "3"}, True, ""),
    ("decimal64 above range", {"dec": "10.26"}, False, ""),
    ("decimal64 too many digits", {"dec": "1.125"}, False, ""),
    ("decimal64 as a number", {"dec": 1.5}, False, ""),
    ("empty is [null]", {"marker": [None]}, True, ""),
    ("empty as null", {"marker": None}, False, ""),
    ("enumeration", {"color": "green"}, True, ""),
    ("unknown enum", {"color": "blue"}, False, ""),
    ("bits", {"perms": "write read"}, True, ""),
    ("no bits", {"perms": ""}, True, ""),
    ("unknown bit", {"perms": "read fly"}, False, ""),
    ("bit twice", {"perms": "read read"}, False, ""),
    ("binary", {"blob": "AAEC"}, True, ""),
    ("binary not base64", {"blob": "AAE"}, False, ""),
    ("identity qualified", {"kind": "rules:circle"}, True, ""),
    ("identity of the leaf's module unqualified", {"kind": "round"}, True, ""),
    ("identity of another module", {"kind": "rules-aug:square"}, True, ""),
    ("identity from another module unqualified", {"kind": "square"}, False, ""),
    ("the base itself", {"kind": "rules:shape"}, False, ""),
    ("identity not derived", {"kind": "rules:other"}, False, ""),
    ("unknown identity", {"kind": "rules:nope"}, False, ""),
    ("leafref takes its target's type", {"word": "cd", "ref": "cd"}, True, ""),
    ("leafref target type violated", {"word": "cd", "ref": "CD"}, False, ""),
    ("leafref to a missing value", {"word": "cd", "ref": "ef"}, True, LIMIT),
    ("typedef chain: pattern and length", {"word": "cde"}, True, ""),
    ("typedef chain: length", {"word": "c"}, False, ""),
    ("typedef chain: base pattern", {"word": "C1"}, False, ""),
    ("typedef chain: second pattern", {"word": "xc"}, False, ""),
    ("typedef chain: invert-match", {"word": "abc"}, False, ""),
    ("typedef chain: range narrowed", {"tiny": 3}, True, ""),
    ("typedef chain: outside narrowed", {"tiny": 4}, False, ""),
    ("union in member order: int", {"either": 5}, True, ""),
    ("union: string member", {"either": "ABC"}, True, ""),
    ("union: boolean member", {"either": True}, True, ""),
    ("union: no member", {"either": "abc"}, False, ""),
    ("instance-identifier", {"where": "/rules:top/rules:word"}, True, LIMIT),
    ("not an instance-identifier", {"where": "top"}, False, ""),
    ("XSD escapes", {"xsd": "12-a d"}, True, ""),
    ("XSD \\d is Unicode", {"xsd": "\u0661\u0662-a d"}, True, LIMIT),
    ("XSD \\s is a space", {"xsd": "12-a\tz"}, True, ""),
    ("XSD negated class", {"xsd": "12-a b"}, False, ""),
    ("XSD ^ and $ are literals", {"dollar": "$a^"}, True, ""),
    ("XSD anchoring", {"dollar": "x$a^"}, False, ""),
    ("XSD class subtraction", {"sub": "bcd"}, True, LIMIT),  # libyang (PCRE) has no subtraction
    ("XSD class subtraction removes", {"sub": "bad"}, False, ""),
    ("must not checked", {"checked": -1}, True, LIMIT),
    ("leaf-list", {"tags": ["x", "y", "z"]}, True, ""),
    ("min-elements", {"tags": []}, False, ""),
    ("max-elements", {"tags": ["a", "b", "c", "d"]}, False, ""),
    ("leaf-list values unique", {"tags": ["a", "a"]}, False, ""),
    ("mandatory in a non-presence container", {"needed": {}}, False, ""),
    ("non-presence container with a mandatory leaf is required", {"needed": DROP}, False, ""),
    ("presence container is optional", {"optional": DROP}, True, ""),
    ("presence container's mandatory leaf", {"optional": {}}, False, ""),
    ("list", {"item": [{"name": "a", "value": 1}]}, True, ""),
    ("list key required", {"item": [{"value": 1}]}, False, ""),
    ("list keys unique", {"item": [{"name": "a"}, {"name": "a"}]}, True, LIMIT),
    ("one case", {"tcp-port": 1, "tcp-opt": "x"}, True, ""),
    ("two cases", {"tcp-port": 1, "udp-port": 2}, False, ""),
    ("shorthand case against a case", {"raw": [None], "udp-port": 2}, False, ""),
    ("augmented case against a case", {"rules-aug:sctp-port": 1, "udp-port": 2}, False, ""),
    ("case's mandatory member", {"tcp-opt": "x"}, False, ""),
    ("mandatory choice, other case", {"a": DROP, "b": "2"}, True, ""),
    ("mandatory choice, both cases", {"b": "2"}, False, ""),
    ("mandatory choice, no case", {"a": DROP}, False, ""),
    ("grouping expanded", {"from-grouping": "g"}, True, ""),
    ("augment qualified", {"rules-aug:extra": "e"}, True, ""),
    ("augment unqualified", {"extra": "e"}, False, ""),
    ("deviate not-supported", {"flag": True}, False, ""),
    ("if-feature enabled by default", {"fancy-leaf": "f"}, True, ""),
    ("config false in the full tree", {"state-leaf": "s"}, True, ""),
    ("unknown member", {"zzz": 1}, False, ""),
]


def _instance(changes: dict[str, Any]) -> dict[str, Any]:
    body = dict(BASE)
    for key, value in changes.items():
        if value is DROP:
            body.pop(key, None)
        else:
            body[key] = value
    return {"rules:top": body}


@pytest.fixture(scope="module")
def compiled() -> Any:
    from skillrack.yang.convert import convert
    from skillrack.yang.load import load_modules

    conversion = convert(load_modules(FILES), "/rules:top")
    return compile_inline_schema(conversion.schema, DRAFT_2020_12, Limits(max_compile_seconds=60))


@pytest.mark.parametrize(("what", "changes", "valid", "limit"), CASES, ids=[c[0] for c in CASES])
def test_rule(compiled: Any, what: str, changes: dict[str, Any], valid: bool, limit: str) -> None:
    details = compiled.validate(_instance(changes))
    assert (not details) is valid, details


@pytest.mark.skipif(shutil.which("yanglint") is None, reason="yanglint not installed")
def test_yanglint_agrees_with_the_expected_verdicts(tmp_path: Path) -> None:
    """The hand-written verdicts are libyang's too, except the listed limits."""
    wrong = []
    for index, (what, changes, valid, limit) in enumerate(CASES):
        if limit:
            continue
        path = tmp_path / f"{index}.json"
        path.write_text(json.dumps(_instance(changes)))
        run = subprocess.run(
            ["yanglint", "-Q", "-t", "data", *map(str, FILES), str(path)],
            capture_output=True,
            check=False,
            timeout=60,
        )
        if (run.returncode == 0) is not valid:
            wrong.append(f"{what}: yanglint {run.returncode == 0}: {run.stderr.decode()[:200]}")
    assert wrong == []


def test_the_listed_limits_are_in_the_report() -> None:
    from skillrack.yang.convert import convert
    from skillrack.yang.load import load_modules

    conversion = convert(load_modules(FILES), "/rules:top")
    report = "\n".join(conversion.report)
    for expected in (
        "/rules:top/ref: leafref",
        "/rules:top/where: instance-identifier",
        "/rules:top/checked: must '. > 0'",
        "/rules:top/item: key uniqueness (name)",
        "/rules:top/item: unique 'value'",
        "/rules:top (case sctp): when 'r:i8 = 1'",
    ):
        assert expected in report
    top = conversion.schema["$defs"]["rules:top"]
    assert top["properties"]["checked"]["x-yang"] == {
        "must": [{"condition": ". > 0", "error-message": "positive"}]
    }
    assert conversion.schema["$defs"]["rules:top/item"]["x-yang"]["key-unique"] == ["name"]
