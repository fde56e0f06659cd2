"""The names of the pytest markers ``skillrack.testing`` registers, in a module of their own.

The plugin (:mod:`skillrack.testing.plugin`) registers and reads them, and so do
its async fixtures (:mod:`skillrack.testing._async`, imported by the plugin
only when pytest-asyncio is active); keeping the names here keeps those two
modules from importing each other (tests/test_layout.py refuses import cycles).
"""

from __future__ import annotations

#: ``@pytest.mark.skillrack_server``: serve ``skillrack_agent`` with uvicorn instead of in-process.
SERVER_MARKER = "skillrack_server"
#: ``@pytest.mark.skillrack_plugins(*distributions)``: the distributions a test loads.
PLUGINS_MARKER = "skillrack_plugins"
