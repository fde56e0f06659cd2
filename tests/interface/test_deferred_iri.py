"""jsonschema is imported without building rfc3987-syntax's parser, and loses nothing by it.

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


def test_skillrack_imports_jsonschema_without_rfc3987_syntax() -> None:
    assert run(
        "import skillrack.interface.inline as inline\n"
        "inline.ensure_format_checkers()  # every defined format still has a checker\n"
        "from jsonschema import Draft202012Validator\n"
        "names = Draft202012Validator.FORMAT_CHECKER.checkers\n"
        "print(json.dumps(['rfc3987_syntax' in sys.modules, 'iri' in names,"
        " 'iri-reference' in names]))"
    ) == [False, True, True]


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


def test_other_importers_get_rfc3987_syntax() -> None:
    """Only jsonschema's import is turned away; anyone else importing the package gets it."""
    assert run(
        "import skillrack.interface.inline\n"
        "import rfc3987_syntax\n"
        "print(json.dumps([rfc3987_syntax.is_valid_syntax('iri', 'http://example.com/')]))"
    ) == [True]
