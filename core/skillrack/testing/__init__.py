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

Those are imported on first use (``__getattr__`` below), and ``dir()`` lists
them before they are (``__dir__``): this module is loaded by every pytest
session, and must not import a2a-sdk, starlette or jsonschema.
``__all__`` is derived (the plugin's names imported here, and the lazy table);
the list in tests/test_public_api.py is kept by hand on purpose: it is the
contract.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from skillrack.testing.plugin import ExampleProblem as ExampleProblem
from skillrack.testing.plugin import assert_skill_examples as assert_skill_examples
from skillrack.testing.plugin import check_examples as check_examples
from skillrack.testing.plugin import pytest_addoption as pytest_addoption
from skillrack.testing.plugin import pytest_configure as pytest_configure
from skillrack.testing.plugin import registry_problems as registry_problems
from skillrack.testing.plugin import registry_under_test as registry_under_test
from skillrack.testing.plugin import skillrack_config as skillrack_config
from skillrack.testing.plugin import skillrack_distributions as skillrack_distributions
from skillrack.testing.plugin import skillrack_live_agent as skillrack_live_agent
from skillrack.testing.plugin import skillrack_plugin_objects as skillrack_plugin_objects
from skillrack.testing.plugin import skillrack_plugin_settings as skillrack_plugin_settings
from skillrack.testing.plugin import skillrack_registry as skillrack_registry

if TYPE_CHECKING:  # the same names as the table below, for type checkers
    from skillrack.interface.canonical import digest_of as digest_of
    from skillrack.interface.document import InterfaceError as InterfaceError
    from skillrack.interface.document import VerifiedInterface as VerifiedInterface
    from skillrack.interface.document import assemble as assemble
    from skillrack.interface.inline import compile_inline_schema as compile_inline_schema
    from skillrack.ops.inprocess import Agent as Agent
    from skillrack.ops.inprocess import AgentClient as AgentClient
    from skillrack.protocol.messages import EXTENSION_URI as EXTENSION_URI
    from skillrack.release.bundle import write_bundle as write_bundle
    from skillrack.release.check import ReleaseReport as ReleaseReport
    from skillrack.release.check import check_release as check_release
    from skillrack.testing.serve import CARD_PATH as CARD_PATH
    from skillrack.testing.serve import error_of as error_of
    from skillrack.testing.serve import invoke as invoke
    from skillrack.testing.serve import message as message
    from skillrack.testing.serve import rpc as rpc
    from skillrack.testing.serve import send as send
    from skillrack.testing.serve import skill_request as skill_request
    from skillrack.testing.serve import skillrack_command as skillrack_command
    from skillrack.testing.serve import stream as stream
    from skillrack.testing.serve import subprocess_agent as subprocess_agent
    from skillrack.testing.serve import task_of as task_of
    from skillrack.testing.serve import wait_for_state as wait_for_state

#: Where the names above come from: pytest finds its hooks and fixtures in this module.
_PLUGIN = "skillrack.testing.plugin"

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

#: The plugin's names imported above, and the table's (tests/test_public_api.py pins them).
__all__ = sorted(
    {name for name, value in globals().items() if getattr(value, "__module__", "") == _PLUGIN}
    | _ON_FIRST_USE.keys()
)


def __getattr__(name: str) -> Any:
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_ON_FIRST_USE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Every public name, loaded or not, so that completion and ``help()`` see them all."""
    return sorted(set(globals()) | set(__all__))
