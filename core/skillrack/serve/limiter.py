"""At most ``max_concurrent_tasks`` handlers running at once for one caller.

One caller must not take every worker of the agent.  A slot is taken once a
call has passed every check (it is then accepted for execution) and given
back when its handler returns, fails, parks or is cancelled.  A refused slot
means the task was never accepted, so the draft's state for it is
``TASK_STATE_REJECTED`` with ``resource_limit_exceeded``.  Counting is per
process: replicas each apply the limit to the tasks they run.
"""

from __future__ import annotations

from skillrack.errors import ConditionError, ErrorCode
from skillrack.serve.context import Caller


class Slot:
    """One running task of one caller; :meth:`release` gives it back (once)."""

    def __init__(self, limiter: ConcurrencyLimiter, key: str) -> None:
        self._limiter = limiter
        self._key: str | None = key

    def release(self) -> None:
        if self._key is not None:
            self._limiter._release(self._key)
            self._key = None


class ConcurrencyLimiter:
    """Counts running tasks per caller (tenant and identity, as authentication established)."""

    def __init__(self, per_caller: int) -> None:
        self.per_caller = per_caller
        self._running: dict[str, int] = {}

    def acquire(self, caller: Caller) -> Slot:
        """A slot for ``caller``, or ``resource_limit_exceeded`` when it has none left."""
        key = f"{caller.tenant}/{caller.identity}"
        running = self._running.get(key, 0)
        if running >= self.per_caller:
            raise ConditionError(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED, "too many tasks running for this caller"
            )
        self._running[key] = running + 1
        return Slot(self, key)

    def _release(self, key: str) -> None:
        self._running[key] -= 1
        if not self._running[key]:
            del self._running[key]  # idle callers cost nothing
