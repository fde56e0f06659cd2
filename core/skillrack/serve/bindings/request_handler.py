"""The request handler every binding calls: a2a-sdk's, with skillrack's checks and blocking path.

JSON-RPC, HTTP+JSON and gRPC all end in one :class:`SkillrackRequestHandler`
(built once by :func:`skillrack.serve.server.build_server`), so a task, its
Artifacts and the draft's errors are the same objects whichever binding
carried the call.  :class:`ContextBuilder` puts the caller middleware
established on a2a-sdk's call context; :func:`tenant_scope` is whose tasks a
store may show a caller.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import Any, cast

from a2a.compat.v0_3.versions import is_legacy_version
from a2a.server.agent_execution import RequestContextBuilder, SimpleRequestContextBuilder
from a2a.server.cluster.task_store import StoredTask, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
)
from a2a.server.tasks import TaskStore
from a2a.types import (
    CancelTaskRequest,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import (
    InternalError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    UnsupportedOperationError,
)
from a2a.utils.task import apply_history_length, validate_history_length
from starlette.requests import Request

from skillrack.errors import ErrorCode
from skillrack.host.registry import Registry
from skillrack.protocol.ids import random_uuid
from skillrack.serve.bindings.blocking import (
    TERMINAL,
    BlockingTurn,
    Saves,
    VersionedSaves,
    lacks_required_field,
)
from skillrack.serve.bindings.call_context import bind_call
from skillrack.serve.bindings.card import (
    LEGACY_PROTOCOL_VERSION,
)
from skillrack.serve.bindings.push import PushUrlCheck
from skillrack.serve.execution.input_deadline import Armed, deadline_message, stored_park
from skillrack.serve.execution.restarts import restart_message
from skillrack.serve.execution.task_record import skill_of, started_by
from skillrack.serve.middleware.error_sanitizer import OWN_ERROR
from skillrack.serve.scope import ACTIVATED_EXTENSIONS_KEY, CALLER_KEY
from skillrack.serve.security.caller import ANONYMOUS, Caller, owner_of, scheme_of
from skillrack.serve.stores.cluster import ClusterTaskStore

logger = logging.getLogger(__name__)


def tenant_scope(context: ServerCallContext) -> str:
    """The owner of a task: the caller's tenant, else the caller's own identity.

    Taken from the credential (via authentication), never from message content
    or the A2A ``tenant`` field.
    """
    return owner_of(context.state.get(CALLER_KEY, ANONYMOUS))


def caller_scope(context: ServerCallContext) -> str:
    """The owner of a push config: the caller itself (its task's owner, then its identity).

    A push config holds the caller's webhook credentials, so another caller of
    the same tenant must neither read nor replace it
    (:mod:`skillrack.serve.stores.push_configs`).
    """
    caller = context.state.get(CALLER_KEY, ANONYMOUS)
    return f"{owner_of(caller)}/caller:{caller.identity}"


def _same_starter(started: tuple[str, str, str], caller: Caller) -> bool:
    """Whether ``caller`` is who started a task: identity and tenant, and the scheme when
    both are known (a task recorded before schemes were compares identity and tenant)."""
    identity, tenant, scheme = started
    if (identity, tenant) != (caller.identity, caller.tenant):
        return False
    return not scheme or scheme == scheme_of(caller)


def is_a2a_0_3(context: ServerCallContext) -> bool:
    """Whether the request came through a2a-sdk's A2A 0.3 layer (``[server] a2a_0_3``).

    A request without ``A2A-Version`` is an A2A 0.3 request (A2A 1.0 section
    3.6.2); the 1.0 routes refuse it (``VersionNotSupportedError``), so one
    that reached the handler came through the 0.3 routes.
    """
    headers = context.state.get("headers", {})
    return is_legacy_version(headers.get("a2a-version") or LEGACY_PROTOCOL_VERSION)


class ContextBuilder(DefaultServerCallContextBuilder):
    """Keeps a2a-sdk's state (headers: the A2A-Version check needs them) and adds ours."""

    def build(self, request: Request) -> ServerCallContext:
        return bind_call(
            super().build(request),
            request.scope.get(CALLER_KEY, ANONYMOUS),
            request.client.host if request.client else None,
            request.scope.setdefault(ACTIVATED_EXTENSIONS_KEY, set()),
        )


class SkillrackRequestHandler(DefaultRequestHandler):
    """a2a-sdk's request handler, with skillrack's checks and its blocking path.

    CancelTask is refused for non-cancellable skills before a2a-sdk touches
    the task: a2a-sdk cancels the executor and marks the task FAILED even when
    the executor refuses to cancel; refusing here leaves the task running to
    its normal end, as A2A's TaskNotCancelableError promises.

    A blocking SendMessage that starts a task runs on the blocking path
    (:mod:`skillrack.serve.bindings.blocking`) when nothing else needs a2a-sdk's event
    machinery: no push sender, no versioned store but skillrack's cluster
    store (whose event log it keeps as a2a-sdk would), no push config in the
    request, not ``returnImmediately``, no required field missing.  Every
    other request takes a2a-sdk's path.
    """

    def __init__(
        self,
        *args: Any,
        registry: Registry,
        push_check: PushUrlCheck | None = None,
        blocking: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._registry = registry
        self._push_check = push_check
        store = self.task_store
        plain = kwargs.get("event_stream") is None and not isinstance(store, VersionedTaskStore)
        self._blocking = (
            blocking
            and kwargs.get("push_sender") is None
            and not kwargs.get("validate_input_modes", False)
            # Cluster mode: only skillrack's store, whose saves of every event cost no
            # transaction of their own (skillrack.serve.bindings.blocking, VersionedSaves).
            and (plain or isinstance(store, ClusterTaskStore))
        )
        # a2a-sdk's own default when none is given.
        self._context_builder: RequestContextBuilder = kwargs.get(
            "request_context_builder"
        ) or SimpleRequestContextBuilder(should_populate_referred_tasks=False, task_store=None)
        #: The blocking turns running now, by task id.
        self._turns: dict[str, BlockingTurn] = {}
        #: The store when it is the cluster store (looked up once: an ABC's isinstance is not free).
        self._cluster_store = store if isinstance(store, ClusterTaskStore) else None

    async def _check_push_config(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> None:
        """A webhook given with the message must pass the push URL check before anything runs."""
        configuration = params.configuration
        if configuration.HasField("task_push_notification_config"):
            await self._push_allowed(configuration.task_push_notification_config.url, context)

    async def _push_allowed(self, url: str, context: ServerCallContext) -> None:
        """The webhook's URL passes the check, and the caller speaks A2A 1.0.

        a2a-sdk's sender posts A2A 1.0 ``StreamResponse`` objects whoever set the
        webhook; an A2A 0.3 receiver expects 0.3 objects, so a 0.3 caller is told
        push is not offered to it rather than sent what it cannot read.
        """
        if self._push_check is None:
            return
        if is_a2a_0_3(context):
            raise PushNotificationNotSupportedError(
                message="push notifications are offered to A2A 1.0 callers only (webhooks "
                "receive A2A 1.0 objects); set the webhook with A2A-Version: 1.0"
            )
        await self._push_check.require(url)

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        await self._push_allowed(params.url, context)
        result: TaskPushNotificationConfig = await super().on_create_task_push_notification_config(
            params, context
        )
        return result

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        stored = await self.task_store.get(params.id, context)
        task = stored.task if isinstance(stored, StoredTask) else stored
        if task is not None:
            self._refuse_another_caller(task, params.id, context, "cancel it")
            skill_id = skill_of(task) or ""
            skill = self._registry.get(skill_id)
            base = self._registry.base_skills.get(skill_id)
            if (skill is not None and not skill.skill.interaction.cancellable) or (
                base is not None and not base.skill.cancellable
            ):
                raise TaskNotCancelableError(message=f"skill {skill_id!r} is not cancellable")
            turn = self._turns.get(params.id)
            if turn is not None and turn.executing:  # running on the blocking path
                return await self._cancel_blocking(turn, context)
            if turn is not None:
                # The executor has returned and its last save is under way: a cancel
                # now would change the answer but not the stored task.  Wait for the
                # save, then cancel the stored task as a2a-sdk does.
                await asyncio.wait({turn.done})
        result: Task | None = await super().on_cancel_task(params, context)
        return result

    @staticmethod
    async def _cancel_blocking(turn: BlockingTurn, context: ServerCallContext) -> Task:
        """What a2a-sdk's cancel of a task it runs answers: the task, CANCELED."""
        current = turn.events.task
        if current is not None and current.status.state in TERMINAL:
            raise TaskNotCancelableError
        try:
            result = await turn.cancel(context)
        except UnsupportedOperationError as exc:
            raise TaskNotCancelableError from exc
        if not isinstance(result, Task):  # as a2a-sdk's _cancel_local
            raise InternalError(message="Cancellation returned a message instead of a task.")
        return result

    async def _continue_context(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> None:
        """A follow-up Message that names its task but no context continues the task's context.

        a2a-sdk binds a task it loads from the store (after a restart, or on
        another replica than the one that started it) to a freshly generated
        context id when the Message names none, then refuses the executor's
        events, which carry the task's own context id.
        """
        message = params.message
        if message.task_id and not message.context_id:
            stored = await self.task_store.get(message.task_id, context)
            task = stored.task if isinstance(stored, StoredTask) else stored
            if task is not None:
                message.context_id = task.context_id

    async def _check_follow_up(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> None:
        """A Message to an existing task is accepted only from the caller who started it.

        Tasks are scoped to a tenant already (another tenant's task is not
        found); within a tenant, an approval or a question is bound to the
        person who asked, so another identity of the same tenant can neither
        continue, answer nor end the task.  Refused before a2a-sdk touches the
        task, which stays as it was.
        """
        task_id = params.message.task_id
        if not task_id:
            return
        stored = await self.task_store.get(task_id, context)
        task = stored.task if isinstance(stored, StoredTask) else stored
        if task is None:
            return  # a2a-sdk answers TaskNotFoundError
        self._refuse_another_caller(task, task_id, context, "send messages to it")

    @staticmethod
    def _refuse_another_caller(
        task: Task, task_id: str, context: ServerCallContext, action: str
    ) -> None:
        """``authorization_failed`` unless the caller is the one who started ``task``."""
        started = started_by(task)
        caller = context.state.get(CALLER_KEY, ANONYMOUS)
        if started is not None and not _same_starter(started, caller):
            raise InvalidRequestError(
                message=f"task {task_id} was started by another caller; only the caller who "
                f"started a task may {action} (authorization_failed)",
                data={**OWN_ERROR, "code": ErrorCode.AUTHORIZATION_FAILED.value},
            )

    async def resume_after_deadline(self, armed: Armed) -> None:
        """The host's turn when a question's deadline passed unanswered (no caller's Message).

        Sent as a follow-up Message from the caller who asked, through this
        handler as a binding would send it (so the store, the event log of a
        cluster, push notifications and subscribers see the turn as any
        other), after checking that the task still waits on that question.
        """
        call = bind_call(ServerCallContext(), armed.caller, None, set())

        async def load() -> Task | None:
            stored = await self.task_store.get(armed.task_id, call)
            return stored.task if isinstance(stored, StoredTask) else stored

        task = await stored_park(load, armed)
        if task is None:
            return  # answered, cancelled or gone meanwhile
        message = deadline_message(armed.task_id, task.context_id, armed.asked)
        await self.on_message_send(SendMessageRequest(message=message), call)

    async def run_again(self, task: Task, caller: Caller) -> None:
        """Run a restartable ``task`` again after its process died, as ``caller`` who started it.

        The host's restart Message (:func:`~skillrack.serve.execution.restarts.restart_message`)
        goes through this handler as a follow-up would, so the turn is authorized
        again and its events reach the store, the event log, push notifications
        and subscribers as any other turn's.
        """
        call = bind_call(ServerCallContext(), caller, None, set())
        await self.on_message_send(SendMessageRequest(message=restart_message(task)), call)

    async def _after_blocking_turn(self, task_id: str) -> None:
        """A request about a task still running on the blocking path waits for its end."""
        turn = self._turns.get(task_id) if task_id else None
        if turn is not None:
            await asyncio.wait({turn.done})

    def _takes_blocking_path(self, params: SendMessageRequest) -> bool:
        configuration = params.configuration
        return (
            self._blocking
            and not params.message.task_id
            and not configuration.return_immediately
            and not configuration.HasField("task_push_notification_config")
            and not lacks_required_field(params)
        )

    async def _send_blocking(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        """Run the turn on the blocking path (:mod:`~skillrack.serve.bindings.blocking`).

        Answers its final Task.
        """
        validate_history_length(params.configuration)
        # The new ids given, as a2a-sdk's RequestContext would make them (a random UUID
        # each), without its generator objects and a pydantic model per id.
        request = await self._context_builder.build(
            params=params,
            task_id=random_uuid(),
            context_id=params.message.context_id or random_uuid(),
            task=None,
            context=context,
        )
        task_id = request.task_id
        assert task_id is not None
        saves: Saves
        if self._cluster_store is not None:
            saves = VersionedSaves(self._cluster_store, context)
        else:  # no other versioned store takes this path (``_blocking``)
            saves = Saves(cast(TaskStore, self.task_store), context)
        turn = BlockingTurn(self.agent_executor, request, context, saves)
        self._turns[task_id] = turn
        run = turn.start()

        def finished(run: asyncio.Task[Task | Message]) -> None:
            self._turns.pop(task_id, None)
            if not run.cancelled():
                run.exception()  # retrieved even when the caller has gone

        run.add_done_callback(finished)
        # Shielded: a caller that goes away does not stop the task, as on a2a-sdk's path.
        result = await asyncio.shield(run)
        if isinstance(result, Message):  # a direct reply, returned as a2a-sdk returns it
            return result
        # Cluster mode: what the answer shows is committed first (a settled state is
        # normally committed by its own save; this also waits for a commit under way).
        await self._publish_pending()
        # A copy, as a2a-sdk answers with a copy of its task: upb lays a copied map (a Data
        # Part's members) out anew, and the answer must list them in the same order.
        answer = Task()
        answer.CopyFrom(result)
        return apply_history_length(answer, params.configuration)

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        if self._takes_blocking_path(params):
            return await self._send_blocking(params, context)
        await self._check_push_config(params, context)
        await self._check_follow_up(params, context)
        await self._after_blocking_turn(params.message.task_id)
        await self._continue_context(params, context)
        result: Message | Task = await super().on_message_send(params, context)
        await self._publish_pending()
        return result

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        await self._check_push_config(params, context)
        await self._check_follow_up(params, context)
        await self._after_blocking_turn(params.message.task_id)
        await self._continue_context(params, context)
        first = True
        async for event in super().on_message_send_stream(params, context):
            if first:
                await self._publish_pending()
                first = False
            yield event

    async def _publish_pending(self) -> None:
        """Commit a cluster store's in-progress saves before a client hears of the task.

        A client told of a task (``returnImmediately``, a stream's first
        event) may ask any replica about it next; a settled state is
        committed anyway (:class:`~skillrack.serve.stores.cluster.ClusterTaskStore`).
        """
        if self._cluster_store is not None:
            await self._cluster_store.commit()

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        turn = self._turns.get(params.id)
        if turn is not None and await self.task_store.get(params.id, context) is not None:
            # Running on the blocking path (the store lookup: the caller may see the task):
            # the task as it is, then its events until the run ends, as a2a-sdk streams them.
            tapped = turn.tap()
            if tapped is not None:
                snapshot, queue = tapped
                try:
                    yield snapshot
                    while (event := await queue.get()) is not None:
                        yield event
                finally:
                    turn.untap(queue)
                return
        await self._after_blocking_turn(params.id)
        async for event in super().on_subscribe_to_task(params, context):
            yield event
