"""Rows of ``docs/conformance.md`` marked ``tested`` whose tests notice the behaviour gone.

A row may say ``tested`` only when its named tests "fail without it".  For
the rows an audit found passing with the behaviour removed (issue 33), this
checks exactly that: each mutant of :mod:`helpers.mutants` removes one
behaviour, the row's named tests (skillrack's own; the example vendor's run
in its own suite) run in a fresh pytest process with the mutant loaded, and
at least one of them must fail.  A row is listed here with every mutant of
its behaviour; adding a mutant no test catches makes this test fail, which
is the point: either write the test or mark the row ``partial``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from helpers.mutants import ENVIRONMENT, MEMBERS, MUTANTS
from test_conformance_matrix import MATRIX, ROOT, rows

#: Row -> the mutants each of which its named tests must catch.
ROW_MUTANTS: dict[str, tuple[str, ...]] = {
    "R-015": ("no-property-escapes", "format-regex-unchecked"),
    "R-011": ("relative-id-targets-unchecked", "every-relative-id-refused"),
    "R-112": tuple(f"reference-compared-without-{m}" for m in MEMBERS),
    "R-114": tuple(f"reference-compared-without-{m}" for m in MEMBERS),
    "R-027": ("approval-only-for-execute", "no-approval-step"),
    "R-032": ("no-approval-step",),
    "R-034": ("no-operator-before-side-effect", "no-approval-step"),
}

#: Mutant -> the rows whose named tests must catch it. One pytest process per mutant runs the
#: named tests of all its rows together (``no-approval-step`` is caught by three rows), and
#: one control process runs every row's tests unmutated: 12 processes, not one per row and
#: mutant (24), which halved this module's share of the suite's CPU time.
ROWS_OF: dict[str, tuple[str, ...]] = {
    mutant: tuple(sorted(row for row, mutants in ROW_MUTANTS.items() if mutant in mutants))
    for mutant in sorted({m for mutants in ROW_MUTANTS.values() for m in mutants})
}


def _named_tests(rid: str) -> list[str]:
    [row] = [r for r in rows(MATRIX.read_text(encoding="utf-8")) if r.rid == rid]
    assert row.status == "tested", f"{rid} is {row.status}: no mutant needed"
    return [f"{path}::{name}" for path, name in row.tests if path.startswith("tests/")]


def _union(rids: tuple[str, ...]) -> list[str]:
    return list(dict.fromkeys(test for rid in rids for test in _named_tests(rid)))


def test_every_mutant_is_used_and_exists() -> None:
    assert set(ROWS_OF) == set(MUTANTS)


def _run(
    tests: list[str], mutant: str, report: Path, *, first_failure: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``tests`` in a fresh pytest process under ``mutant`` ("" for none).

    ``first_failure`` stops at the first failing test (``-x``): enough when one row is asked.
    """
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0"]
    command += ["-x"] if first_failure else []
    command += ["-p", "helpers.mutants", "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    command += [f"--junitxml={report}", "-o", "junit_family=xunit2"]
    return subprocess.run(
        [*command, *tests],
        cwd=ROOT,
        env={**os.environ, ENVIRONMENT: mutant},
        capture_output=True,
        text=True,
        timeout=600,
    )


def _dotted(test: str) -> str:
    """``tests/a/test_b.py::Class::name[param]`` in JUnit XML: ``tests.a.test_b.Class.name``."""
    path, _, rest = test.split("[")[0].partition("::")
    return ".".join([path.removesuffix(".py").replace("/", "."), *rest.split("::")])


def _failed(report: Path) -> set[str]:
    """The tests (dotted, parameters dropped) that failed or errored in a JUnit XML report."""
    failed: set[str] = set()
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(f"{case.get('classname')}.{case.get('name', '').split('[')[0]}")
    return failed


@pytest.mark.slow
def test_the_rows_tests_pass_unmutated(tmp_path: Path) -> None:
    """The control: in the same kind of process, without a mutant, every named test passes."""
    done = _run(_union(tuple(ROW_MUTANTS)), "", tmp_path / "control.xml")
    assert "skillrack mutant: none" in done.stdout, done.stdout[-2000:] + done.stderr
    assert done.returncode == 0, done.stdout[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(ROWS_OF))
def test_a_tested_row_fails_without_its_behaviour(mutant: str, tmp_path: Path) -> None:
    """Under ``mutant``, each of its rows has at least one named test that fails."""
    rids = ROWS_OF[mutant]
    for rid in rids:
        assert _named_tests(rid), f"{rid} names no test of skillrack's own"
    report = tmp_path / "report.xml"
    done = _run(_union(rids), mutant, report, first_failure=len(rids) == 1)
    assert f"skillrack mutant: {mutant}" in done.stdout, done.stdout[-2000:] + done.stderr
    # 1: tests ran and some failed (2-5 would be an interrupted run or a usage error).
    assert done.returncode == 1, f"{rids}: every named test passed without the behaviour ({mutant})"
    failed = _failed(report)
    for rid in rids:
        named = {_dotted(test) for test in _named_tests(rid)}
        assert named & failed, f"{rid}: its named tests all passed without the behaviour ({mutant})"
