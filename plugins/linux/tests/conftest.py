"""The lab every test here runs against, built once and always torn down.

Under CI (``CI=true``) a machine without root, iproute2 or FRR fails the run
with one line instead of skipping: ``.ci/run`` installs them, and a plugin
whose tests silently skip is a plugin nobody tested.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from lab import Lab, missing

from skillrack import Decision, hookimpl
from skillrack_linux import LinuxPlugin
from skillrack_linux.settings import Device, Settings

ROUTERS = ("r1", "r2", "r3")


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    problem = missing()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"skillrack-linux: {problem}; under CI these tests must run", False)
        pytest.skip(f"skillrack-linux: {problem}")
    lab = Lab(f"sl{os.getpid() % 100000}-")
    try:
        built = lab.script("up")
        if built.returncode != 0:
            pytest.fail(f"lab.sh up failed: {built.stderr.strip()}", False)
        yield lab
    finally:
        lab.script("down")


@pytest.fixture(scope="session")
def settings(lab: Lab) -> Settings:
    return Settings({r: Device(r, lab.ns(r), frr=True) for r in ROUTERS})


class Approver:
    """Approves every call (an operator's grant, without the wait)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    @hookimpl
    def approve_invocation(self, request: object) -> Decision:
        self.asked.append(getattr(request, "skill_id", "?"))
        return Decision.allow("tests")


@pytest.fixture
def approver() -> Approver:
    return Approver()


@pytest.fixture
def plugin(settings: Settings) -> LinuxPlugin:
    return LinuxPlugin(settings)


@pytest.fixture
def skillrack_plugin_objects(plugin: LinuxPlugin, approver: Approver) -> list[tuple[str, object]]:
    return [("linux", plugin), ("approver", approver)]
