"""At most ``max_concurrent_tasks`` handlers running at once for one caller.

One caller must not take every worker of the agent.  A slot is taken once a
call has passed every check (it is then accepted for execution) and given
back when its handler returns, fails, parks or is cancelled.  A refused slot
means the task was never accepted, so the draft's state for it is
``TASK_STATE_REJECTED`` with ``resource_limit_exceeded``.  The counting is a
:class:`~skillrack.serve.stores.counters.LimitCounter`: per process (replicas
each apply the limit to the tasks they run), or in Redis shared by every
replica when ``[server] limits_store`` names one (a slot is then a lease that
expires if its replica dies).

Slots are counted per :func:`slot_key`: an authenticated caller by tenant and
identity, an anonymous one by client address.  Counting every anonymous
caller under one name would let one of them (or one hung handler) lock all
the others out; counting an authenticated caller by address would let it take
a set of slots from every address it can use.  A handler that ignores
cancellation at its deadline keeps its slot until it really ends (see
:mod:`skillrack.serve.execution.executor`): its task has failed, but it still
runs for its caller, who therefore cannot pile up more than
``max_concurrent_tasks`` hung handlers.
"""

from __future__ import annotations

from skillrack.errors import ConditionError, ErrorCode
from skillrack.serve.security.caller import Caller, qualified_identity
from skillrack.serve.stores.counters import LimitCounter, LocalCounter


def slot_key(caller: Caller, client_host: str | None) -> str:
    """Whose slots a call counts against: the tenant's identity, else the client address."""
    if caller.authenticated:
        return f"id:{caller.tenant}/{qualified_identity(caller)}"
    return f"ip:{client_host or '?'}"


class Slot:
    """One running task of one caller; :meth:`release` gives it back (once)."""

    def __init__(self, counter: LimitCounter, key: str, token: str) -> None:
        self._counter = counter
        self._key = key
        self._token: str | None = token

    async def release(self) -> None:
        if self._token is not None:
            token, self._token = self._token, None
            await self._counter.release(self._key, token)


class ConcurrencyLimiter:
    """Counts running tasks per caller (see :func:`slot_key`) with ``counter``."""

    def __init__(self, per_caller: int, counter: LimitCounter | None = None) -> None:
        self.per_caller = per_caller
        self.counter = counter if counter is not None else LocalCounter()

    async def acquire(self, caller: Caller, client_host: str | None = None) -> Slot:
        """A slot for ``caller`` (calling from ``client_host``), or ``resource_limit_exceeded``."""
        key = slot_key(caller, client_host)
        token = await self.counter.acquire(key, self.per_caller)
        if token is None:
            raise ConditionError(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED, "too many tasks running for this caller"
            )
        return Slot(self.counter, key, token)
