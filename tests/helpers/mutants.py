"""Mutants: each removes one behaviour a ``docs/conformance.md`` row claims is tested.

Loaded as a pytest plugin (``-p helpers.mutants``) with ``SKILLRACK_MUTANT``
naming one mutant, it patches skillrack before any test runs, so the row's
tests run against code without that behaviour.  ``tests/test_conformance_mutations.py``
runs each row's named tests under each of its mutants and requires a failure:
a row is ``tested`` only if its tests notice the behaviour gone.  Patches go
through :class:`pytest.MonkeyPatch` on the module attribute the caller looks
up at call time, so nothing is imported differently from a normal run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from skillrack.interface import ecma_regex, inline, rfc_formats
from skillrack.interface.schemaerror import refuse
from skillrack.interface.schemaref import SchemaReference
from skillrack.serve.execution import approval_gate, executor

ENVIRONMENT = "SKILLRACK_MUTANT"
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
    return f"skillrack mutant: {os.environ.get(ENVIRONMENT) or 'none'}"


def pytest_unconfigure(config: pytest.Config) -> None:
    _patch.undo()
