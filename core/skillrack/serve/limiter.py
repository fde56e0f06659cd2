"""At most ``max_concurrent_tasks`` handlers running at once for one caller.

One caller must not take every worker of the agent.  A slot is taken once a
call has passed every check (it is then accepted for execution) and given
back when its handler returns, fails, parks or is cancelled.  A refused slot
means the task was never accepted, so the draft's state for it is
``TASK_STATE_REJECTED`` with ``resource_limit_exceeded``.  Counting is per
process: replicas each apply the limit to the tasks they run.

Slots are counted per :func:`slot_key`: an authenticated caller by tenant and
identity, an anonymous one by client address.  Counting every anonymous
caller under one name would let one of them (or one hung handler) lock all
the others out; counting an authenticated caller by address would let it take
a set of slots from every address it can use.  A slot is given back at the
handler's deadline even when the handler ignores cancellation (see
:mod:`skillrack.serve.executor`), so a hung handler cannot hold one for ever.
"""

from __future__ import annotations

from skillrack.errors import ConditionError, ErrorCode
from skillrack.serve.context import Caller


def slot_key(caller: Caller, client_host: str | None) -> str:
    """Whose slots a call counts against: the tenant's identity, else the client address."""
    if caller.authenticated:
        return f"id:{caller.tenant}/{caller.identity}"
    return f"ip:{client_host or '?'}"


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
    """Counts running tasks per caller (see :func:`slot_key`)."""

    def __init__(self, per_caller: int) -> None:
        self.per_caller = per_caller
        self._running: dict[str, int] = {}

    def acquire(self, caller: Caller, client_host: str | None = None) -> Slot:
        """A slot for ``caller`` (calling from ``client_host``), or ``resource_limit_exceeded``."""
        key = slot_key(caller, client_host)
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
