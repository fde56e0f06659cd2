"""Delegation through ``[peers]`` dials only vetted addresses: real agents on 127.0.0.1.

One delegating agent has peers that are refused (a metadata address, the
unspecified address nobody allowed, a loopback peer whose card points its
interfaces at the metadata address) and one that works (a peer configured by
its loopback URL).  A listener on 127.0.0.1 counts connections, so "refused
before any connection" is measured, not assumed.
"""

from __future__ import annotations

import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.tamper import Tamper
from starlette.types import ASGIApp

from skillrack.client.skill_client import SkillClient
from skillrack.errors import SkillCallError
from skillrack.host.config import Config, PeerAddresses

EVALUATE_ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
METADATA = "http://169.254.169.254:9"


async def relay(arguments: Any, context: Any) -> Any:
    """Delegate to the named peer; report the outcome or the local error as the result."""
    try:
        outcome = await context.delegate(
            arguments["peer"], "evaluate_resource_condition", EVALUATE_ARGS
        )
    except SkillCallError as exc:
        return {"code": exc.code, "message": exc.message, "remote": exc.remote}
    return {"state": outcome.state}


class ConnectionCounter:
    """A listener on 127.0.0.1 that counts the connections it accepts (and closes them)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def counter() -> Iterator[ConnectionCounter]:
    listener = ConnectionCounter()
    yield listener
    listener.close()


@pytest.fixture(scope="module")
def allowed_counter() -> Iterator[ConnectionCounter]:
    """Another origin: one origin has one policy, whichever peers name it."""
    listener = ConnectionCounter()
    yield listener
    listener.close()


@pytest.fixture(scope="module")
def target() -> Iterator[str]:
    with running_agent(registry_of([("tests", TestSkills()), ("allow", AllowAll())])) as url:
        yield url


@pytest.fixture(scope="module")
def steered() -> Iterator[str]:
    """An agent whose card names the metadata address as where its interfaces are."""

    def wrap(app: ASGIApp) -> ASGIApp:
        tamper = Tamper(app)

        def to_metadata(card: Any) -> Any:
            for interface in card.get("supportedInterfaces", []):
                path = httpx.URL(interface["url"]).raw_path.decode()
                interface["url"] = METADATA + path
            return card

        tamper.card = to_metadata
        return tamper

    registry = registry_of([("tests", TestSkills()), ("allow", AllowAll())])
    with running_agent(registry, wrap=wrap) as url:
        yield url


@pytest.fixture(scope="module")
def delegator(
    counter: ConnectionCounter, allowed_counter: ConnectionCounter, target: str, steered: str
) -> Iterator[str]:
    config = Config(
        base_dir=Path(tempfile.mkdtemp(prefix="skillrack-test-")),
        peers={
            "loopback": target,
            "metadata": METADATA,
            "unspecified": f"http://0.0.0.0:{counter.port}",
            "unspecified_allowed": f"http://0.0.0.0:{allowed_counter.port}",
            "steered": steered,
        },
        peer_addresses={"unspecified_allowed": PeerAddresses(allow_loopback=True)},
        peer_allow_origins={"steered": (METADATA,)},
    )
    relay_skill = simple_skill(
        "relay",
        input_schema={"type": "object", "required": ["peer"], "properties": {"peer": {}}},
        handler=relay,
    )
    registry = registry_of([("relay", SkillsPlugin(relay_skill)), ("allow", AllowAll())])
    with running_agent(registry, config) as url:
        yield url


async def delegate_to(delegator: str, peer: str) -> dict[str, Any]:
    async with SkillClient() as client:
        outcome = await client.call(delegator, "relay", {"peer": peer})
    assert outcome.state == "TASK_STATE_COMPLETED"
    result: dict[str, Any] = outcome.result
    return result


async def test_a_peer_configured_by_its_loopback_url_works(delegator: str) -> None:
    assert await delegate_to(delegator, "loopback") == {"state": "TASK_STATE_COMPLETED"}


async def test_a_metadata_peer_is_refused_without_any_connection(delegator: str) -> None:
    result = await delegate_to(delegator, "metadata")
    assert result["code"] == "address_refused" and result["remote"] is False
    assert "169.254.169.254 is a cloud metadata address" in result["message"]
    assert "no setting allows it" in result["message"]


async def test_a_card_steering_delegation_to_the_metadata_address_is_refused(
    delegator: str,
) -> None:
    """The peer's origin is allowed to be left for the metadata origin: the guard still refuses."""
    result = await delegate_to(delegator, "steered")
    assert result["code"] == "address_refused"
    assert "169.254.169.254" in result["message"]


async def test_an_address_nobody_allowed_is_refused_before_connecting(
    delegator: str, counter: ConnectionCounter
) -> None:
    before = counter.accepted
    result = await delegate_to(delegator, "unspecified")
    assert result["code"] == "address_refused"
    assert "set allow_loopback = true in [peers.unspecified]" in result["message"]
    assert counter.accepted == before  # not one connection


async def test_the_peer_setting_allows_it(
    delegator: str, allowed_counter: ConnectionCounter
) -> None:
    before = allowed_counter.accepted
    result = await delegate_to(delegator, "unspecified_allowed")
    assert result["code"] == "transport_error"  # the listener is no agent: it hangs up
    assert allowed_counter.accepted > before  # but this time the connection was made
