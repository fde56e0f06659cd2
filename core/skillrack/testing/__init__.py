"""skillrack's pytest plugin for vendors' suites (loaded through the ``pytest11`` entry point).

The fixtures, the pytest hooks and the example checks live in
:mod:`skillrack.testing.plugin`; this module is the plugin pytest loads and the
public face a vendor imports (``from skillrack.testing import assert_skill_examples``).
:mod:`skillrack.testing.serve` starts ``skillrack serve`` as a real process.

A vendor's tests import from here and from ``skillrack``, nothing else
(tests/test_public_api.py pins the list).  Besides the fixtures' building blocks:

* checking a skill without an agent: ``assemble`` (a ``Skill`` into the
  ``VerifiedInterface`` the host would serve, or ``InterfaceError``),
  ``compile_inline_schema`` (validate an instance as the host does),
  ``digest_of`` (the interface digest of a document), ``EXTENSION_URI``;
* the fixtures' types: ``Agent`` (``skillrack_agent``), ``AgentClient``
  (``skillrack_client``);
* ``skillrack serve`` as a real process and raw A2A requests to it:
  ``subprocess_agent``, ``skillrack_command``, ``CARD_PATH``, ``message``,
  ``skill_request``, ``send``, ``invoke``, ``rpc``, ``task_of``,
  ``wait_for_state``, ``stream``, ``error_of``;
* the release check ``skillrack plugin check|bundle`` runs: ``check_release``,
  ``ReleaseReport``, ``write_bundle``.

Those are imported on first use (``__getattr__`` below): this module is loaded
by every pytest session, and must not import a2a-sdk, starlette or jsonschema.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from skillrack.interface.canonical import digest_of
    from skillrack.interface.document import InterfaceError, VerifiedInterface, assemble
    from skillrack.interface.inline import compile_inline_schema
    from skillrack.ops.inprocess import Agent, AgentClient
    from skillrack.protocol.messages import EXTENSION_URI
    from skillrack.release.bundle import write_bundle
    from skillrack.release.check import ReleaseReport, check_release
    from skillrack.testing.serve import (
        CARD_PATH,
        error_of,
        invoke,
        message,
        rpc,
        send,
        skill_request,
        skillrack_command,
        stream,
        subprocess_agent,
        task_of,
        wait_for_state,
    )

#: Names imported on first use: name -> the module that defines it.
_ON_FIRST_USE = {
    "Agent": "skillrack.ops.inprocess",
    "AgentClient": "skillrack.ops.inprocess",
    "CARD_PATH": "skillrack.testing.serve",
    "EXTENSION_URI": "skillrack.protocol.messages",
    "InterfaceError": "skillrack.interface.document",
    "ReleaseReport": "skillrack.release.check",
    "VerifiedInterface": "skillrack.interface.document",
    "assemble": "skillrack.interface.document",
    "check_release": "skillrack.release.check",
    "compile_inline_schema": "skillrack.interface.inline",
    "digest_of": "skillrack.interface.canonical",
    "error_of": "skillrack.testing.serve",
    "invoke": "skillrack.testing.serve",
    "message": "skillrack.testing.serve",
    "rpc": "skillrack.testing.serve",
    "send": "skillrack.testing.serve",
    "skill_request": "skillrack.testing.serve",
    "skillrack_command": "skillrack.testing.serve",
    "stream": "skillrack.testing.serve",
    "subprocess_agent": "skillrack.testing.serve",
    "task_of": "skillrack.testing.serve",
    "wait_for_state": "skillrack.testing.serve",
    "write_bundle": "skillrack.release.bundle",
}

__all__ = [
    "Agent",
    "AgentClient",
    "CARD_PATH",
    "EXTENSION_URI",
    "ExampleProblem",
    "InterfaceError",
    "ReleaseReport",
    "VerifiedInterface",
    "assemble",
    "assert_skill_examples",
    "check_examples",
    "check_release",
    "compile_inline_schema",
    "digest_of",
    "error_of",
    "invoke",
    "message",
    "pytest_addoption",
    "pytest_configure",
    "registry_problems",
    "registry_under_test",
    "rpc",
    "send",
    "skill_request",
    "skillrack_command",
    "skillrack_config",
    "skillrack_distributions",
    "skillrack_live_agent",
    "skillrack_plugin_objects",
    "skillrack_registry",
    "stream",
    "subprocess_agent",
    "task_of",
    "wait_for_state",
    "write_bundle",
]


def __getattr__(name: str) -> Any:
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_ON_FIRST_USE[name]), name)
    globals()[name] = value
    return value
