"""Restartable skills: a task whose process died is run again, not failed, when that is safe.

A task is run by the process that accepted it; when that process dies (a
replica killed, frozen or cut off, whose task leases expired; one process on
SQLite stopped while the task ran) the task is normally ended
``TASK_STATE_FAILED`` (:mod:`skillrack.serve.stores.recovery`).  A skill
declared ``Skill(restartable=True)`` changes nothing (``observe_only``, or a
call its ``changes_nothing`` says changes nothing; assembly refuses any other),
so running its handler again from the start has the effect of running it once.
:class:`Restarts` decides, for each such task, whether it is run again:

- its skill is served here and declared restartable (and, when it is not
  ``observe_only``, ``changes_nothing`` says the task's arguments change
  nothing);
- it was restarted fewer than ``[server] task_restarts`` times before (the
  count is kept in the task's metadata, ``skillrackRestarts``), so a handler
  that kills every process it runs on is not passed around for ever;
- the task kept its caller (``skillrackCaller``,
  :mod:`skillrack.serve.execution.stored_caller`): the run again is that
  caller's, authorized again by every policy.

A task run again gets, in the same write that takes it over, the status
``TASK_STATE_WORKING`` with a message naming the replica that was lost and
the one running it now (subscribers see it); then the host sends the task a
Message of its own (role ``agent``, one Data Part ``{"run_again": ...}``,
:func:`restart_message`) through the request handler every binding uses, as
the stored caller, as it does when a question's deadline passes.  Replay
(:mod:`skillrack.serve.execution.replay`) ignores agent Messages: the turn
parses the original request from the task's history, with every answer the
caller gave, and runs the handler from the start.  Any other task is failed
as before.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable

from a2a.types import Message, Role, Task, TaskState
from google.protobuf.timestamp_pb2 import Timestamp

from skillrack.host.registry import Registry
from skillrack.protocol.messages import parse_request
from skillrack.protocol.task_metadata import RESTARTS_KEY
from skillrack.protocol.values import data_part
from skillrack.serve.execution.input_deadline import Armed, InputDeadlines, asked_in
from skillrack.serve.execution.stored_caller import stored_caller
from skillrack.serve.execution.task_record import skill_of
from skillrack.serve.security.caller import Caller
from skillrack.serve.stores.recovery import INTERRUPTED, fail, orphaned

logger = logging.getLogger(__name__)

#: ``[server] task_restarts``' default.
TASK_RESTARTS = 1
#: The Data Part member of the restart notice (the status message of the task taken over).
RESTARTED_KEY = "restarted"
#: The Data Part member of the host's Message that runs the task again.
RUN_AGAIN_KEY = "run_again"
#: How long close() lets restarts under way go on before leaving them.
CLOSE_WAIT_S = 5.0

#: What runs a restart turn (the request handler's, wired by ``build_server``).
RunAgain = Callable[[Task, Caller], Awaitable[None]]
#: Lets a lease taken over expire at once (owner, task id): the cluster store's ``abandon``.
Abandon = Callable[[str, str], Awaitable[None]]


def restartable(registry: Registry, skill_id: str | None) -> bool:
    """Whether ``skill_id`` is served here and declared restartable."""
    registered = registry.get(skill_id or "")
    return registered is not None and registered.skill.restartable is True


def restarts_of(task: Task) -> int:
    """How many times the host ran ``task`` again already."""
    value = task.metadata.fields.get(RESTARTS_KEY)
    return int(value.number_value) if value is not None else 0


def restart_message(task: Task) -> Message:
    """The host's Message that runs ``task`` again (its status message carries the notice)."""
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_AGENT,
        task_id=task.id,
        context_id=task.context_id,
        parts=[data_part({RUN_AGAIN_KEY: {"restart": restarts_of(task)}})],
    )


