"""``/-/hops`` is scoped to the caller's tenant and needs the operator role (issue 13, item 3).

Two served agents: ``relay`` on the upstream agent delegates to ``echo`` on
the downstream one, so every relay call records a real hop.  With
authentication configured, an operator of tenant A sees A's hops only, an
operator of tenant B sees none of them, and a caller without the operator
role gets 403.  Without authentication the endpoint stays what it was on a
development agent: every hop, for loopback clients only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.header_callers import HeaderCallers, caller_header
from helpers.served_process import digests
from starlette.requests import Request

from skillrack.host.config import Config, ServerSettings
from skillrack.serve.bindings.operator_endpoints import (
    HOPS_PATH,
    LIVEZ_PATH,
    OPERATOR_PREFIX,
    READYZ_PATH,
)
from skillrack.serve.console import CONSOLE_PATH
from skillrack.serve.scope import CALLER_KEY
from skillrack.serve.security.caller import Caller
from skillrack.serve.security.operator_access import OperatorGuard
from skillrack.serve.server import build_server
from skillrack.testing.serve import invoke, skill_request


async def echo(arguments: Any, context: Any) -> Any:
    return {"echo": True}


async def relay(arguments: Any, context: Any) -> Any:
    await context.delegate("downstream", "echo", {})
    return {"relayed": True}


@pytest.fixture(scope="module")
def downstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    registry = registry_of(
        [("tests", SkillsPlugin(simple_skill("echo", handler=echo))), ("allow", AllowAll())]
    )
    config = Config(base_dir=tmp_path_factory.mktemp("down"), server=ServerSettings(store="memory"))
    with running_agent(registry, config) as url:
        yield url


def _upstream(downstream: str, base_dir: Path, *auth: tuple[str, object]) -> Iterator[str]:
    plugins = [("tests", SkillsPlugin(simple_skill("relay", handler=relay))), ("allow", AllowAll())]
    registry = registry_of([*plugins, *auth])
    config = Config(
        base_dir=base_dir,
        server=ServerSettings(store="memory"),
        peers={"downstream": downstream},
    )
    with running_agent(registry, config) as url:
        yield url


@pytest.fixture(scope="module")
def upstream(downstream: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The relaying agent, with authentication: callers name their tenant and roles."""
    yield from _upstream(downstream, tmp_path_factory.mktemp("up"), ("callers", HeaderCallers()))


@pytest.fixture(scope="module")
def development(downstream: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The relaying agent without any authentication plugin."""
    yield from _upstream(downstream, tmp_path_factory.mktemp("dev"))


def relay_once(url: str, headers: dict[str, str] | None = None) -> str:
    """Call ``relay`` (one hop recorded); the upstream task id."""
    digest = digests(url)["relay"]
    task = invoke(url, skill_request("relay", {}, "1.0", digest), headers=headers)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    return str(task["id"])


def hops(url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.get(url + HOPS_PATH, headers=headers, timeout=10)


def test_operators_see_only_their_own_tenants_hops(upstream: str) -> None:
    alice_task = relay_once(upstream, caller_header("tenant-a", "alice"))
    bob_task = relay_once(upstream, caller_header("tenant-b", "bob"))

    seen_by_a = hops(upstream, caller_header("tenant-a", "ops-a", "operator"))
    assert seen_by_a.status_code == 200
    shown = seen_by_a.json()["hops"]
    assert [hop["upstream_task_id"] for hop in shown] == [alice_task]
    assert shown[0]["skill_id"] == "echo" and shown[0]["terminal_state"] == "TASK_STATE_COMPLETED"
    assert "owner" not in shown[0]

    seen_by_b = hops(upstream, caller_header("tenant-b", "ops-b", "operator")).json()["hops"]
    assert [hop["upstream_task_id"] for hop in seen_by_b] == [bob_task]
    assert hops(upstream, caller_header("tenant-c", "ops-c", "operator")).json() == {"hops": []}


def test_callers_without_the_operator_role_get_403(upstream: str) -> None:
    relay_once(upstream, caller_header("tenant-a", "alice"))
    for headers in (caller_header("tenant-a", "alice"), caller_header("tenant-a", "x", "auditor")):
        refused = hops(upstream, headers)
        assert refused.status_code == 403
        assert "hops" not in refused.json()
        assert "operator" in refused.json()["error"]["message"]
    assert hops(upstream).status_code == 401  # no credential at all: authentication refuses


def test_every_operations_endpoint_needs_the_operator_role(upstream: str, tmp_path: Path) -> None:
    """Any route under ``/-/`` (``/-/hops``; later ones too) is guarded the same way.

    Except the orchestrators' probes, ``/-/livez`` and ``/-/readyz``: they answer
    without credentials (a kubelet has none) and say nothing of tasks or callers;
    and the console's sign-in and sign-out, which are how a person becomes an operator:
    they show a form, never a task, an approval or a hop.
    """
    registry = registry_of([("allow", AllowAll()), ("callers", HeaderCallers())])
    config = Config(base_dir=tmp_path, server=ServerSettings(store="memory"))
    app = build_server(registry, config, "http://127.0.0.1:9")
    paths = [
        path
        for route in app.routes
        if isinstance(path := getattr(route, "path", None), str)
        and path.startswith(OPERATOR_PREFIX)
    ]
    assert HOPS_PATH in paths
    probes = {LIVEZ_PATH, READYZ_PATH}
    assert probes <= set(paths)
    for path in paths:
        answer = httpx.get(upstream + path, headers=caller_header("t1", "plain"), timeout=10)
        if path in probes:
            assert answer.status_code == 200, path
            assert set(answer.json()) <= {"status", "checks"}, answer.json()
        elif path.startswith((CONSOLE_PATH + "/signin", CONSOLE_PATH + "/signout")):
            assert answer.status_code != 500, path
            assert "TASK_STATE" not in answer.text and "approval_id" not in answer.text, path
        else:
            assert answer.status_code == 403, path


def test_without_authentication_loopback_clients_see_every_hop(development: str) -> None:
    task_id = relay_once(development)
    answer = hops(development)
    assert answer.status_code == 200
    assert task_id in [hop["upstream_task_id"] for hop in answer.json()["hops"]]


def _request(client: str, caller: Caller | None = None) -> Request:
    scope: dict[str, Any] = {
        "type": "http",
        "method": "GET",
        "path": HOPS_PATH,
        "headers": [],
        "client": (client, 40000),
    }
    if caller is not None:
        scope[CALLER_KEY] = caller
    return Request(scope)


def test_without_authentication_other_addresses_are_refused() -> None:
    manager = registry_of([("allow", AllowAll())]).manager
    assert manager is not None
    guard = OperatorGuard(manager)
    assert guard.refusal(_request("127.0.0.1")) is None
    assert guard.refusal(_request("::1")) is None
    refused = guard.refusal(_request("192.0.2.10"))
    assert refused is not None and refused.status_code == 403
    assert guard.owner(_request("127.0.0.1")) is None  # no tenants: every hop


def test_with_authentication_the_role_decides_not_the_address() -> None:
    manager = registry_of([("callers", HeaderCallers())]).manager
    assert manager is not None
    guard = OperatorGuard(manager)
    operator = Caller("ops", "t1", authenticated=True, attributes={"roles": ["operator"]})
    assert guard.refusal(_request("192.0.2.10", operator)) is None
    assert guard.owner(_request("192.0.2.10", operator)) == "tenant:t1"
    plain = Caller("ops", "t1", authenticated=True, attributes={"roles": "operator"})
    refused = guard.refusal(_request("127.0.0.1", plain))  # roles must be a list
    assert refused is not None and refused.status_code == 403
