"""Events per key over a sliding window, in this process's memory.

The one in-memory counter behind ``rate_per_minute`` on a single replica and
``failed_auth_per_minute`` everywhere: cheap enough to consult on every request,
bounded in the keys it remembers.
"""

from __future__ import annotations

import time
from collections import deque

#: Beyond this many keys, the ones idle for a whole window are forgotten.
MAX_KEYS = 100_000


class SlidingWindow:
    """Events per key over the last ``seconds``; cheap enough to consult on every request."""

    def __init__(self, limit: int, seconds: float = 60.0) -> None:
        self.limit = limit
        self.seconds = seconds
        self._seen: dict[str, deque[float]] = {}

    def retry_after(self, key: str) -> int | None:
        """Seconds until ``key`` may have another event, or None when it may now."""
        now = time.monotonic()
        window = self._seen.get(key)
        if window is None:
            return None
        while window and now - window[0] > self.seconds:
            window.popleft()
        if len(window) < self.limit:
            return None
        return max(1, int(self.seconds + 1 - (now - window[0])))

    def record(self, key: str) -> None:
        """Count one event of ``key`` now."""
        now = time.monotonic()
        self._seen.setdefault(key, deque()).append(now)
        if len(self._seen) > MAX_KEYS:  # bound memory: forget idle keys
            idle = [k for k, w in self._seen.items() if not w or now - w[-1] > self.seconds]
            for stale in idle:
                del self._seen[stale]
