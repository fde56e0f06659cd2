"""mypy --strict, as the project configures it, accepts a correct handler and refuses a wrong one.

A vendor annotates its handler with ``skillrack.SkillContext`` (or
``BaseSkillContext``) and declares it in a ``Skill``; the declaration's
handler type (:data:`skillrack.hookspecs.Handler`) is what lets mypy refuse
a handler that takes a ``str``, forgets its context or returns a ``set``, and
the context's typed returns are what let it refuse a handler that reads an
answer or a delegation's result as something it is not.  This runs mypy itself
(``mypy.api.run``) on copies of the example vendor plugin's modules, on the
handlers the README and the guides show, and on small wrong variants, each in
its own file so that every expected error is attributed to the file and line
that should cause it.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api", reason="mypy is in the test extra")

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "example_vendor_plugin" / "src" / "skillrack_example_vendor"
#: Example vendor modules that import only ``skillrack``: delegation (delegate, compose) and
#: the help desk (a base skill).
COPIED = ("delegation.py", "help.py")
#: The example vendor's test stand-in for the host's context.
FAKES = ROOT / "example_vendor_plugin" / "tests" / "fakes.py"
#: The README's plugin snippet, and the blocks of the guides marked ``<!-- mypy-strict -->``.
SNIPPET = re.compile(r"<!-- (?:plugin-snippet|mypy-strict) -->\s*```python\n(.*?)```", re.S)


def documented_handlers() -> dict[str, str]:
    """File name -> the Python of each marked block of README.md and docs/*.md."""
    found: dict[str, str] = {}
    for page in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))):
        for index, block in enumerate(SNIPPET.findall(page.read_text(encoding="utf-8"))):
            found[f"doc_{page.stem.replace('-', '_').lower()}_{index}.py"] = block
    return found


HEADER = """\
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skillrack import (
    BaseSkill, BaseSkillContext, DomainSchema, IncomingMessage, JsonValue, Skill, SkillContext,
    SkillResult,
)

SCHEMA = DomainSchema.inline({"type": "object"}, schema_uri="urn:example:typing", version="1.0")
"""


def skill(handler: str) -> str:
    """A ``Skill`` declaration whose ``handler=`` line is the one mypy must name."""
    return (
        'DECLARED = Skill(id="typed", version="1.0", name="Typed", description="...",\n'
        "    input_schema=SCHEMA, output_schema=SCHEMA,\n"
        f"    handler={handler},  # expected\n"
        ")\n"
    )


#: Correct handlers, declared: mypy must report nothing in this file.
CORRECT = (
    HEADER
    + "from delegation import assess_resource, summarize_condition\n"
    + "from fakes import FakeContext\n"
    + "from help import help_skill\n"
    + "from skillrack.testing import VerifiedInterface\n\n"
    + skill("assess_resource")
    + skill("summarize_condition").replace("DECLARED", "SUMMARY")
    + textwrap.dedent(
        """
        async def minimal(arguments: dict[str, JsonValue], context: SkillContext) -> JsonValue:
            answer = await context.request_input({"question": ["window?"]})
            result: SkillResult = await context.delegate("peer", "skill", {"a": [1, 2]})
            return {"answer": answer, "peer_result": result.result}


        async def help_desk(message: IncomingMessage, context: BaseSkillContext) -> str:
            await context.status("looking")
            return message.text


        MINIMAL = Skill(id="m", version="1.0", name="M", description="...",
            input_schema=SCHEMA, output_schema=SCHEMA, handler=minimal)
        HELP = BaseSkill(id="h", name="H", description="...", handler=help_desk)
        HELPS = help_skill([MINIMAL])


        def stand_in(interface: VerifiedInterface) -> SkillContext:
            return FakeContext(interface)
        """
    )
)

#: Wrong handlers: file name -> module text, each with one ``# expected`` line.
WRONG = {
    "wrong_arguments.py": HEADER
    + "async def handler(arguments: str) -> int:\n    return 1\n\n"
    + skill("handler"),
    "missing_context.py": HEADER
    + "async def handler(arguments: Mapping[str, Any]) -> JsonValue:\n    return {}\n\n"
    + skill("handler"),
    "base_context.py": HEADER
    + "async def handler(arguments: Mapping[str, Any], context: BaseSkillContext) -> JsonValue:\n"
    + "    return {}\n\n"
    + skill("handler"),
    "not_async.py": HEADER
    + "def handler(arguments: Mapping[str, Any], context: SkillContext) -> JsonValue:\n"
    + "    return {}\n\n"
    + skill("handler"),
    "not_json.py": HEADER
    + "async def handler(arguments: Mapping[str, Any], context: SkillContext) -> set[str]:\n"
    + "    return set()\n\n"
    + skill("handler"),
    "schema_handler_as_base.py": HEADER
    + "async def handler(arguments: Mapping[str, Any], context: SkillContext) -> JsonValue:\n"
    + "    return {}\n\n"
    + 'DECLARED = BaseSkill(id="b", name="B", description="...",\n'
    + "    handler=handler,  # expected\n)\n",
    "answer_not_int.py": HEADER
    + "async def handler(arguments: Mapping[str, Any], context: SkillContext) -> JsonValue:\n"
    + "    count: int = await context.request_input({'how many': '?'})  # expected\n"
    + "    return count\n",
    "result_not_str.py": HEADER
    + "async def handler(arguments: Mapping[str, Any], context: SkillContext) -> JsonValue:\n"
    + "    name: str = await context.delegate('peer', 'skill', {})  # expected\n"
    + "    return name\n",
}

NOTE = re.compile(r"^.+?\.py:\d+: note: ")
ERROR = re.compile(r"^(?P<path>.+?\.py):(?P<line>\d+): error: .*\[(?P<code>[\w-]+)\]$")


def expected_line(text: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.endswith("# expected"))


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, str]]]:
    """Run mypy once over every file: file name -> [(line, error code)]."""
    work = tmp_path_factory.mktemp("typed-handlers")
    for name in COPIED:
        shutil.copy(VENDOR / name, work / name)
    shutil.copy(FAKES, work / FAKES.name)
    (work / "correct.py").write_text(CORRECT, encoding="utf-8")
    for name, text in documented_handlers().items():
        (work / name).write_text(text, encoding="utf-8")
    for name, text in WRONG.items():
        (work / name).write_text(text, encoding="utf-8")
    stdout, stderr, status = mypy_api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            # Check these files only; what they import is read for its types, not reported on.
            "--follow-imports",
            "silent",
            "--cache-dir",
            str(work / ".mypy_cache"),
            "--no-error-summary",
            "--hide-error-context",
            "--no-pretty",
            *sorted(str(path) for path in work.glob("*.py")),
        ]
    )
    assert stderr == "" and status in (0, 1), stderr
    found: dict[str, list[tuple[int, str]]] = {}
    for line in stdout.splitlines():
        if NOTE.match(line):  # the details of the error before it
            continue
        match = ERROR.match(line)
        assert match is not None, f"unexpected mypy output: {line}"
        found.setdefault(Path(match["path"]).name, []).append((int(match["line"]), match["code"]))
    return found


def test_correct_handlers_pass(mypy_errors: dict[str, list[tuple[int, str]]]) -> None:
    documented = documented_handlers()
    assert {"doc_readme_0.py", "doc_typed_handlers_0.py"} <= set(documented)
    for name in ("correct.py", *COPIED, FAKES.name, *documented):
        assert mypy_errors.get(name, []) == [], name


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_handler_is_reported(
    name: str, mypy_errors: dict[str, list[tuple[int, str]]]
) -> None:
    code = "assignment" if name in ("answer_not_int.py", "result_not_str.py") else "arg-type"
    assert mypy_errors.get(name) == [(expected_line(WRONG[name]), code)]
