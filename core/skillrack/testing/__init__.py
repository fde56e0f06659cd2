"""skillrack's pytest plugin for vendors' suites (loaded through the ``pytest11`` entry point).

The fixtures, the pytest hooks and the example checks live in
:mod:`skillrack.testing.plugin`; this module is the plugin pytest loads and the
public face a vendor imports (``from skillrack.testing import assert_skill_examples``).
:mod:`skillrack.testing.serve` starts ``skillrack serve`` as a real process.
"""

from __future__ import annotations

from skillrack.testing.plugin import (
    ExampleProblem,
    assert_skill_examples,
    check_examples,
    pytest_addoption,
    pytest_configure,
    registry_problems,
    registry_under_test,
    skillrack_config,
    skillrack_distributions,
    skillrack_live_agent,
    skillrack_plugin_objects,
    skillrack_registry,
)

__all__ = [
    "ExampleProblem",
    "assert_skill_examples",
    "check_examples",
    "pytest_addoption",
    "pytest_configure",
    "registry_problems",
    "registry_under_test",
    "skillrack_config",
    "skillrack_distributions",
    "skillrack_live_agent",
    "skillrack_plugin_objects",
    "skillrack_registry",
]