class Restarts:
    """Which orphaned tasks run again, their takeover write, and the turns that run them."""

    def __init__(
        self,
        registry: Registry,
        deadlines: InputDeadlines,
        *,
        replica: str,
        limit: int = TASK_RESTARTS,
        abandon: Abandon | None = None,
    ) -> None:
        self.registry = registry
        #: Cluster mode: hands a task whose run again failed to start back to the sweep.
        self._abandon = abandon
        self.deadlines = deadlines
        self.replica = replica
        self.limit = limit
        self._run: RunAgain | None = None
        self._running: set[asyncio.Task[None]] = set()

    def bind(self, run: RunAgain) -> None:
        """Who runs a restart turn; until bound, a task is failed instead."""
        self._run = run

    # -- deciding, inside the store's write ------------------------------------------------

    def settle(self, task: Task, lost: str) -> bool:
        """Make ``task`` (whose replica ``lost`` died) a restart, True; else fail it, False."""
        return self._settle(task, f"replica {lost}", orphaned(lost))

    def settle_interrupted(self, task: Task) -> bool:
        """:meth:`settle` for a task a stopped process left running (one process, at start-up)."""
        return self._settle(task, "the previous process", INTERRUPTED)

    def _settle(self, task: Task, lost: str, failure: str) -> bool:
        why_not = self._why_not(task)
        if why_not is None:
            self._mark(task, lost)
            return True
        fail(task, failure + why_not)
        return False

    def _why_not(self, task: Task) -> str | None:
        """``None`` when ``task`` may run again, else what to add to its failure message."""
        skill_id = skill_of(task)
        if self._run is None or not restartable(self.registry, skill_id):
            return ""  # the usual failure: nothing to add
        count = restarts_of(task)
        if count >= self.limit:
            return (
                f" (skill {skill_id!r} is restartable, and was run again {count} time(s) "
                f"already: [server] task_restarts = {self.limit})"
            )
        if stored_caller(task) is None:
            return f" (skill {skill_id!r} is restartable, but the task kept no caller to run as)"
        if not self._changes_nothing(task, skill_id or ""):
            return (
                f" (skill {skill_id!r} is restartable, but changes_nothing does not say "
                "this call changes nothing)"
            )
        return None

    def _changes_nothing(self, task: Task, skill_id: str) -> bool:
        registered = self.registry.get(skill_id)
        assert registered is not None
        skill = registered.skill
        if skill.authority.default_mode == "observe_only":
            return True
        first = next((m for m in task.history if m.role == Role.ROLE_USER), None)
        if first is None or skill.changes_nothing is None:
            return False
        try:
            return skill.changes_nothing(parse_request(first).arguments) is True
        except Exception as exc:  # a predicate that raises counts as a change (as for approvals)
            logger.warning(
                "task %s: changes_nothing of %s raised %s; it is not run again",
                task.id,
                skill_id,
                type(exc).__name__,
            )
            return False

    def _mark(self, task: Task, lost: str) -> None:
        """Give ``task`` the status of a task taken over to run again (in place)."""
        count = restarts_of(task) + 1
        if task.status.HasField("message"):
            task.history.append(task.status.message)
        now = Timestamp()
        now.GetCurrentTime()
        task.status.Clear()
        task.status.state = TaskState.TASK_STATE_WORKING
        task.status.timestamp.CopyFrom(now)
        notice = {
            "lost": lost,
            "replica": self.replica,
            "restart": count,
            "limit": self.limit,
            "message": (
                f"{lost} stopped while this task was running; replica {self.replica} runs "
                f"the skill again from the start (restart {count} of at most {self.limit})"
            ),
        }
        task.status.message.CopyFrom(
            Message(
                role=Role.ROLE_AGENT,
                task_id=task.id,
                context_id=task.context_id,
                message_id=str(uuid.uuid4()),
                parts=[data_part({RESTARTED_KEY: notice})],
            )
        )
        task.metadata.fields[RESTARTS_KEY].number_value = count

    # -- after the write: the turns ---------------------------------------------------------

    def took_over(self, tasks: list[tuple[str, Task]]) -> None:
        """Run again the tasks made restarts; re-arm the deadlines of parked ones (with owners)."""
        for owner, task in tasks:
            caller = stored_caller(task)
            asked = asked_in(task)
            if asked is not None:
                if caller is None:
                    logger.warning(
                        "task %s: its question's deadline %s cannot be re-armed (the task kept "
                        "no caller); it waits for its caller's next message",
                        task.id,
                        asked.deadline,
                    )
                    continue
                self.deadlines.arm(Armed(task.id, task.context_id, caller, asked))
            elif task.status.state == TaskState.TASK_STATE_WORKING and caller is not None:
                self._start(owner, task, caller)

    def _start(self, owner: str, task: Task, caller: Caller) -> None:
        logger.warning(
            "task %s of %s: run again on %s (restart %d of at most %d)",
            task.id,
            skill_of(task),
            self.replica,
            restarts_of(task),
            self.limit,
        )
        run = asyncio.get_running_loop().create_task(self._again(owner, task, caller))
        self._running.add(run)
        run.add_done_callback(self._running.discard)

    async def _again(self, owner: str, task: Task, caller: Caller) -> None:
        assert self._run is not None
        try:
            await self._run(task, caller)
        except Exception as exc:  # the operator must hear of it, and the task must not hang
            logger.error(
                "task %s: running it again failed (%s: %s)%s",
                task.id,
                type(exc).__name__,
                str(exc).splitlines()[0] if str(exc) else "",
                "; its lease is given back to the sweep" if self._abandon is not None else "",
            )
            if self._abandon is not None:
                try:
                    await self._abandon(owner, task.id)
                except Exception as again:  # the database is out: the lease keeper says so
                    logger.error("task %s: cannot give its lease back (%s)", task.id, again)

    async def close(self) -> None:
        """At shutdown: let restarts under way go on a moment (the drain ends what is left)."""
        if self._running:
            await asyncio.wait(set(self._running), timeout=CLOSE_WAIT_S)
