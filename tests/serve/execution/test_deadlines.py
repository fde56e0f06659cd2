"""Handler deadlines, and whose concurrency slots a call counts against (issue 13, item 1).

A handler that never returns fails its task at its deadline (``FAILED`` with
``resource_limit_exceeded``); one that ignores cancellation still holds its
caller's slot until it really ends (issue 28), counted by
``skillrack_handlers_overdue``.  Slots belong
to an authenticated identity of a tenant, or to the client address of an
anonymous caller, so one caller cannot lock out another.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, simple_skill
from helpers.header_callers import HeaderCallers, caller_header

from skillrack import Caller, Interaction
from skillrack.host.config import Config, ServerSettings
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.interface.document import InterfaceError, assemble
from skillrack.serve.execution.concurrency import slot_key
from skillrack.testing.serve import error_of, get_task, invoke, rpc, skill_request

#: Lets the stubborn handler end, so that no test leaves it running in the server thread.
RELEASED = threading.Event()
HOLD = {"type": "object", "properties": {"seconds": {"type": "number", "maximum": 30}}}


async def stubborn(arguments: Any, context: Any) -> Any:
    """Never returns on its own and swallows every cancellation: the worst a handler can do."""
    while not RELEASED.is_set():
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            continue
    return {"finished": "late"}


async def hold(arguments: Any, context: Any) -> Any:
    await asyncio.sleep(arguments.get("seconds", 5))
    return {}


async def quick(arguments: Any, context: Any) -> Any:
    return {"ok": True}


def _registry(*extra: tuple[str, object]) -> Registry:
    skills = SkillsPlugin(
        simple_skill("stubborn", handler=stubborn, timeout=1),
        simple_skill(
            "hold", input_schema=HOLD, handler=hold, interaction=Interaction(cancellable=True)
        ),
        simple_skill("quick", handler=quick),
    )
    plugins = [("tests", skills), ("allow", AllowAll()), *extra]
    return build_registry(load_plugins(use_entry_points=False, extra=plugins))


def _config(tmp: Path, **server: Any) -> Config:
    return Config(base_dir=tmp, server=ServerSettings(store="memory", **server))


@pytest.fixture(scope="module")
def anonymous(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Registry]]:
    """An agent without authentication; each caller address may run one task at a time."""
    registry = _registry()
    config = _config(tmp_path_factory.mktemp("anon"), max_concurrent_tasks=1, handler_timeout=1.5)
    RELEASED.clear()
    try:
        with running_agent(registry, config) as url:
            yield url, registry
    finally:
        RELEASED.set()


@pytest.fixture(scope="module")
def authenticated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Registry]]:
    """An agent whose callers name themselves (tenant/identity); one task at a time each."""
    registry = _registry(("callers", HeaderCallers()))
    config = _config(tmp_path_factory.mktemp("auth"), max_concurrent_tasks=1)
    with running_agent(registry, config) as url:
        yield url, registry


def request(registry: Registry, skill_id: str, arguments: Any = None) -> dict[str, Any]:
    skill = registry.skills[skill_id]
    return skill_request(skill_id, arguments or {}, "1.0", skill.interface_digest)


def start(url: str, data: Any, **kwargs: Any) -> Any:
    """SendMessage with returnImmediately: the task, still running."""
    return invoke(url, data, configuration={"returnImmediately": True}, **kwargs)


def cancel(url: str, task_id: str, **kwargs: Any) -> None:
    rpc(url, "CancelTask", {"id": task_id}, **kwargs)


def overdue(url: str) -> float:
    """``skillrack_handlers_overdue{skill="stubborn"}`` as the agent's /metrics says now."""
    text = httpx.get(url + "/metrics", timeout=10).text
    found = re.search(r'^skillrack_handlers_overdue\{skill="stubborn"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_hung_handler_fails_at_its_deadline_and_holds_its_slot_until_it_ends(
    anonymous: tuple[str, Registry],
) -> None:
    """Issue 28: the task fails at the deadline, but a handler ignoring cancellation still
    counts against its caller (one slot here) until it really ends, and the metric says so."""
    url, registry = anonymous
    try:
        began = time.monotonic()
        task = invoke(url, request(registry, "stubborn"))
        took = time.monotonic() - began
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        error = error_of(task)
        assert error["code"] == "resource_limit_exceeded"
        assert error["message"] == "skill 'stubborn' did not finish within its deadline of 1 s"
        assert took < 5  # at the deadline, not when the handler gives up
        assert overdue(url) == 1
        # The handler still runs: the caller's only slot is still taken.
        refused = invoke(url, request(registry, "quick"))
        assert refused["status"]["state"] == "TASK_STATE_REJECTED"
        assert error_of(refused)["code"] == "resource_limit_exceeded"
    finally:
        RELEASED.set()  # the handler finally returns
    deadline = time.monotonic() + 10
    while overdue(url) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert overdue(url) == 0
    for _ in range(100):  # the slot is given back just after the handler ended
        again = invoke(url, request(registry, "quick"))
        if again["status"]["state"] == "TASK_STATE_COMPLETED":
            break
        time.sleep(0.05)
    assert again["status"]["state"] == "TASK_STATE_COMPLETED"
    # Its late result changes nothing.
    settled = get_task(url, task["id"])
    assert settled["status"]["state"] == "TASK_STATE_FAILED"
    assert not settled.get("artifacts")


