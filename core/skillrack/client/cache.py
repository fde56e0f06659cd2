"""The client's interface cache: validated documents and compiled validators, bounded.

The draft: a cache entry "is bound to the agent identity, skill identifier,
skill version, interface version, and interface digest", and "a changed
advertised version or digest invalidates the corresponding entry".  The key
is exactly that tuple, so a changed card simply misses; the entry for the old
binding is dropped when the card no longer advertises it.  The size bound
(least recently used goes first) is one of the draft's required limits.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from skillrack.interface.document import VerifiedInterface


@dataclass(frozen=True)
class CacheKey:
    agent: str
    skill_id: str
    skill_version: str
    interface_version: str
    interface_digest: str


class InterfaceCache:
    def __init__(self, max_entries: int) -> None:
        self._entries: OrderedDict[CacheKey, VerifiedInterface] = OrderedDict()
        self.max_entries = max_entries

    def get(self, key: CacheKey) -> VerifiedInterface | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: CacheKey, interface: VerifiedInterface) -> None:
        self.invalidate(key.agent, key.skill_id)
        self._entries[key] = interface
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def invalidate(self, agent: str, skill_id: str) -> None:
        """Drop every entry for (agent, skill): a new binding replaces the old one."""
        for key in [k for k in self._entries if (k.agent, k.skill_id) == (agent, skill_id)]:
            del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)
