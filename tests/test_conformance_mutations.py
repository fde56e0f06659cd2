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

CASES = [(row, mutant) for row, mutants in ROW_MUTANTS.items() for mutant in mutants]


def _named_tests(rid: str) -> list[str]:
    [row] = [r for r in rows(MATRIX.read_text(encoding="utf-8")) if r.rid == rid]
    assert row.status == "tested", f"{rid} is {row.status}: no mutant needed"
    return [f"{path}::{name}" for path, name in row.tests if path.startswith("tests/")]


def test_every_mutant_is_used_and_exists() -> None:
    used = {m for _, m in CASES}
    assert used == set(MUTANTS)


def _run(tests: list[str], mutant: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-x"]
    command += ["-p", "helpers.mutants", "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    return subprocess.run(
        [*command, *tests],
        cwd=ROOT,
        env={**os.environ, ENVIRONMENT: mutant},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
@pytest.mark.parametrize("rid", sorted(ROW_MUTANTS))
def test_the_rows_tests_pass_unmutated(rid: str) -> None:
    """The control: in the same kind of process, without a mutant, every named test passes."""
    done = _run(_named_tests(rid), "")
    assert "skillrack mutant: none" in done.stdout, done.stdout[-2000:] + done.stderr
    assert done.returncode == 0, done.stdout[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize(("rid", "mutant"), CASES, ids=[f"{r}-{m}" for r, m in CASES])
def test_a_tested_row_fails_without_its_behaviour(rid: str, mutant: str) -> None:
    tests = _named_tests(rid)
    assert tests, f"{rid} names no test of skillrack's own"
    done = _run(tests, mutant)
    assert f"skillrack mutant: {mutant}" in done.stdout, done.stdout[-2000:] + done.stderr
    # 1: tests ran and some failed (2-5 would be an interrupted run or a usage error).
    assert done.returncode == 1, f"{rid}: every named test passed without the behaviour ({mutant})"
