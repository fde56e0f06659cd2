"""One client calling many agents: each document fetched once, each connection reused, bounded.

What ``benchmarks/fanout.py`` measures at scale (issue 34 item 2), checked on
a few real agents on 127.0.0.1 without timing anything.  Each agent sits
behind :class:`Seen`, which records every request with the client's address
and port: a new port is a new TCP connection, so the set of ports is the
connections the agent accepted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import pytest
from helpers.agent_harness import running_agent, running_wrapped
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillrack.client.cache import CacheBounds
from skillrack.client.origin_pools import PerOrigin
from skillrack.client.skill_client import SkillClient
from skillrack.interface.limits import Limits
from skillrack.testing.serve import free_port

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}
AGENTS = 3


def probe_registry(schema: Any = SCHEMA) -> Any:
    return registry_of(
        [("probe", SkillsPlugin(simple_skill("probe", input_schema=schema))), ("allow", AllowAll())]
    )


@dataclass
class Seen:
    """Every request as ``(METHOD, client port)``, and how many named ``describe_skill``."""

    app: ASGIApp
    requests: list[tuple[str, int]] = field(default_factory=list)
    describes: int = 0

    def clear(self) -> None:
        self.requests.clear()
        self.describes = 0

    @property
    def connections(self) -> set[int]:
        return {port for _, port in self.requests}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.requests.append((scope["method"], scope["client"][1]))

        async def watching() -> Message:
            message = await receive()
            if b'"describe_skill"' in message.get("body", b""):
                self.describes += 1
            return message

        await self.app(scope, watching, send)


@pytest.fixture(scope="module")
def agents() -> Iterator[list[tuple[str, Seen]]]:
    with ExitStack() as stack:
        yield [stack.enter_context(running_wrapped(probe_registry(), Seen)) for _ in range(AGENTS)]


async def test_one_describe_per_agent_and_digest_across_many_calls(
    agents: list[tuple[str, Seen]],
) -> None:
    for _, seen in agents:
        seen.clear()
    async with SkillClient() as client:
        for _ in range(4):  # rounds, every agent called at once, twice each
            calls = [client.call(url, "probe", {"text": "hi"}) for url, _ in agents for _ in "ab"]
            await asyncio.gather(*calls)
    for _, seen in agents:
        # Concurrent calls on a cold cache wait for the one describe_skill under way.
        assert seen.describes == 1, seen.requests
        posts = [method for method, _ in seen.requests if method == "POST"]
        assert len(posts) == 8 + 1
    async with SkillClient() as client:  # one call at a time: exactly one describe per agent
        for _, seen in agents:
            seen.clear()
        for _ in range(3):
            for url, _ in agents:
                await client.call(url, "probe", {"text": "hi"})
        assert [seen.describes for _, seen in agents] == [1] * AGENTS


async def test_a_repeated_call_within_the_cards_max_age_is_one_request(
    agents: list[tuple[str, Seen]],
) -> None:
    url, seen = agents[0]
    async with SkillClient() as client:
        await client.call(url, "probe", {"text": "hi"})
        seen.clear()
        for _ in range(3):
            await client.call(url, "probe", {"text": "hi"})
    assert [method for method, _ in seen.requests] == ["POST"] * 3  # no card, no describe


async def test_sequential_calls_reuse_one_connection_per_origin(
    agents: list[tuple[str, Seen]],
) -> None:
    async with SkillClient() as client:
        for _, seen in agents:
            seen.clear()
        for _ in range(3):
            for url, _ in agents:
                await client.call(url, "probe", {"text": "hi"})
        for _, seen in agents:
            # card, describe_skill, three calls: one connection
            assert len(seen.requests) == 5 and len(seen.connections) == 1, seen.requests


async def test_a_revalidated_card_keeps_its_connection(agents: list[tuple[str, Seen]]) -> None:
    """A 304 is read to its end: the connection goes back to the pool, not closed."""
    url, seen = agents[0]
    async with SkillClient() as client:
        seen.clear()
        for _ in range(3):
            await client.card(url)
            client._cards[url].fresh_for(None)  # stale: the next look revalidates
            await client.call(url, "probe", {"text": "hi"})
    assert len(seen.connections) == 1, seen.requests


async def test_the_caches_stay_bounded_over_more_agents_than_they_hold(
    agents: list[tuple[str, Seen]],
) -> None:
    bounds = CacheBounds(entries=2, bytes=1_000_000)
    async with SkillClient(card_cache=bounds, limits=Limits(max_cache_entries=2)) as client:
        for _ in range(2):
            for url, _ in agents:
                await client.call(url, "probe", {"text": "hi"})
                assert len(client._cards) <= 2 and len(client.cache) <= 2
                assert len(client.describe_calls) <= 2
                assert len(client._sdk_clients) <= 2 * bounds.entries  # streaming or not


def test_a_fresh_card_older_than_the_agents_documents_is_fetched_again() -> None:
    """The memory cache's card is used without asking while fresh; the agent's
    ``interface_mismatch`` then makes the client fetch it again and call once more."""
    port = free_port()
    holder: list[Seen] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        holder.append(Seen(app))
        return holder[-1]

    async def call(client: SkillClient, url: str) -> Any:
        return (await client.call(url, "probe", {"text": "hi"})).state

    async def scenario() -> None:
        async with SkillClient() as client:
            with running_agent(probe_registry(), wrap=wrap, port=port) as url:
                assert await call(client, url) == "TASK_STATE_COMPLETED"
            changed = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 9}}}
            with running_agent(probe_registry(changed), wrap=wrap, port=port) as url:
                assert await call(client, url) == "TASK_STATE_COMPLETED"
                methods = [method for method, _ in holder[-1].requests]
                # stale call (rejected), card, describe_skill, call
                assert methods == ["POST", "GET", "POST", "POST"], holder[-1].requests

    asyncio.run(scenario())


async def test_the_pools_per_origin_are_bounded(agents: list[tuple[str, Seen]]) -> None:
    """More origins than pools: the least recently used idle pool is closed, calls go on."""
    transport = PerOrigin(limit=2)
    async with SkillClient(transport=transport) as client:
        for _ in range(2):
            for url, _ in agents:
                result = await client.call(url, "probe", {"text": "hi"})
                assert result.state == "TASK_STATE_COMPLETED"
                assert len(transport._pools._transports) <= 2


async def test_agents_serving_one_document_share_its_verified_interface(
    agents: list[tuple[str, Seen]],
) -> None:
    """Each agent is still asked for its document and its digests checked; the verified
    value (document and compiled validators) is one object, not one per agent."""
    for _, seen in agents:
        seen.clear()
    async with SkillClient() as client:
        found = [await client.describe(url, "probe") for url, _ in agents]
        assert all(interface is found[0] for interface in found)
        assert [seen.describes for _, seen in agents] == [1] * AGENTS
        result = await client.call(agents[-1][0], "probe", {"text": "hi"})
        assert result.state == "TASK_STATE_COMPLETED"
    async with SkillClient(limits=Limits(max_instance_bytes=10_000)) as other:
        # verified under other limits: this client's own
        assert await other.describe(agents[0][0], "probe") is not found[0]


def test_a_different_document_under_the_same_key_is_verified_in_full() -> None:
    """``alike`` is shared only for the same JCS bytes: another document, even one whose
    digest the agent claims to be the advertised one, goes through every check."""
    from skillrack.client.cache import CacheKey
    from skillrack.client.verify import verify_described
    from skillrack.errors import SkillCallError

    alike = _verified_probe()
    key = CacheKey("http://a", "probe", alike.skill_version, "1.0", alike.interface_digest)
    same = alike.document_copy()
    assert verify_described(same, alike.interface_digest, key, Limits(), alike) is alike
    changed = alike.document_copy()
    changed["skill_version"] = "9.9"  # not the document the card advertises
    with pytest.raises(SkillCallError) as refused:
        verify_described(changed, alike.interface_digest, key, Limits(), alike)
    assert refused.value.code == "interface_invalid"
    assert "computed digest" in str(refused.value)


def _verified_probe() -> Any:
    """The probe skill's document, verified (as a client keeps it)."""
    from skillrack.interface.document import verify_document

    registered = probe_registry().get("probe")
    assert registered is not None
    return verify_document(registered.interface.document_copy())
