"""jsonschema is imported without format packages skillrack never calls, and loses nothing by it.

Each case runs in a fresh interpreter: what is imported first is the point.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run(code: str) -> list[object]:
    """The JSON ``code`` prints last, run in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", "import json, sys\n" + code],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    answer: list[object] = json.loads(result.stdout.splitlines()[-1])
    return answer


def test_skillrack_imports_jsonschema_without_the_deferred_packages() -> None:
    assert run(
        "import skillrack.interface.inline as inline\n"
        "inline.ensure_format_checkers()  # every defined format still has a checker\n"
        "from jsonschema import Draft202012Validator\n"
        "names = Draft202012Validator.FORMAT_CHECKER.checkers\n"
        "packages = ['rfc3987_syntax', 'isoduration', 'arrow', 'rfc3986_validator']\n"
        "formats = ['iri', 'iri-reference', 'duration', 'uri', 'uri-reference']\n"
        "print(json.dumps([*(p in sys.modules for p in packages), *(f in names for f in formats)]))"
    ) == [False, False, False, False, True, True, True, True, True]


@pytest.mark.parametrize(
    "first", ["import skillrack.interface.inline", "import jsonschema"], ids=["deferred", "eager"]
)
def test_jsonschemas_own_duration_and_uri_checkers_answer_as_before(first: str) -> None:
    """The same answers whichever import came first; the packages load on first use."""
    assert run(
        f"{first}\n"
        "from jsonschema import Draft4Validator, Draft7Validator, Draft202012Validator\n"
        "D4, D7, D2020 = Draft4Validator, Draft7Validator, Draft202012Validator\n"
        "cases = [(D2020, 'P1D', 'duration'), (D2020, 'P1', 'duration'),\n"
        "         (D2020, 'PT', 'duration'), (D4, 'http://a/b', 'uri'),\n"
        "         (D7, 'no scheme', 'uri'), (D7, '../a?b#c', 'uri-reference'),\n"
        "         (D2020, 'a b', 'uri-reference')]\n"
        "answers = [v.FORMAT_CHECKER.conforms(value, name) for v, value, name in cases]\n"
        "print(json.dumps([*answers, 'isoduration' in sys.modules]))"
    ) == [True, False, False, True, False, True, False, True]


@pytest.mark.parametrize(
    "first", ["import skillrack.interface.inline", "import jsonschema"], ids=["deferred", "eager"]
)
def test_jsonschemas_own_iri_checkers_answer_as_before(first: str) -> None:
    """Code that uses jsonschema's checkers gets rfc3987-syntax's answers, loaded on first use."""
    assert run(
        f"{first}\n"
        "from jsonschema import Draft7Validator, Draft202012Validator\n"
        "answers = [\n"
        "    validator.FORMAT_CHECKER.conforms(value, name)\n"
        "    for validator in (Draft7Validator, Draft202012Validator)\n"
        "    for value, name in [('http://example.com/\\u00e4', 'iri'), ('::', 'iri'),\n"
        "                        ('a/\\u00e4', 'iri-reference'), (' ', 'iri-reference')]\n"
        "]\n"
        "print(json.dumps([*answers, 'rfc3987_syntax' in sys.modules]))"
    ) == [True, False, True, False, True, False, True, False, True]


@pytest.mark.slow
def test_other_importers_get_rfc3987_syntax() -> None:
    """Only jsonschema's import is turned away; anyone else importing the package gets it."""
    assert run(
        "import skillrack.interface.inline\n"
        "import rfc3987_syntax\n"
        "print(json.dumps([rfc3987_syntax.is_valid_syntax('iri', 'http://example.com/')]))"
    ) == [True]
