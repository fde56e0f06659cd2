"""a2a-sdk's clients of one :class:`SkillClient`, made once per agent and card, bounded.

Every exchange goes through an a2a-sdk client made from the agent's card
(trimmed to the interfaces the origin rule lets the call reach).  Making one
costs more than the exchange itself (``ClientFactory.create`` builds the
transports, copies the card, resolves the binding: about 1.5 ms of CPU on a
loaded 2-core machine against 2 ms for a whole a2a-sdk call), so a client
fanning out to many agents spent most of its time there.  They are kept
here, keyed by what they were made from: the agent, streaming or not, the
origin policy of the call (which decides the trimmed interfaces), and the
very card entry (a revalidated card that changed is a new entry, so a new
client).  All of them share the :class:`SkillClient`'s ``httpx`` client (its
connection pool), so dropping one closes nothing.  Bounded, least recently
used first, like every cache of the client.
"""

from __future__ import annotations

from typing import Any

from skillrack.client.cache import CacheBounds, LruCache
from skillrack.client.cards import CachedCard
from skillrack.client.origin import OriginPolicy

Key = tuple[str, bool, OriginPolicy | None]


class SdkClients:
    """a2a-sdk clients by (agent, streaming, origin policy), each valid for one card entry."""

    def __init__(self, entries: int) -> None:
        self._clients: LruCache[Key, tuple[CachedCard, Any]] = LruCache(
            CacheBounds(entries=entries, bytes=entries)
        )

    def find(self, key: Key, entry: CachedCard) -> Any:
        """The client kept for ``key`` if it was made from ``entry``, else None.

        Asked on every exchange, so no callable is made for it (a ``make``
        closure per call would be garbage on every hit).
        """
        found = self._clients.get(key)
        return found[1] if found is not None and found[0] is entry else None

    def keep(self, key: Key, entry: CachedCard, client: Any) -> None:
        """Keep ``client``, made from ``entry``, for ``key`` (in place of any older one)."""
        self._clients.put(key, (entry, client), 1)

    def __len__(self) -> int:
        return len(self._clients)
