"""The origin rule: the caller's credentials reach only the origin of the URL the caller named.

Real servers on 127.0.0.1: ``agent`` is a real skillrack agent wrapped in a
counter of the requests that carry the test's credentials; a decoy on
another port serves the agent's card (so its interfaces name the agent, on
another origin) or redirects to it.  Without an allowance the client must
refuse before a single credentialed request reaches the agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import registry_of
from helpers.hostile_agents import (
    CARD_PATH,
    CREDENTIALS,
    CredentialCounter,
    card_of,
    counting_agent,
    decoy,
    minimal_card,
    redirect_to,
    serving,
    steering_decoy,
    with_interfaces,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from skillrack.client.composition import Peers
from skillrack.client.origin import Origin, OriginPolicy, parse_origin
from skillrack.client.skill_client import SkillClient
from skillrack.errors import ClientCode, SkillCallError
from skillrack.host.config import ConfigError, load_config

SKILL = "evaluate_resource_condition"
ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}


@pytest.fixture(scope="module")
def agent() -> Iterator[tuple[str, CredentialCounter]]:
    with counting_agent() as counted:
        yield counted


@pytest.fixture(scope="module")
def steering(agent: tuple[str, CredentialCounter]) -> Iterator[str]:
    with steering_decoy(agent[0]) as url:
        yield url


@pytest.fixture
def counter(agent: tuple[str, CredentialCounter]) -> Iterator[CredentialCounter]:
    agent[1].reset()
    yield agent[1]
    agent[1].reset()


async def refused(coro: Any) -> SkillCallError:
    with pytest.raises(SkillCallError) as info:
        await coro
    return info.value


# The rule itself ---------------------------------------------------------------------------------


def test_origins_compare_scheme_host_and_port() -> None:
    assert Origin.of("HTTPS://Agent.Example/a2a") == Origin.of("https://agent.example:443/")
    assert str(Origin.of("http://[::1]:8000/x")) == "http://[::1]:8000"
    assert Origin.of("http://127.0.0.1:8000") != Origin.of("http://127.0.0.1:8001")
    assert Origin.of("http://agent.example") != Origin.of("https://agent.example")


@pytest.mark.parametrize(
    "text", ["https://a.example/path", "https://user@a.example", "ftp://a.example", "a.example"]
)
def test_an_allowed_origin_is_nothing_but_an_origin(text: str) -> None:
    with pytest.raises(ValueError):
        parse_origin(text)


def test_the_cards_host_on_another_port_is_another_origin() -> None:
    policy = OriginPolicy.for_url("http://127.0.0.1:8000")
    assert policy.refusal("http://127.0.0.1:8000/a2a", "x") is None
    reason = policy.refusal("http://127.0.0.1:9000/", "the interface")
    assert reason is not None
    assert "http://127.0.0.1:9000" in reason and "http://127.0.0.1:8000" in reason
    assert "--allow-origin http://127.0.0.1:9000" in reason and "allow_origins" in reason


def test_an_https_card_never_leads_to_http_even_when_allowed() -> None:
    allowed = {Origin.of("http://agent.example"), Origin.of("http://other.example")}
    policy = OriginPolicy.for_url("https://agent.example", allowed)
    for url in ("http://agent.example/", "http://other.example/"):
        reason = policy.refusal(url, "the interface")
        assert reason is not None and "never leads to http" in reason
    assert policy.refusal("https://agent.example/a2a", "x") is None


async def test_an_https_card_naming_an_http_interface_is_refused_before_sending() -> None:
    """The card's interface check, at the level of the client's selection (no TLS server)."""
    from a2a.types import AgentCard
    from google.protobuf import json_format

    from skillrack.client.transport import origin_scope

    card = json_format.ParseDict(minimal_card("http://agent.example/"), AgentCard())
    async with SkillClient(allow_origins=["http://agent.example"]) as client:
        with (
            origin_scope(OriginPolicy.for_url("https://agent.example")),
            pytest.raises(SkillCallError) as info,
        ):
            client._reachable("https://agent.example", card)
    assert info.value.code == ClientCode.ORIGIN_REFUSED
    assert "never leads to http" in info.value.message


def test_a_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(SkillCallError) as info:
        OriginPolicy.for_url("file:///etc/passwd")
    assert info.value.code == ClientCode.ORIGIN_REFUSED


# A card that names another server ----------------------------------------------------------------


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_card_naming_another_origin_gets_no_credentials(
    agent: tuple[str, CredentialCounter], steering: str, counter: CredentialCounter, binding: str
) -> None:
    async with SkillClient(headers=CREDENTIALS, binding=binding) as client:
        for attempt in (client.call(steering, SKILL, ARGS), client.describe(steering, SKILL)):
            error = await refused(attempt)
            assert error.code == ClientCode.ORIGIN_REFUSED and not error.remote
            assert steering in error.message and agent[0] in error.message
            assert f"--allow-origin {agent[0]}" in error.message
    assert counter.with_credentials == [] and counter.requests == 0


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_an_allowed_origin_receives_the_call(
    agent: tuple[str, CredentialCounter], steering: str, counter: CredentialCounter, binding: str
) -> None:
    client = SkillClient(headers=CREDENTIALS, allow_origins=[agent[0]], binding=binding)
    async with client:
        result = await client.call(steering, SKILL, ARGS, mode="stream")
    assert result.state == "TASK_STATE_COMPLETED"
    assert counter.with_credentials  # the allowed origin did get them


async def test_allowances_per_agent_apply_to_that_agent_alone(
    agent: tuple[str, CredentialCounter], steering: str, counter: CredentialCounter
) -> None:
    async with SkillClient(headers=CREDENTIALS, allow_origins={steering: [agent[0]]}) as client:
        assert (await client.call(steering, SKILL, ARGS)).state == "TASK_STATE_COMPLETED"
    counter.reset()
    elsewhere = {"http://127.0.0.1:1": [agent[0]]}
    async with SkillClient(headers=CREDENTIALS, allow_origins=elsewhere) as client:
        error = await refused(client.call(steering, SKILL, ARGS))
    assert error.code == ClientCode.ORIGIN_REFUSED
    assert counter.with_credentials == []


async def test_the_named_origin_itself_needs_no_allowance(
    agent: tuple[str, CredentialCounter], counter: CredentialCounter
) -> None:
    async with SkillClient(headers=CREDENTIALS) as client:
        assert (await client.call(agent[0], SKILL, ARGS)).state == "TASK_STATE_COMPLETED"
    assert counter.with_credentials


async def test_a_delegating_peer_is_not_steered(
    agent: tuple[str, CredentialCounter], steering: str, counter: CredentialCounter
) -> None:
    peers = Peers(
        {"observer": steering}, "http://127.0.0.1:1", lambda: SkillClient(headers=CREDENTIALS)
    )
    try:
        error = await refused(peers.delegate("upstream-task", "observer", SKILL, ARGS, "sync"))
    finally:
        await peers.aclose()
    assert error.code == ClientCode.ORIGIN_REFUSED
    assert counter.with_credentials == [] and counter.requests == 0


def test_peers_configure_allow_origins_per_peer(tmp_path: Path) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text(
        "[peers]\n"
        'observer = "http://127.0.0.1:8001"\n'
        'inventory = { url = "https://inv.example", '
        'allow_origins = ["https://api.example:8443"] }\n'
    )
    config = load_config(path)
    assert config.peers == {"observer": "http://127.0.0.1:8001", "inventory": "https://inv.example"}
    assert config.peer_allow_origins == {"inventory": ("https://api.example:8443",)}
    path.write_text('[peers]\nx = { url = "https://a.example", allow_origins = ["https://b/p"] }\n')
    with pytest.raises(ConfigError, match=r"peers\.x\.allow_origins"):
        load_config(path)


# Redirects ---------------------------------------------------------------------------------------


async def test_a_redirect_to_another_origin_gets_no_credentials(
    agent: tuple[str, CredentialCounter], counter: CredentialCounter
) -> None:
    with serving(redirect_to(agent[0])) as redirecting:
        async with SkillClient(headers=CREDENTIALS) as client:
            error = await refused(client.card(redirecting))
    assert error.code == ClientCode.ORIGIN_REFUSED and agent[0] in error.message
    assert counter.requests == 0


async def test_a_message_redirected_to_another_origin_gets_no_credentials(
    agent: tuple[str, CredentialCounter], counter: CredentialCounter
) -> None:
    """The card names the decoy itself; its POST / answers 307 to the agent."""
    card = card_of(agent[0])
    counter.reset()  # that fetch carried no credentials; count from here
    holder: dict[str, str] = {}

    async def bounce(request: Request) -> Response:
        return RedirectResponse(agent[0] + "/", status_code=307)

    with serving(decoy(lambda: with_interfaces(card, holder["url"] + "/"), bounce)) as url:
        holder["url"] = url
        async with SkillClient(headers=CREDENTIALS) as client:
            error = await refused(client.describe(url, SKILL))
    assert error.code == ClientCode.ORIGIN_REFUSED and agent[0] in error.message
    assert counter.with_credentials == [] and counter.requests == 0


async def test_a_redirect_within_the_origin_is_followed() -> None:
    holder: dict[str, str] = {}

    async def moved(request: Request) -> Response:
        return RedirectResponse("/moved-card", status_code=301)

    async def card(request: Request) -> Response:
        return JSONResponse(minimal_card(holder["url"]))

    app = Starlette(routes=[Route(CARD_PATH, moved), Route("/moved-card", card)])
    with serving(app) as url:
        holder["url"] = url
        async with SkillClient(headers=CREDENTIALS) as client:
            assert (await client.card(url))["name"] == "hostile"


# Delegation through [peers], end to end ----------------------------------------------------------


async def _relay(arguments: Any, context: Any) -> dict[str, Any]:
    """Delegates to the ``observer`` peer; reports how it ended instead of failing."""
    try:
        result = await context.delegate("observer", SKILL, ARGS)
    except SkillCallError as exc:
        return {"outcome": exc.code}
    return {"outcome": result.state}


def _relay_outcome(url: str) -> Any:
    import httpx

    from skillrack.protocol.messages import EXTENSION_URI
    from skillrack.testing.serve import invoke

    card = httpx.get(url + CARD_PATH, timeout=10).json()
    [extension] = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI]
    [binding] = [s for s in extension["params"]["skills"] if s["skill_id"] == "relay"]
    task = invoke(
        url,
        {
            "skill": "relay",
            "skill_version": "1.0",
            "interface_digest": binding["interface_digest"],
            "arguments": {},
        },
    )
    [artifact] = [a for a in task.get("artifacts", []) if a.get("name") == "relay"]
    return artifact["parts"][0]["data"]["result"]["outcome"]


@pytest.mark.parametrize("allowed", [False, True], ids=["refused", "allow_origins"])
def test_a_delegating_agent_follows_its_peers_allow_origins(
    agent: tuple[str, CredentialCounter],
    steering: str,
    counter: CredentialCounter,
    tmp_path: Path,
    allowed: bool,
) -> None:
    """A real agent whose [peers] observer is the decoy: the decoy's card names the agent B."""
    from helpers.builders import SkillsPlugin, simple_skill

    from skillrack.host.config import Config

    peer_allow = {"observer": (agent[0],)} if allowed else {}
    config = Config(base_dir=tmp_path, peers={"observer": steering}, peer_allow_origins=peer_allow)
    relay = simple_skill("relay", handler=_relay)
    registry = registry_of([("relay", SkillsPlugin(relay)), ("allow", AllowAll())])
    with running_agent(registry, config) as delegator:
        outcome = _relay_outcome(delegator)
    if allowed:
        assert outcome == "TASK_STATE_COMPLETED" and counter.requests > 0
    else:
        assert outcome == ClientCode.ORIGIN_REFUSED and counter.requests == 0
