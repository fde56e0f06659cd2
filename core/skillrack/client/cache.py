"""The client's caches: bounded in entries and in bytes, least recently used first.

The draft: "An implementation MUST enforce limits on ... cache consumption".
A client that talks to agents it does not control caches what they send
(Agent Cards, verified documents with compiled validators), so a cache
bounded only in entries can still be filled with a few huge values, and one
bounded in nothing grows with every agent named.  :class:`LruCache` bounds
both; an entry larger than the whole byte bound is simply not kept.

The interface cache: an entry "is bound to the agent identity, skill
identifier, skill version, interface version, and interface digest", and "a
changed advertised version or digest invalidates the corresponding entry".
The key is exactly that tuple, so a changed card simply misses; the entry for
the old binding is dropped when the card no longer advertises it.

The key stays per agent, but the value need not be: agents that serve the
same document (an orchestrator's hundred peers on one release) would each
hold a verified copy and compiled validators of their own, about 125 objects
the garbage collector walks in every full collection.  :meth:`InterfaceCache.alike`
finds the value another agent's entry holds for the same skill, version,
interface version and digest, verified under the same limits; the caller
shares it only when the document the agent returned is byte for byte (JCS)
the one it was verified from (:func:`~skillrack.client.verify.verify_described`).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from skillrack.interface.canonical import canonical_bytes
from skillrack.interface.document import VerifiedInterface
from skillrack.interface.limits import DEFAULT_LIMITS, Limits

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True)
class CacheBounds:
    """How much one cache may hold: ``entries`` values of ``bytes`` bytes in all."""

    entries: int
    bytes: int


#: The Agent Card cache of one client: a card may be up to a few MB (its skills' cards), a
#: usual one is 5-30 kB.  1,024 entries: an orchestrator fanning out to a few hundred agents
#: keeps every card (64 made a fan-out to 100 agents fetch and parse every card on every
#: call); the bytes bound is what bounds the memory.
CARD_CACHE = CacheBounds(entries=1024, bytes=32_000_000)


class LruCache(Mapping[K, V], Generic[K, V]):
    """A mapping bounded by :class:`CacheBounds`; reading an entry makes it the most recent.

    Iteration runs from the least to the most recently used entry, the order
    in which entries are evicted.  ``size`` is what the caller counts as an
    entry's bytes (the bytes it was read from, or its canonical JSON).
    """

    def __init__(self, bounds: CacheBounds) -> None:
        self.bounds = bounds
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0

    def __getitem__(self, key: K) -> V:
        value, _ = self._entries[key]
        self._entries.move_to_end(key)
        return value

    def __contains__(self, key: object) -> bool:  # a membership test is not a use
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """The bytes the entries count for, together."""
        return self._bytes

    def put(self, key: K, value: V, size: int) -> None:
        """Keep ``value`` as the most recent entry, evicting the least recent over the bounds."""
        self.pop(key)
        if size > self.bounds.bytes or self.bounds.entries < 1:
            return
        self._entries[key] = (value, size)
        self._bytes += size
        while len(self._entries) > self.bounds.entries or self._bytes > self.bounds.bytes:
            _, (_, evicted) = self._entries.popitem(last=False)
            self._bytes -= evicted

    def pop(self, key: K) -> None:
        """Forget ``key`` (nothing happens when it is not cached)."""
        found = self._entries.pop(key, None)
        if found is not None:
            self._bytes -= found[1]


@dataclass(frozen=True)
class CacheKey:
    agent: str
    skill_id: str
    skill_version: str
    interface_version: str
    interface_digest: str


class InterfaceCache:
    """Verified documents and compiled validators, by the draft's cache key.

    An entry's size is its document's canonical JSON: the compiled
    validators grow with the schemas it holds.
    """

    def __init__(self, max_entries: int, max_bytes: int = DEFAULT_LIMITS.max_cache_bytes) -> None:
        self._entries: LruCache[CacheKey, VerifiedInterface] = LruCache(
            CacheBounds(max_entries, max_bytes)
        )
        #: The cached values by all of their key but the agent, and the limits they were
        #: verified under; weak: a value lives only as long as some agent's entry holds it.
        self._alike: weakref.WeakValueDictionary[
            tuple[str, str, str, str, Limits], VerifiedInterface
        ] = weakref.WeakValueDictionary()

    @property
    def max_entries(self) -> int:
        return self._entries.bounds.entries

    @property
    def nbytes(self) -> int:
        return self._entries.nbytes

    def least_recent_first(self) -> list[CacheKey]:
        """The cached keys, least recently used first."""
        return list(self._entries)

    def get(self, key: CacheKey) -> VerifiedInterface | None:
        return self._entries.get(key)

    def put(
        self, key: CacheKey, interface: VerifiedInterface, limits: Limits | None = None
    ) -> None:
        """Keep ``interface`` under ``key``; with ``limits`` (those it was verified under),
        other agents serving the same document may share it (:meth:`alike`)."""
        self.invalidate(key.agent, key.skill_id)
        self._entries.put(key, interface, len(canonical_bytes(interface.document)))
        if limits is not None and key in self._entries:
            self._alike.setdefault(_alike_key(key, limits), interface)

    def alike(self, key: CacheKey, limits: Limits) -> VerifiedInterface | None:
        """A value kept for another agent under ``key``'s skill, versions and digest, verified
        under ``limits``: a candidate to share once the documents are found equal."""
        return self._alike.get(_alike_key(key, limits))

    def invalidate(self, agent: str, skill_id: str) -> None:
        """Drop every entry for (agent, skill): a new binding replaces the old one."""
        for key in [k for k in self._entries if (k.agent, k.skill_id) == (agent, skill_id)]:
            self._entries.pop(key)

    def __len__(self) -> int:
        return len(self._entries)


def _alike_key(key: CacheKey, limits: Limits) -> tuple[str, str, str, str, Limits]:
    return (key.skill_id, key.skill_version, key.interface_version, key.interface_digest, limits)
