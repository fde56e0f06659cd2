"""The client's caches are bounded in entries and bytes, and evict the least recently used first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.agent_harness import running_wrapped
from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.client.cache import CARD_CACHE, CacheBounds, LruCache
from skillrack.client.skill_client import SkillClient
from skillrack.host.registry import Registry
from skillrack.interface.canonical import canonical_bytes
from skillrack.interface.limits import Limits

SKILLS = ("evaluate_resource_condition", "progressive", "crash")


# The cache itself --------------------------------------------------------------------------------


def test_the_entry_bound_evicts_the_least_recently_used() -> None:
    cache: LruCache[str, int] = LruCache(CacheBounds(entries=3, bytes=1000))
    for n, key in enumerate("abc"):
        cache.put(key, n, 1)
    assert cache["a"] == 0  # a read makes "a" the most recent
    cache.put("d", 3, 1)
    assert list(cache) == ["c", "a", "d"]  # "b" was the least recently used
    assert cache.get("b") is None and len(cache) == 3


def test_the_byte_bound_evicts_until_the_new_entry_fits() -> None:
    cache: LruCache[str, str] = LruCache(CacheBounds(entries=100, bytes=10))
    cache.put("a", "x", 4)
    cache.put("b", "x", 4)
    cache.get("a")
    cache.put("c", "x", 5)  # 13 bytes: "b" (least recent) goes, 9 remain
    assert list(cache) == ["a", "c"] and cache.nbytes == 9
    cache.put("d", "x", 10)  # only room for itself
    assert list(cache) == ["d"] and cache.nbytes == 10


def test_an_entry_larger_than_the_bound_is_not_kept_and_replaces_nothing_else() -> None:
    cache: LruCache[str, str] = LruCache(CacheBounds(entries=10, bytes=10))
    cache.put("a", "small", 3)
    cache.put("huge", "x" * 11, 11)
    assert list(cache) == ["a"] and cache.nbytes == 3
    cache.put("a", "replaced by a huge value", 11)  # the old value must not linger
    assert len(cache) == 0 and cache.nbytes == 0


def test_membership_is_not_a_use_and_replacing_counts_the_new_size() -> None:
    cache: LruCache[str, int] = LruCache(CacheBounds(entries=2, bytes=100))
    cache.put("a", 1, 10)
    cache.put("b", 2, 10)
    assert "a" in cache
    cache.put("b", 3, 30)
    assert cache.nbytes == 40
    cache.put("c", 4, 1)
    assert list(cache) == ["b", "c"]  # "a" stayed the least recent despite the test


def test_the_card_cache_has_a_default_bound() -> None:
    assert CARD_CACHE.entries > 0 and 0 < CARD_CACHE.bytes <= 64_000_000


# The caches of a client talking to a real agent --------------------------------------------------


class CardRequests:
    """Records the card requests an agent receives, and whether they were revalidations."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[tuple[str, bool]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].endswith("agent-card.json"):
            headers = dict(scope["headers"])
            self.seen.append((headers[b"host"].decode(), b"if-none-match" in headers))
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def agent(registry: Registry) -> Iterator[tuple[str, CardRequests]]:
    with running_wrapped(registry, CardRequests) as served:
        yield served


async def test_the_interface_cache_is_bounded_in_bytes(agent: tuple[str, CardRequests]) -> None:
    url, _ = agent
    async with SkillClient() as probe:
        sizes = [len(canonical_bytes((await probe.describe(url, s)).document)) for s in SKILLS]
    room = sizes[0] + max(sizes[1:])  # two documents fit, never three
    assert room < sum(sizes)
    async with SkillClient(limits=Limits(max_cache_entries=100, max_cache_bytes=room)) as client:
        for skill in SKILLS[:2]:
            await client.describe(url, skill)
        await client.describe(url, SKILLS[0])  # cached: now the most recent
        await client.describe(url, SKILLS[2])
        assert [k.skill_id for k in client.cache.least_recent_first()] == [SKILLS[0], SKILLS[2]]
        assert client.cache.nbytes <= room
        assert client.describe_calls[(url, SKILLS[0])] == 1  # the cached one was not asked again
        await client.describe(url, SKILLS[1])  # evicted, so asked again
        assert client.describe_calls[(url, SKILLS[1])] == 2


async def test_describe_calls_are_bounded(agent: tuple[str, CardRequests]) -> None:
    url, _ = agent
    async with SkillClient(limits=Limits(max_cache_entries=2)) as client:
        for skill in SKILLS:
            await client.describe(url, skill)
        assert list(client.describe_calls) == [(url, SKILLS[1]), (url, SKILLS[2])]
        assert sum(client.describe_calls.values()) == 2


async def test_the_card_cache_is_bounded_in_entries(agent: tuple[str, CardRequests]) -> None:
    url, seen = agent
    other = url.replace("127.0.0.1", "localhost")  # the same agent by another name
    async with SkillClient(card_cache=CacheBounds(entries=1, bytes=1_000_000)) as client:
        seen.seen.clear()
        await client.card(url)
        await client.card(url)  # cached and fresh (max-age): no request
        client._cards[url].fresh_for(None)  # as when its max-age has passed
        await client.card(url)  # cached, stale: revalidated
        await client.card(other)  # evicts the first
        await client.card(url)  # fetched anew, no revalidation
    named = [(host.startswith("127.0.0.1"), revalidated) for host, revalidated in seen.seen]
    assert named == [(True, False), (True, True), (False, False), (True, False)]


async def test_a_card_larger_than_the_byte_bound_is_not_kept(
    agent: tuple[str, CardRequests],
) -> None:
    url, seen = agent
    async with SkillClient(card_cache=CacheBounds(entries=10, bytes=100)) as client:
        seen.seen.clear()
        await client.card(url)
        await client.card(url)
        assert len(client._cards) == 0
    assert [revalidated for _, revalidated in seen.seen] == [False, False]
