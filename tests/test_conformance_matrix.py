"""``docs/conformance.md`` stays true: one row per requirement sentence of the draft.

The matrix maps every normative sentence of the Internet-Draft to the module
that implements it and the tests that fail without it.  A table like that rots
silently: a test is renamed, a module moves, the draft gains a sentence.  These
tests re-derive the requirement sentences from the draft with the same
mechanical rule the page was built with (described on the page) and check the
rows against them and against the tree.

``helpers/data/schema-interfaces-draft.txt`` is a copy of the draft, so the
check runs in any checkout (``helpers/spec_copies.py`` keeps it what it was
copied as, and equal to the shared draft where that is present).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.spec_copies import assert_copy_current

ROOT = Path(__file__).resolve().parents[1]
MATRIX = ROOT / "docs" / "conformance.md"
DRAFT = ROOT / "tests" / "helpers" / "data" / "schema-interfaces-draft.txt"

#: BCP 14 key words that make a sentence a requirement (MAY and OPTIONAL
#: grant freedom rather than require anything; RECOMMENDED does not occur).
KEYWORD = re.compile(r"\b(?:MUST|SHALL|SHOULD|REQUIRED)\b")

#: The titles that open a section in the extracted text, in document order.
#: The text lost section numbers and heading markup; a title is recognised at
#: the start of a line.  Sections without requirements are listed too, so a
#: requirement is never attributed to the section before it.
SECTIONS: tuple[str, ...] = (
    "Introduction",
    "Terminology",
    "Conventions and Definitions",
    "Scope",
    "Relationship to Other Work",
    "Design Principles",
    "Preserve task identity across delegation hops",
    "Standardize reusable structures, not all domain semantics",
    "Distinguish structural conformance from semantic conformance",
    "Deliver schemas inline in version 1.0",
    "Distinguish outputs from supporting records",
    "Assemble and validate before advertisement",
    "Schema Reference",
    "Skill Interface Schema and Documents",
    "Skill input",
    "Skill output",
    "Supporting-record schemas",
    "A2A Mapping for Interface Version 1.0",
    "Agent advertisement",
    "describe_skill request",
    "describe_skill response",
    "Domain-skill invocation",
    "Machine-readable error conditions",
    "Client-agent behavior",
    "Composition of consecutive skills",
    "Schema Publication and Packaging",
    "Vendor release artifacts",
    "Agent initialization",
    "Schema Evolution and Compatibility",
    "Security Considerations",
    "Schema trust",
    "Arbitrary retrieval",
    "Resource limits",
    "Schema validation and authorization",
    "Supporting-record integrity and provenance",
    "Injection",
    "Interface integrity and substitution",
    "Operational Considerations",
    "IANA Considerations",
    "References",
    "Skill Interface JSON Schema",
    "Non-Normative End-to-End Example",
    "Contributors",
)

#: Sections whose key words are not requirements: the BCP 14 boilerplate,
#: the references' abstracts and the non-normative example.
NOT_NORMATIVE = {
    "Conventions and Definitions",
    "References",
    "Non-Normative End-to-End Example",
    "Contributors",
}

#: A sentence ends at ``.``/``!``/``?`` or at the end of a flattened figure
#: (``}`` or ``]]>``), before whitespace and a capital letter.
SENTENCE_END = re.compile(r"(?:(?<=[.!?}])|(?<=]]>))\s+(?=[A-Z])")

STATUS = re.compile(r"^(tested|partial \((.+)\)|untested \((.+)\)|not applicable \((.+)\))$")
TEST_ID = re.compile(r"<code>([^<]+?\.py)::([A-Za-z_][A-Za-z0-9_]*)(?:\[[^<]*\])?</code>")
MODULE = re.compile(r"`([^`\s]+)`")


@dataclass(frozen=True)
class Requirement:
    section: str
    sentence: str


@dataclass(frozen=True)
class Row:
    rid: str
    section: str
    quote: str
    modules: tuple[str, ...]
    tests: tuple[tuple[str, str], ...]
    status: str


def normalize(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").split())


def opened_section(line: str, after: int) -> int | None:
    """The index of the section ``line`` opens: the next title in order, if it starts ``line``.

    Titles are matched in document order only, so a term defined in the
    Terminology list ("Schema Reference ...") does not open the section of
    the same name.
    """
    if after + 1 < len(SECTIONS):
        title = SECTIONS[after + 1]
        if line == title or line.startswith(title + " "):
            return after + 1
    return None


def requirements(text: str) -> list[Requirement]:
    """Every sentence of the draft's normative text holding a BCP 14 key word.

    One row per sentence, however many key words it holds; a sentence that
    opens a section is taken without the section title.
    """
    found: list[Requirement] = []
    index = -1
    for line in text.splitlines():
        body = line
        opened = opened_section(line, index)
        if opened is not None:
            index, body = opened, line[len(SECTIONS[opened]) :]
        section = SECTIONS[index] if index >= 0 else ""
        if section in NOT_NORMATIVE:
            continue
        for sentence in SENTENCE_END.split(body.strip()):
            if KEYWORD.search(sentence):
                found.append(Requirement(section, normalize(sentence)))
    return found


def sections_found(text: str) -> list[str]:
    index = -1
    for line in text.splitlines():
        opened = opened_section(line, index)
        if opened is not None:
            index = opened
    return list(SECTIONS[: index + 1])


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split(" | ")]


def rows(markdown: str) -> list[Row]:
    found = []
    for line in markdown.splitlines():
        if not re.match(r"^\| R-\d{3} \|", line):
            continue
        parts = cells(line)
        assert len(parts) == 6, f"{parts[0]}: expected 6 cells, got {len(parts)}: {line}"
        rid, section, quote, implemented, tests, status = parts
        found.append(
            Row(
                rid=rid,
                section=section,
                quote=quote,
                modules=tuple(MODULE.findall(implemented)),
                tests=tuple(TEST_ID.findall(tests)),
                status=status,
            )
        )
    return found


@pytest.fixture(scope="module")
def matrix() -> list[Row]:
    return rows(MATRIX.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def draft() -> list[Requirement]:
    return requirements(DRAFT.read_text(encoding="utf-8"))


def test_the_draft_copy_is_current() -> None:
    assert_copy_current(DRAFT.name)


def test_every_section_title_is_in_the_draft() -> None:
    """A renamed section in a new draft fails here rather than misattributing rows."""
    assert sections_found(DRAFT.read_text(encoding="utf-8")) == list(SECTIONS)


def test_one_row_per_requirement_sentence(matrix: list[Row], draft: list[Requirement]) -> None:
    assert len(draft) > 100  # the rule still finds the draft's requirements
    assert [r.rid for r in matrix] == [f"R-{i:03d}" for i in range(1, len(matrix) + 1)]
    assert len(matrix) == len(draft), (
        f"the draft has {len(draft)} requirement sentences, the matrix {len(matrix)} rows"
    )


def test_each_row_quotes_its_sentence(matrix: list[Row], draft: list[Requirement]) -> None:
    wrong = []
    for row, requirement in zip(matrix, draft, strict=False):
        quote = row.quote
        if not (quote.startswith('"') and quote.endswith('"')):
            wrong.append(f"{row.rid}: quote not in double quotes")
            continue
        quote = normalize(quote[1:-1])
        if quote.endswith("..."):
            prefix = quote[:-3].rstrip()
            ok = requirement.sentence.startswith(prefix) and len(prefix) >= min(
                40, len(requirement.sentence)
            )
        else:
            ok = quote == requirement.sentence
        if not ok:
            wrong.append(f"{row.rid}: {quote!r} is not {requirement.sentence[:80]!r}")
        if row.section != requirement.section:
            wrong.append(
                f"{row.rid}: section {row.section!r}, the draft says {requirement.section!r}"
            )
    assert not wrong, "\n".join(wrong)


def test_every_named_test_exists() -> None:
    """Every ``<code>path::test</code>`` on the page, in the rows or the limits tables."""
    missing = []
    for path, name in TEST_ID.findall(MATRIX.read_text(encoding="utf-8")):
        file = ROOT / path
        if not path.startswith(("tests/", "example_vendor_plugin/tests/")) or not file.is_file():
            missing.append(f"no file {path}")
            continue
        if not re.search(rf"^\s*(?:async\s+)?def {name}\(", file.read_text(), re.M):
            missing.append(f"no test {name} in {path}")
    assert not missing, "\n".join(missing)


def test_every_named_module_exists(matrix: list[Row]) -> None:
    missing = [
        f"{row.rid}: {module}"
        for row in matrix
        for module in row.modules
        if not (ROOT / module.split("::")[0]).exists()
    ]
    assert not missing, "\n".join(missing)


def test_every_row_has_a_status_and_reasons(matrix: list[Row]) -> None:
    wrong = []
    for row in matrix:
        status = STATUS.match(row.status)
        if status is None:
            wrong.append(f"{row.rid}: status {row.status!r}")
        elif status.group(1) == "tested" and not row.tests:
            wrong.append(f"{row.rid}: tested, but no test named")
        elif status.group(1).startswith("partial") and not row.modules:
            wrong.append(f"{row.rid}: partial, but no implementing module named")
    assert not wrong, "\n".join(wrong)


def test_the_summary_counts_the_rows(matrix: list[Row]) -> None:
    """The counts in the page's summary are the counts of its rows."""
    text = MATRIX.read_text(encoding="utf-8")
    for label in ("tested", "partial", "untested", "not applicable"):
        count = sum(1 for row in matrix if re.match(rf"{label}\b", row.status))
        assert f"| {label} | {count} |" in text, f"summary row for {label!r} is not {count}"
    assert f"| total | {len(matrix)} |" in text


def _limits_section() -> str:
    text = MATRIX.read_text(encoding="utf-8")
    start = text.index("## Resource limits, each with a test that exceeds it")
    return text[start : text.index("\n## ", start + 1)]


def test_every_limit_is_mapped_to_a_test_that_exceeds_it() -> None:
    """Every resource limit skillrack has (``Limits`` and the server's limits) is named in
    the limits tables, on a row that names a test: a new limit cannot go unmapped."""
    from skillrack.host.config import ServerSettings
    from skillrack.interface.limits import Limits

    section = _limits_section()
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    names = [f.name for f in dataclasses.fields(Limits)] + [
        f.name
        for f in dataclasses.fields(ServerSettings)
        if f.name.startswith("max_") or f.name.endswith("_timeout")
    ]
    unmapped = [
        name
        for name in names
        if not any(
            re.search(rf"`(?:\[server\] )?{name}`", row) and TEST_ID.search(row) for row in rows
        )
    ]
    assert not unmapped, f"limits without a row naming a test: {unmapped}"
