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

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.mutants import MEMBERS, MUTANTS, PLAN_ENVIRONMENT
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

#: Mutant -> the rows whose named tests must catch it. One forked run per mutant runs the
#: named tests of all its rows together (``no-approval-step`` is caught by three rows), and
#: one control run runs every row's tests unmutated.
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


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[str]] | str]:
    """Mutant ("" for the control) -> the node ids it ran and failed, or why it did not run.

    One pytest process collects every row's named tests once and forks a child per
    mutant (:mod:`helpers.mutants`): 13 runs, one collection.
    """
    work = tmp_path_factory.mktemp("mutants")
    union = _union(tuple(ROW_MUTANTS))
    runs = [("", union), *((mutant, _union(rids)) for mutant, rids in ROWS_OF.items())]
    plan = {
        "runs": [
            {"mutant": mutant, "tests": tests, "result": str(work / f"{i}.json")}
            for i, (mutant, tests) in enumerate(runs)
        ]
    }
    (work / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0"]
    command += ["-p", "helpers.mutants", "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    done = subprocess.run(
        [*command, *union],
        cwd=ROOT,
        env={**os.environ, PLAN_ENVIRONMENT: str(work / "plan.json")},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert "skillrack mutants: one forked run each" in done.stdout, done.stdout[-2000:]
    found: dict[str, dict[str, list[str]] | str] = {}
    for run in plan["runs"]:
        result = Path(run["result"])
        found[run["mutant"]] = (
            json.loads(result.read_text(encoding="utf-8"))
            if result.is_file()
            else f"the run of {run['mutant'] or 'the control'} left no result:\n"
            + done.stdout[-3000:]
            + done.stderr[-2000:]
        )
    return found


def _failed_under(verdicts: dict[str, dict[str, list[str]] | str], mutant: str) -> set[str]:
    """The named tests (parameters dropped) that failed under ``mutant``; each one ran."""
    outcome = verdicts[mutant]
    assert isinstance(outcome, dict), outcome
    ran = {test.split("[")[0] for test in outcome["ran"]}
    named = _union(ROWS_OF[mutant]) if mutant else _union(tuple(ROW_MUTANTS))
    assert ran == set(named), f"named tests not collected: {set(named) - ran}"
    return {test.split("[")[0] for test in outcome["failed"]}


@pytest.mark.slow
def test_the_rows_tests_pass_unmutated(
    verdicts: dict[str, dict[str, list[str]] | str],
) -> None:
    """The control: in the same kind of process, without a mutant, every named test passes."""
    assert _failed_under(verdicts, "") == set()


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(ROWS_OF))
def test_a_tested_row_fails_without_its_behaviour(
    mutant: str, verdicts: dict[str, dict[str, list[str]] | str]
) -> None:
    """Under ``mutant``, each of its rows has at least one named test that fails."""
    rids = ROWS_OF[mutant]
    for rid in rids:
        assert _named_tests(rid), f"{rid} names no test of skillrack's own"
    failed = _failed_under(verdicts, mutant)
    for rid in rids:
        named = set(_named_tests(rid))
        assert named & failed, f"{rid}: its named tests all passed without the behaviour ({mutant})"
