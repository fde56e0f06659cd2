"""Mutants: each removes one behaviour a ``docs/conformance.md`` row claims is tested.

Loaded as a pytest plugin (``-p helpers.mutants``) with ``SKILLRACK_MUTANT``
naming one mutant, it patches skillrack before any test runs, so the row's
tests run against code without that behaviour.  ``tests/test_conformance_mutations.py``
runs each row's named tests under each of its mutants and requires a failure:
a row is ``tested`` only if its tests notice the behaviour gone.  Patches go
through :class:`pytest.MonkeyPatch` on the module attribute the caller looks
up at call time, so nothing is imported differently from a normal run.

With ``SKILLRACK_MUTANT_PLAN`` naming a JSON file instead (``{"runs": [{"mutant":
name or "", "tests": [named tests], "result": path}]}``), one pytest process
collects every run's tests once and then forks a child per run, which applies
its mutant (none for ``""``, the control), runs its tests and writes the node
ids it ran and those that failed to ``result``.  Each child starts from the parent's state
after collection, untouched by any other mutant; one collection instead of one
pytest process per mutant saved most of these checks' CPU time.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from skillrack.interface import ecma_regex, inline, rfc_formats
from skillrack.interface.schemaerror import refuse
from skillrack.interface.schemaref import SchemaReference
from skillrack.serve.execution import approval_gate, executor

ENVIRONMENT = "SKILLRACK_MUTANT"
#: Names the JSON plan of forked runs (see the module's docstring).
PLAN_ENVIRONMENT = "SKILLRACK_MUTANT_PLAN"
MEMBERS = ("schema_uri", "version", "dialect", "digest")


def _identity_without(member: str) -> Callable[[pytest.MonkeyPatch], None]:
    def apply(patch: pytest.MonkeyPatch) -> None:
        def identity(self: SchemaReference) -> tuple[str, ...]:
            return tuple(getattr(self, m) for m in MEMBERS if m != member)

        patch.setattr(SchemaReference, "identity", identity)

    return apply


def _targets_unchecked(patch: pytest.MonkeyPatch) -> None:
    patch.setattr(inline, "check_targets_identified", lambda *args, **kwargs: None)


def _every_relative_id_refused(patch: pytest.MonkeyPatch) -> None:
    """The rule before issue 33: any embedded relative ``$id``, targeted or not."""

    def check(resources: Any, references: Any, tick: Any = None) -> None:
        for pointer, value in resources.relative.items():
            raise refuse("embedded_resource_id", pointer + "/$id", f"{value!r} is relative")

    patch.setattr(inline, "check_targets_identified", check)


def _no_property_escapes(patch: pytest.MonkeyPatch) -> None:
    """``\\p{..}`` unknown to the translator, as before issue 33."""
    patch.setattr(ecma_regex, "property_ranges", lambda name: None)


def _format_regex_unchecked(patch: pytest.MonkeyPatch) -> None:
    patch.setattr(rfc_formats, "check_pattern", lambda value: None)


def _approval_only_for_execute(patch: pytest.MonkeyPatch) -> None:
    """Approvers asked only when the skill advertises ``execute`` (the mode-dependent gate)."""
    real = approval_gate.seek_approval

    async def seek(manager: Any, store: Any, invocation: Any, *args: Any, **kwargs: Any) -> Any:
        if invocation.skill.skill.authority.default_mode != "execute":
            return None
        return await real(manager, store, invocation, *args, **kwargs)

    patch.setattr(executor, "seek_approval", seek)


def _no_approval_step(patch: pytest.MonkeyPatch) -> None:
    async def seek(*args: Any, **kwargs: Any) -> None:
        return None

    patch.setattr(executor, "seek_approval", seek)


def _no_operator_before_side_effect(patch: pytest.MonkeyPatch) -> None:
    patch.setattr(approval_gate, "needs_approval", lambda skill, operation: False)


#: Mutant name -> the patch that removes its behaviour.
MUTANTS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    **{f"reference-compared-without-{m}": _identity_without(m) for m in MEMBERS},
    "relative-id-targets-unchecked": _targets_unchecked,
    "every-relative-id-refused": _every_relative_id_refused,
    "no-property-escapes": _no_property_escapes,
    "format-regex-unchecked": _format_regex_unchecked,
    "approval-only-for-execute": _approval_only_for_execute,
    "no-approval-step": _no_approval_step,
    "no-operator-before-side-effect": _no_operator_before_side_effect,
}

_patch = pytest.MonkeyPatch()


def pytest_configure(config: pytest.Config) -> None:
    name = os.environ.get(ENVIRONMENT, "")
    if name:
        MUTANTS[name](_patch)


def pytest_report_header(config: pytest.Config) -> str:
    if os.environ.get(PLAN_ENVIRONMENT):
        return "skillrack mutants: one forked run each"
    return f"skillrack mutant: {os.environ.get(ENVIRONMENT) or 'none'}"


class _Failures:
    """The node ids of the tests that failed or errored, in any phase."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and report.nodeid not in self.ids:
            self.ids.append(report.nodeid)


def _run_forked(session: pytest.Session, mutant: str, tests: list[str]) -> dict[str, Any]:
    """In a forked child: apply ``mutant``, run ``tests`` (teardown after the last), failures.

    A named test (``path::name``) stands for each of its collected parameters.
    """
    if mutant:
        MUTANTS[mutant](_patch)
    named = set(tests)  # a named test stands for all its parameters
    items = [item for item in session.items if item.nodeid.split("[")[0] in named]
    failures = _Failures()
    session.config.pluginmanager.register(failures, "skillrack-mutant-failures")
    for index, item in enumerate(items):
        following = items[index + 1] if index + 1 < len(items) else None
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=following)
    return {"ran": [item.nodeid for item in items], "failed": failures.ids}


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """With a plan: one forked child per run, each from the state after collection."""
    plan = os.environ.get(PLAN_ENVIRONMENT)
    if not plan:
        return None
    for run in json.loads(Path(plan).read_text(encoding="utf-8"))["runs"]:
        sys.stdout.flush()
        sys.stderr.flush()
        child = os.fork()
        if child == 0:
            status = 0
            try:
                outcome = _run_forked(session, run["mutant"], run["tests"])
                Path(run["result"]).write_text(json.dumps(outcome), encoding="utf-8")
            except BaseException:  # the parent finds no result file and says so
                traceback.print_exc()
                status = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        os.waitpid(child, 0)
    return True


def pytest_unconfigure(config: pytest.Config) -> None:
    _patch.undo()
