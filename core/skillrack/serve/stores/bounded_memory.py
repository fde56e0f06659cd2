"""The ``--store memory`` task store, with its settled tasks evicted past a count or an age.

a2a-sdk's ``InMemoryTaskStore`` keeps every task until the process stops,
about 6 kB each: a long-running agent on the memory store grows without
bound.  ``BoundedMemoryTaskStore`` is that store with a retention rule:

- a *settled* task (completed, failed, canceled, rejected: ``TERMINAL``)
  is evicted, oldest-settled first, once more than ``max_tasks`` tasks are
  settled, or once it has been settled for ``ttl`` seconds;
- a task that is not settled (submitted, working, input-required,
  auth-required) is never evicted: someone is working on it or waiting for
  its caller, and evicting it would lose that work;
- ``0`` turns a bound off (``max_tasks = 0``: no count limit; ``ttl = 0``:
  no age limit; both 0 is a2a-sdk's unbounded store).

An evicted task is absent: ``GetTask`` answers ``TaskNotFoundError``, as for
an id that never existed.  The bookkeeping is an ``OrderedDict`` of settled
tasks in the order they settled, so a save costs O(1) amortized (each task
is evicted at most once).  The count is over all owners (tenants) together:
it bounds the process's memory, not a tenant's share.  Age eviction happens
at the next save, get or list, so no timer runs.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import OwnerResolver
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task

from skillrack.protocol.states import TERMINAL

#: A context's ``state`` key naming the owner directly: how an eviction reaches
#: the SDK's store (which finds tasks by the owner its resolver gives) without a
#: caller's context.  Only this module sets it, on contexts it builds itself.
_EVICT_OWNER = "skillrack.bounded_memory.owner"


class BoundedMemoryTaskStore(InMemoryTaskStore):
    """a2a-sdk's in-memory task store, keeping at most ``max_tasks`` settled tasks for ``ttl`` s."""

    def __init__(
        self,
        owner_resolver: OwnerResolver,
        *,
        max_tasks: int,
        ttl: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        def resolve(context: ServerCallContext) -> str:
            if _EVICT_OWNER in context.state:
                owner: str = context.state[_EVICT_OWNER]
                return owner
            return owner_resolver(context)

        super().__init__(owner_resolver=resolve)
        self._owner_of = owner_resolver
        self._max_tasks = max_tasks
        self._ttl = ttl
        self._clock = clock
        #: Settled tasks by (owner, task id), oldest-settled first, with when they settled.
        self._settled: OrderedDict[tuple[str, str], float] = OrderedDict()

    @property
    def settled(self) -> int:
        """How many settled tasks the store holds (what ``max_tasks`` bounds)."""
        return len(self._settled)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await super().save(task, context)
        key = (self._owner_of(context), task.id)
        if task.status.state in TERMINAL:
            # A settled task saved again (a final artifact) keeps its place in line.
            self._settled.setdefault(key, self._clock())
        else:
            self._settled.pop(key, None)
        if self._due():
            await self._evict()

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        if self._due():
            await self._evict()
        return await super().get(task_id, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        if self._due():
            await self._evict()
        return await super().list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._settled.pop((self._owner_of(context), task_id), None)
        await super().delete(task_id, context)

    def _due(self) -> bool:
        """Whether :meth:`_evict` would drop anything now (most operations: no).

        The same test as the loop's first step, without a coroutine: a store
        operation of an invocation (eight of them) costs one call here.
        """
        settled = self._settled
        if not settled:
            return False
        if 0 < self._max_tasks < len(settled):
            return True
        return self._ttl > 0 and next(iter(settled.values())) <= self._clock() - self._ttl

    async def _evict(self) -> None:
        """Drop the oldest settled tasks while past the count, or while past the age."""
        deadline = self._clock() - self._ttl if self._ttl > 0 else None
        while self._settled:
            key, settled_at = next(iter(self._settled.items()))
            over_count = 0 < self._max_tasks < len(self._settled)
            too_old = deadline is not None and settled_at <= deadline
            if not (over_count or too_old):
                return
            del self._settled[key]
            owner, task_id = key
            await super().delete(task_id, ServerCallContext(state={_EVICT_OWNER: owner}))