def test_host_default_deadline_applies_to_skills_without_a_timeout(
    anonymous: tuple[str, Registry],
) -> None:
    url, registry = anonymous
    task = invoke(url, request(registry, "hold", {"seconds": 30}))
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    error = error_of(task)
    assert error["code"] == "resource_limit_exceeded"
    assert "'hold'" in error["message"] and "1.5 s" in error["message"]


def test_anonymous_callers_from_different_addresses_do_not_share_slots(
    anonymous: tuple[str, Registry],
) -> None:
    url, registry = anonymous
    other = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"))
    first = start(url, request(registry, "hold", {"seconds": 1}))
    try:
        assert first["status"]["state"] in {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}
        same = invoke(url, request(registry, "quick"))
        assert same["status"]["state"] == "TASK_STATE_REJECTED"
        assert error_of(same)["code"] == "resource_limit_exceeded"
        elsewhere = invoke(url, request(registry, "quick"), client=other)
        assert elsewhere["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        cancel(url, first["id"])
        other.close()


def test_identities_do_not_share_slots(authenticated: tuple[str, Registry]) -> None:
    url, registry = authenticated
    alice = caller_header("t1", "alice")
    first = start(url, request(registry, "hold", {"seconds": 5}), headers=alice)
    try:
        assert first["status"]["state"] in {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}
        refused = invoke(url, request(registry, "quick"), headers=alice)
        assert refused["status"]["state"] == "TASK_STATE_REJECTED"
        assert error_of(refused)["code"] == "resource_limit_exceeded"
        for other in (caller_header("t1", "bob"), caller_header("t2", "alice")):
            task = invoke(url, request(registry, "quick"), headers=other)
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", other
    finally:
        cancel(url, first["id"], headers=alice)


def test_slot_keys() -> None:
    anonymous = Caller(identity="anonymous")
    assert slot_key(anonymous, "127.0.0.1") != slot_key(anonymous, "127.0.0.2")
    alice = Caller(identity="alice", tenant="t1", authenticated=True)
    assert slot_key(alice, "127.0.0.1") == slot_key(alice, "10.0.0.9")
    assert slot_key(alice, None) != slot_key(Caller("alice", "t2", authenticated=True), None)
    assert slot_key(alice, None) != slot_key(Caller("bob", "t1", authenticated=True), None)


@pytest.mark.parametrize("timeout", [0, -1, math.inf, math.nan, True, "5"])
def test_a_timeout_that_is_no_deadline_refuses_the_skill(timeout: Any) -> None:
    with pytest.raises(InterfaceError) as refused:
        assemble(simple_skill("bad_deadline", timeout=timeout))
    assert refused.value.rule == "timeout"
    assert "timeout" in refused.value.message
