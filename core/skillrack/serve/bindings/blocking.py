"""A blocking SendMessage that starts a task, run without a2a-sdk's event machinery.

For every SendMessage, a2a-sdk's ``DefaultRequestHandler`` starts an
``ActiveTask``: a producer task that runs the executor, a consumer task that
applies each event to the Task and saves it, two event queues with their
dispatch tasks, and a subscription the request waits on.  For the five events
of an invocation that is about 20 asyncio tasks, 30 queue operations and five
saves of the whole Task, only to return the last of them.  A caller that waits
for the answer (not ``returnImmediately``, not streaming) of a new task
(no ``taskId``) needs none of it: :class:`BlockingTurn` runs the executor in
one asyncio task, applies its events to one Task as a2a-sdk's ``TaskManager``
would (the same status, history, metadata and artifact rules; a2a-sdk's own
``append_artifact_to_task``), saves it when its status moves on before the
end (so ``GetTask``, ``ListTasks`` and the console see it WORKING while the
handler runs, with each progress message, as a2a-sdk's path shows it) and
once more when it ends, and returns it: two saves for a plain invocation
(WORKING, then the end), not one per event.  The final Task, and so the
answer, is the one a2a-sdk's path returns.

In cluster mode (:class:`~skillrack.serve.stores.cluster.ClusterTaskStore`,
``--workers``, PostgreSQL) other replicas follow a task through the store's
event log, so :class:`VersionedSaves` saves every event a2a-sdk's consumer
would save, in order, with the same versions (the store keeps in-progress
saves in memory and commits a settled one before it returns, so this costs
no extra transaction).  A CancelTask through another replica writes
CANCELED there; this replica learns of it as a2a-sdk's does, when its next
save is refused (``ConcurrentTaskModificationError``): the run is stopped
and the caller gets the stored, cancelled task (see :class:`TaskEvents`).

What the request handler (:mod:`skillrack.serve.server`) keeps on a2a-sdk's path:
streaming, follow-ups to an existing task, ``returnImmediately``, a push
config in the request, a push sender, a versioned store other than
skillrack's cluster store, and any request a2a-sdk would refuse for a
missing required field (:func:`lacks_required_field` finds them, a2a-sdk
writes the error).  While a blocking turn runs, a CancelTask for its task
through this process cancels it here, as a2a-sdk cancels its own (the
executor's ``cancel``, then the run); a SubscribeToTask through this process
gets what a2a-sdk's would: the task as it is, then each event that follows
until the run ends (:meth:`BlockingTurn.tap`: a queue fed only while
someone subscribed), and through another replica a2a-sdk's replay of the
event log; a follow-up Message waits for it to end.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from functools import cache

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.events.event_queue import Event
from a2a.server.tasks import TaskStore
from a2a.server.tasks.task_manager import append_artifact_to_task
from a2a.types import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils import telemetry
from a2a.utils.errors import InternalError, InvalidAgentResponseError, InvalidParamsError
from a2a.utils.proto_utils import validate_proto_required_fields
from google.api.field_behavior_pb2 import (  # type: ignore[import-untyped]
    REQUIRED,
    field_behavior,
)
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage

#: Where a blocking SendMessage returns (a2a-sdk's terminal and interrupted states).
SETTLED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
    }
)
TERMINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
    }
)


class Saves:
    """Where a blocking turn saves its task: a plain ``TaskStore``, the whole task at a time.

    ``every_event`` is False: :class:`TaskEvents` saves only when others must
    see the task as it is (see there); the events themselves are not kept.
    """

    every_event = False

    def __init__(self, store: TaskStore, call: ServerCallContext) -> None:
        self._store = store
        self._call = call

    async def save(self, task: Task, event: Event | None) -> None:
        await self._store.save(task, self._call)

    async def reload(self, task_id: str) -> Task | None:
        """The task as stored, after a save was refused (a plain store never refuses one)."""
        raise AssertionError("a plain task store never refuses a save")


class VersionedSaves(Saves):
    """Saves to a versioned store in cluster mode: every event, with the version it makes.

    Other replicas stream a task they do not run from the store's event log
    (a2a-sdk's ``TaskEventStream``), so each event a2a-sdk's ``TaskManager``
    would save is saved, in the same order and with the same versions: the
    Task (version 1), then one version per status or artifact update.  A
    save refused with ``ConcurrentTaskModificationError`` means another
    replica wrote the task (a CancelTask through it); :class:`TaskEvents`
    then reloads it, as a2a-sdk's consumer does.
    """

    every_event = True

    def __init__(self, store: VersionedTaskStore, call: ServerCallContext) -> None:
        self._versioned = store
        self._call = call
        self.version = TaskVersion.MISSING

    async def save(self, task: Task, event: Event | None) -> None:
        self.version = await self._versioned.save(
            task, event=event, prev=None, prev_version=self.version, context=self._call
        )

    async def reload(self, task_id: str) -> Task | None:
        stored = await self._versioned.get(task_id, self._call)
        if stored is None:
            self.version = TaskVersion.MISSING
            return None
        self.version = stored.version
        return stored.task


#: a2a-sdk's ``append_artifact_to_task``; without its tracing decorator when a2a-sdk's
#: instrumentation is off (the decorator would start a no-op span for each artifact).
_append_artifact: Callable[[Task, TaskArtifactUpdateEvent], None] = (
    append_artifact_to_task
    if telemetry.otel_installed and telemetry.otel_enabled
    else getattr(append_artifact_to_task, "__wrapped__", append_artifact_to_task)
)


class TaskEvents(EventQueue):
    """The executor's event queue on the blocking path: each event applied to one Task.

    The rules are a2a-sdk's ``TaskManager.save_task_event``: the first Task
    is the task; a status update moves the previous status message to the
    history, merges its metadata and replaces the status; an artifact update
    goes through ``append_artifact_to_task``.  Ids are checked as a2a-sdk
    checks them.  A Message as the first event is the whole answer (a base
    skill's direct reply), and any event after it is refused, as a2a-sdk
    refuses it.

    With a plain store (:class:`Saves`) the task is saved when others must
    see it as it is: after a status update that does not settle the turn
    (WORKING, a progress message), and after the first artifact of a task
    not saved yet.  The Task event itself is not saved: the executor's next
    event (WORKING, before the handler starts) would overwrite it at once;
    the turn's end saves a settled task.  In cluster mode
    (:class:`VersionedSaves`) every event is saved, one at a time, as
    a2a-sdk's consumer saves them; a save refused because another replica
    wrote the task reloads it: if it ended there (a CancelTask through
    another replica) the stored task is the answer and the executor is
    stopped (``CancelledError`` where it awaited the event, as a2a-sdk
    cancels its producer); otherwise the event is applied again to the
    stored task, once.  Each status or artifact update also goes to the
    ``taps`` (SubscribeToTask's queues), when there are any.
    """

    def __init__(self, task_id: str, context_id: str, saves: Saves) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self.task: Task | None = None
        self.message: Message | None = None
        self._saves = saves
        #: Cluster mode: one event applied and saved at a time, as a2a-sdk's one consumer.
        self._lock = asyncio.Lock() if saves.every_event else None
        #: Whether the store has the task yet.
        self.saved = False
        #: Another replica ended the task: ``task`` is the stored one, events are ignored.
        self.superseded = False
        #: Another replica kept changing the task: what the turn ends with (a2a-sdk's error).
        self.failure: Exception | None = None
        #: SubscribeToTask's queues; ``None`` ends each when the run has ended.
        self.taps: list[asyncio.Queue[Event | None]] = []
        #: The run has ended: nothing more will be fed to a tap.
        self.closed = False

    async def enqueue_event(self, event: Event) -> None:
        if self._lock is None:
            await self._enqueue(event)
            return
        async with self._lock:
            if self.superseded or self.failure is not None:
                return  # the executor was told to stop; what it still sends is dropped
            if (
                self.task is not None
                and self.task.status.state in TERMINAL
                and isinstance(event, TaskStatusUpdateEvent | TaskArtifactUpdateEvent)
            ):
                # a2a-sdk's consumer stops at a terminal state: a CANCELED racing a
                # COMPLETED already stored must not overwrite it on every replica.
                return
            await self._enqueue(event)

    @property
    def save_lock(self) -> asyncio.Lock | None:
        """Held while cluster mode saves an event: a run must not be cancelled inside a save."""
        return self._lock

    async def _enqueue(self, event: Event) -> None:
        if self.message is not None:
            if isinstance(event, Message):
                raise InvalidAgentResponseError("Multiple Message objects received.")
            raise InvalidAgentResponseError(
                f"Received {type(event).__name__} in message mode. Use Task with "
                "TaskStatusUpdateEvent and TaskArtifactUpdateEvent instead."
            )
        if isinstance(event, Task):
            if event.id != self.task_id:
                raise InternalError(message="Task ID mismatch in agent response")
            if self.task is None:
                self._check_context(event.context_id)
                self.task = event
                if self._saves.every_event:
                    await self._save_event(event, stop=True)
            return  # a2a-sdk ignores a second Task ("already exists")
        if isinstance(event, Message):
            if self.task is not None:
                raise InvalidAgentResponseError(
                    "Received Message object in task mode. Use TaskStatusUpdateEvent or "
                    "TaskArtifactUpdateEvent instead."
                )
            self.message = event
            return
        if not isinstance(event, TaskStatusUpdateEvent | TaskArtifactUpdateEvent):
            raise InternalError(message=f"unexpected event {type(event).__name__}")
        task = self.task
        if task is None:
            raise InvalidAgentResponseError(
                f"Agent should enqueue Task before {type(event).__name__} event"
            )
        if event.task_id != self.task_id:
            raise InvalidParamsError(
                message=f"Task in event doesn't match TaskManager {self.task_id} : {event.task_id}"
            )
        self._check_context(event.context_id)
        _apply(task, event)
        if self._saves.every_event:
            await self._save_event(event, stop=True)
            if self.superseded:
                return
        elif isinstance(event, TaskStatusUpdateEvent):
            if task.status.state not in SETTLED:
                self.saved = True
                await self._saves.save(task, event)
        elif not self.saved:
            self.saved = True
            await self._saves.save(task, event)
        for tap in self.taps:
            tap.put_nowait(event)

    async def _save_event(self, event: Event, *, stop: bool) -> None:
        """Cluster mode: save the task with ``event``; a refused save as a2a-sdk handles it.

        ``stop``: the executor is running and awaits this event, so it is
        stopped (``CancelledError``) when the task ended elsewhere or a save
        is refused twice.
        """
        assert self.task is not None
        try:
            await self._saves.save(self.task, event)
            return
        except ConcurrentTaskModificationError:
            stored = await self._saves.reload(self.task_id)
        if stored is not None and stored.status.state not in TERMINAL:
            # Changed elsewhere but still running: a2a-sdk applies the event again, to the
            # stored task (an update), or saves the Task it is over the stored one.
            if isinstance(event, TaskStatusUpdateEvent | TaskArtifactUpdateEvent):
                _apply(stored, event)
                self.task = stored
            try:
                await self._saves.save(self.task, event)
                return
            except ConcurrentTaskModificationError as exc:
                self.failure = InternalError(message=str(exc))
                await self._fail_stored()
        elif stored is not None:
            self.task = stored
            self.superseded = True
            snapshot = Task()
            snapshot.CopyFrom(stored)
            for tap in self.taps:  # as a2a-sdk gives its subscribers the stored task
                tap.put_nowait(snapshot)
        else:
            self.failure = InternalError(message=f"task {self.task_id} vanished from the store")
        if stop:
            raise asyncio.CancelledError

    async def _fail_stored(self) -> None:
        """After a save refused twice: FAILED over the stored task, as a2a-sdk's consumer writes it.

        Once, with the version just read: if another writer advanced the task
        again (or ended it), its state is kept.  Without this the stored task
        would stay in progress on every replica while the caller is told the
        turn failed.
        """
        stored = await self._saves.reload(self.task_id)
        if stored is None or stored.status.state in TERMINAL:
            return
        _end(stored, TaskState.TASK_STATE_FAILED, stamped=True)
        self.task = stored
        with contextlib.suppress(ConcurrentTaskModificationError):
            await self._saves.save(stored, _status_of(stored))

    async def settle(self, event: Event | None) -> None:
        """The turn's last save: with a plain store always; in cluster mode a state the end set.

        ``event`` is what a2a-sdk saves with that state (a status update for
        FAILED, the Task for CANCELED); ``None`` when the end set nothing,
        which in cluster mode has been saved already.
        """
        task = self.task
        assert task is not None
        if not self._saves.every_event:
            await self._saves.save(task, event)
            return
        if event is None:
            return
        assert self._lock is not None
        async with self._lock:
            if not self.superseded and self.failure is None:
                await self._save_event(event, stop=False)

    def close(self) -> None:
        """The run has ended: each subscriber's stream ends after what it was given."""
        self.closed = True
        for tap in self.taps:
            tap.put_nowait(None)
        self.taps.clear()

    def _check_context(self, context_id: str) -> None:
        if context_id != self.context_id:
            raise InvalidParamsError(
                message=f"Context in event doesn't match TaskManager {self.context_id} : "
                f"{context_id}"
            )


def _apply(task: Task, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent) -> None:
    """a2a-sdk's ``TaskManager.save_task_event`` for a status or an artifact update."""
    if isinstance(event, TaskStatusUpdateEvent):
        if task.status.HasField("message"):
            task.history.append(task.status.message)
        if event.metadata:
            task.metadata.MergeFrom(event.metadata)
        task.status.CopyFrom(event.status)
    else:
        _append_artifact(task, event)


class BlockingTurn:
    """One executor run for a blocking SendMessage, and what others may do meanwhile."""

    def __init__(
        self,
        executor: AgentExecutor,
        request: RequestContext,
        call: ServerCallContext,
        saves: Saves,
    ) -> None:
        assert request.task_id is not None and request.context_id is not None
        self.executor = executor
        self.request = request
        self.call = call
        self.events = TaskEvents(request.task_id, request.context_id, saves)
        self.cancel_requested = False
        #: The executor's ``cancel`` raised: the task ends FAILED, as a2a-sdk ends it.
        self.cancel_failed = False
        #: True while ``execute`` runs: a cancellation then lands inside it.
        self.executing = False
        self._run: asyncio.Task[Task | Message] | None = None

    def tap(self) -> tuple[Task, asyncio.Queue[Event | None]] | None:
        """A subscriber's start: a copy of the task as it is, and a queue of what follows.

        ``None`` when there is nothing to follow live: no task yet (or a
        direct reply), a task already in a terminal state, or the run over.
        The copy and the queue are taken in one step, so no event falls
        between them.
        """
        events = self.events
        task = events.task
        if events.closed or task is None or task.status.state in TERMINAL:
            return None
        snapshot = Task()
        snapshot.CopyFrom(task)
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        events.taps.append(queue)
        return snapshot, queue

    def untap(self, queue: asyncio.Queue[Event | None]) -> None:
        """A subscriber that went away is fed no more."""
        if queue in self.events.taps:
            self.events.taps.remove(queue)

    def start(self) -> asyncio.Task[Task | Message]:
        """Run the executor in an asyncio task of its own (it outlives a dropped request)."""
        self._run = asyncio.ensure_future(self._drive())
        return self._run

    @property
    def done(self) -> asyncio.Task[Task | Message]:
        assert self._run is not None
        return self._run

    async def _drive(self) -> Task | Message:
        try:
            return await self._execute()
        finally:
            self.events.close()

    async def _execute(self) -> Task | Message:
        events = self.events
        self.executing = True
        try:
            await self.executor.execute(self.request, events)
        except asyncio.CancelledError:
            if not (self.cancel_requested or events.superseded or events.failure is not None):
                raise
        except Exception:
            task = events.task
            if events.superseded and task is not None:
                # Ended by another replica: whatever the executor made of being stopped,
                # the stored task is the answer (as below, and as a2a-sdk answers).
                return task
            if (
                task is not None
                and task.status.state not in TERMINAL
                and not events.superseded
                and events.failure is None
            ):
                _end(task, TaskState.TASK_STATE_FAILED, stamped=True)
                await events.settle(_status_of(task))
            raise
        finally:
            self.executing = False
        if events.failure is not None:
            raise events.failure
        task = events.task
        if task is None:
            if events.message is not None:  # a direct reply: no task, nothing stored
                return events.message
            raise InvalidAgentResponseError("the agent ended without a task")
        if events.superseded:  # ended by another replica: the stored task is the answer
            return task
        ended: Event | None = None
        if self.cancel_failed and task.status.state not in TERMINAL:
            _end(task, TaskState.TASK_STATE_FAILED, stamped=False)
            ended = _status_of(task)
        elif self.cancel_requested and task.status.state not in TERMINAL:
            task.status.state = TaskState.TASK_STATE_CANCELED
            ended = task  # a2a-sdk saves the cancelled Task itself
        await events.settle(ended)
        if events.failure is not None:
            raise events.failure
        final = events.task  # the stored one, when another replica ended it meanwhile
        assert final is not None
        return final

    async def cancel(self, call: ServerCallContext) -> Task | Message:
        """a2a-sdk's cancel of a running task: the executor's ``cancel``, then the run's end."""
        task = self.events.task
        run = self.done
        if run.done():
            return await asyncio.shield(run)
        self.cancel_requested = True
        context = RequestContext(
            call_context=call,
            task_id=self.events.task_id,
            context_id=task.context_id if task is not None else None,
            task=task,
        )
        try:
            await self.executor.cancel(context, self.events)
        except asyncio.CancelledError:
            events = self.events
            if not (events.superseded or events.failure is not None):
                raise
            # Its CANCELED was refused: another replica ended the task; the run ends with it.
        except Exception:
            self.cancel_failed = True
            raise
        finally:
            lock = self.events.save_lock
            if lock is None:
                if self.executing:
                    run.cancel()
            else:
                # Cluster mode: never inside a save.  A save cut off mid-commit would
                # leave a settled state answered but not yet stored for other replicas.
                async with lock:
                    if self.executing:
                        run.cancel()
        return await asyncio.shield(run)


def _status_of(task: Task) -> TaskStatusUpdateEvent:
    """The status update a2a-sdk saves with a state it sets itself (FAILED)."""
    return TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)


def _end(task: Task, state: int, *, stamped: bool) -> None:
    """A status update to ``state`` applied as a2a-sdk applies the one it writes on a failure."""
    if task.status.HasField("message"):
        task.history.append(task.status.message)
    task.status.Clear()
    task.status.state = state  # type: ignore[assignment]
    if stamped:
        task.status.timestamp.GetCurrentTime()


# -- the required-field check, without walking Data Parts ------------------------------------


def lacks_required_field(message: ProtoMessage) -> bool:
    """Whether a2a-sdk's ``validate_proto_required_fields`` would refuse ``message``.

    a2a-sdk walks every field of the request, the ``Struct`` and ``Value``
    messages of each Data Part included (about 90 calls for one invocation);
    none of those can hold a REQUIRED field.  This walk visits only the fields
    that are REQUIRED or can lead to one, with a2a-sdk's rule of what missing
    means.  When it finds one, a2a-sdk's own check runs and writes the error.
    """
    return _violates(message)


def _violates(message: ProtoMessage) -> bool:
    for field, required, nested in _plan(message.DESCRIPTOR):
        value = getattr(message, field.name)
        if required:
            if field.is_repeated:
                if not value:
                    return True
            elif field.has_presence:
                if not message.HasField(field.name):
                    return True
            elif value == field.default_value:
                return True
        if nested:
            if not field.is_repeated:
                if message.HasField(field.name) and _violates(value):
                    return True
            elif _is_map(field):
                if any(isinstance(v, ProtoMessage) and _violates(v) for v in value.values()):
                    return True
            elif any(_violates(item) for item in value):
                return True
    return False


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and bool(field.message_type.GetOptions().map_entry)


@cache
def _plan(descriptor: Descriptor) -> tuple[tuple[FieldDescriptor, bool, bool], ...]:
    """The fields of ``descriptor`` worth visiting: (field, REQUIRED?, may hold REQUIRED?)."""
    plan = []
    for field in descriptor.fields:
        required = REQUIRED in field.GetOptions().Extensions[field_behavior]
        nested = field.type == FieldDescriptor.TYPE_MESSAGE and _holds_required(
            _target(field), frozenset()
        )
        if required or nested:
            plan.append((field, required, nested))
    return tuple(plan)


def _target(field: FieldDescriptor) -> Descriptor:
    message_type = field.message_type
    assert message_type is not None
    if message_type.GetOptions().map_entry:
        value_type = message_type.fields_by_name["value"].message_type
        return value_type if value_type is not None else message_type
    return message_type


def _holds_required(descriptor: Descriptor, seen: frozenset[str]) -> bool:
    if descriptor.full_name in seen:
        return False
    seen = seen | {descriptor.full_name}
    for field in descriptor.fields:
        if REQUIRED in field.GetOptions().Extensions[field_behavior]:
            return True
        if field.type == FieldDescriptor.TYPE_MESSAGE and _holds_required(_target(field), seen):
            return True
    return False


def require_fields(message: ProtoMessage) -> None:
    """a2a-sdk's required-field check, run only when :func:`lacks_required_field` finds a gap."""
    if lacks_required_field(message):
        validate_proto_required_fields(message)
