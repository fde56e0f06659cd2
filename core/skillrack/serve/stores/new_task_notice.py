"""A request context builder that tells the task store about the task ids a2a-sdk makes up.

a2a-sdk builds a request context for every message and, for a new task,
generates its id there; it then looks that id up in the store before the
first save.  The stores skillrack opens (one process, or cluster mode) can
answer that look-up from memory when they are told the id is new, instead of
asking the database about a UUID generated a moment ago.
"""

from __future__ import annotations

from a2a.server.agent_execution import RequestContext, SimpleRequestContextBuilder
from a2a.server.context import ServerCallContext
from a2a.types import SendMessageRequest, Task

from skillrack.serve.stores.cluster import ClusterTaskStore
from skillrack.serve.stores.storage import SingleProcessTaskStore


class NewTaskNotice(SimpleRequestContextBuilder):
    """a2a-sdk's request context builder, telling the store about the task ids it generates.

    a2a-sdk then looks the new task up before its first save; the store
    answers that from memory instead of asking the database about a UUID
    that was generated a moment ago.
    """

    def __init__(self, store: SingleProcessTaskStore | ClusterTaskStore) -> None:
        super().__init__()
        self._store = store

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        # New when the Message names no task: its id is generated now (by a2a-sdk's
        # context, or given by skillrack's blocking path, which makes its own).
        new = params is None or not params.message.task_id
        built = await super().build(context, params, task_id, context_id, task)
        if new and task is None and built.task_id:
            self._store.note_new(built.task_id, context)
        return built
