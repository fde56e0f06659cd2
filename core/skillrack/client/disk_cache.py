"""A small on-disk cache of Agent Cards and verified documents: a repeated ``call``, one request.

The draft: "Interface retrieval and validation SHOULD NOT add a
describe_skill exchange to every task."  Within one process the memory
caches see to that; a command line starts a new process each time, and
without this cache every ``skillrack call`` would cost a card request, a
``describe_skill`` exchange (a unit of the caller's rate limit) and the call.

What is kept, in one directory (``$SKILLRACK_CACHE_DIR``, else
``$XDG_CACHE_HOME/skillrack``, else ``~/.cache/skillrack``; mode 0700):

* ``cards/``: each agent's card bytes, its ETag, and until when it is fresh
  by the card's own ``Cache-Control`` (``max-age`` less ``Age``; nothing is
  stored for ``no-store``, and ``no-cache`` or no ``max-age`` means it is
  revalidated with ``If-None-Match`` before use).
* ``interfaces/``: each verified document, under the draft's cache key
  (agent, skill, skill version, interface version, interface digest).

Nothing read back is trusted more than what the network sends: a stored card
is parsed and its signature verified against the pinned keys again
(:func:`~skillrack.client.cards.parse_card`); a stored document is verified
again in full (:func:`~skillrack.interface.document.verify_document`), its
computed digest must equal the key's, and the schema trust policy applies.
A changed advertised digest simply misses.  Files are written atomically
(a temporary file, then a rename); a file that cannot be read, or is larger
than ``max_bytes``, is a miss.  Each directory holds at most ``max_entries``
files, the least recently written removed first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillrack.client.cache import CacheKey

#: Environment variable naming the directory; set to the empty string, no disk cache.
CACHE_ENV = "SKILLRACK_CACHE_DIR"
MAX_ENTRIES = 256
MAX_BYTES = 8_000_000


def default_directory() -> Path | None:
    """Where the cache lives by default (see the module docstring); None when turned off."""
    given = os.environ.get(CACHE_ENV)
    if given is not None:
        return Path(given) if given else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "skillrack"


@dataclass(frozen=True)
class StoredCard:
    """A card read back: its bytes, ETag, and until when (epoch seconds) it is fresh."""

    body: bytes
    etag: str | None
    fresh_until: float

    @property
    def fresh(self) -> bool:
        return time.time() < self.fresh_until


class DiskCache:
    """Cards and verified documents kept between runs (module docstring)."""

    def __init__(
        self, directory: Path, *, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES
    ) -> None:
        self.directory = directory
        self.max_entries = max_entries
        self.max_bytes = max_bytes

    # -- cards ---------------------------------------------------------------------------

    def card(self, agent: str) -> StoredCard | None:
        entry = self._read("cards", agent)
        if entry is None or entry.get("agent") != agent or not isinstance(entry.get("body"), str):
            return None
        etag, until = entry.get("etag"), entry.get("fresh_until")
        return StoredCard(
            entry["body"].encode("utf-8"),
            etag if isinstance(etag, str) else None,
            float(until) if isinstance(until, int | float) else 0.0,
        )

    def put_card(self, agent: str, body: bytes, etag: str | None, fresh_for: float | None) -> None:
        """Keep ``body``; fresh for ``fresh_for`` seconds from now (None: revalidate first)."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return
        until = time.time() + fresh_for if fresh_for else 0.0
        entry = {"agent": agent, "etag": etag, "fresh_until": until, "body": text}
        self._write("cards", agent, entry)

    def refresh_card(self, agent: str, stored: StoredCard, fresh_for: float | None) -> None:
        """A 304: the same bytes, fresh again for ``fresh_for`` seconds."""
        self.put_card(agent, stored.body, stored.etag, fresh_for)

    def forget_card(self, agent: str) -> None:
        with contextlib.suppress(OSError):
            self._path("cards", agent).unlink()

    # -- documents -----------------------------------------------------------------------

    def document(self, key: CacheKey) -> Any | None:
        """The document stored under ``key`` (to be verified again by the caller), or None."""
        entry = self._read("interfaces", _key_text(key))
        if entry is None or entry.get("key") != _key_list(key):
            return None
        return entry.get("document")

    def put_document(self, key: CacheKey, document: Any) -> None:
        self._write("interfaces", _key_text(key), {"key": _key_list(key), "document": document})

    # -- files ---------------------------------------------------------------------------

    def _path(self, kind: str, name: str) -> Path:
        return self.directory / kind / (hashlib.sha256(name.encode()).hexdigest() + ".json")

    def _read(self, kind: str, name: str) -> dict[str, Any] | None:
        path = self._path(kind, name)
        try:
            with path.open("rb") as handle:
                raw = handle.read(self.max_bytes + 1)
            value = json.loads(raw) if len(raw) <= self.max_bytes else None
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def _write(self, kind: str, name: str, value: dict[str, Any]) -> None:
        """Write ``value`` atomically; a cache that cannot be written is simply not kept."""
        folder = self.directory / kind
        encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if len(encoded) > self.max_bytes:
            return
        temporary = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            folder.mkdir(exist_ok=True, mode=0o700)
            handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(handle, "wb") as out:
                out.write(encoded)
            os.replace(temporary, self._path(kind, name))
            temporary = None
            self._prune(folder)
        except OSError:
            return
        finally:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)

    def _prune(self, folder: Path) -> None:
        files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for path in files[: max(0, len(files) - self.max_entries)]:
            with contextlib.suppress(OSError):
                path.unlink()


def _key_list(key: CacheKey) -> list[str]:
    return [key.agent, key.skill_id, key.skill_version, key.interface_version, key.interface_digest]


def _key_text(key: CacheKey) -> str:
    return "\n".join(_key_list(key))
