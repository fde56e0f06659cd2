"""What a base-A2A skill's handler may do: the :class:`BaseSkillContext`.

A base skill (:class:`~skillrack.interface.declare.BaseSkill`) is called as
``await handler(message, context)`` with the caller's
:class:`~skillrack.protocol.parts.IncomingMessage`.  It answers in one of two
ways, as A2A allows:

* **a direct Message** (:meth:`BaseSkillContext.reply`): no Task is created,
  the caller receives the agent's Message and the exchange is over.  Only as
  the first and only answer of a new exchange;
* **a Task**: :meth:`~BaseSkillContext.status` messages while it works,
  :meth:`~BaseSkillContext.artifact` for what it produces,
  :meth:`~BaseSkillContext.ask` to park it in ``TASK_STATE_INPUT_REQUIRED``
  (the handler runs again with the caller's next Message; the ones before are
  in :attr:`~BaseSkillContext.history`), and returning ends it
  ``TASK_STATE_COMPLETED``, the returned parts (a ``str``, one part or a list)
  becoming its final status message.  :meth:`~BaseSkillContext.set_state`
  puts the task in any A2A state directly (``input-required`` without a
  message, ``completed`` without passing through ``working``, ``rejected``),
  as an A2A agent written on a2a-sdk's ``TaskUpdater`` can.

A Message and an Artifact have at least one part in A2A, so ``reply``,
``status`` and ``artifact`` with none raise :class:`~skillrack.errors.BaseSkillUsageError`
at once, in the handler, with one line telling its author what to write.
Raising :class:`~skillrack.errors.ProtocolError` before anything was sent
answers the request with an A2A protocol error (JSON-RPC error, HTTP status)
instead of a task.

Raising :class:`~skillrack.errors.ConditionError` ends the task with the
draft's error object, as for a schema skill; any other exception fails it
without telling the caller why (the log keeps it).  Every part a task sends,
status messages and Artifacts, counts against the operator's output limits
(``[server] max_task_outputs`` and ``max_task_output_bytes``).  The executor
owns the A2A side (:mod:`skillrack.serve.execution.base_replies`); this module only
calls back into it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn, Protocol

from skillrack.errors import BaseSkillUsageError, InputRequired
from skillrack.protocol.parts import IncomingMessage, PartLike
from skillrack.serve.execution.skill_context import Cancellation
from skillrack.serve.security.caller import Caller

if TYPE_CHECKING:
    from skillrack import hookspecs


class Replies(Protocol):
    """The executor's side of one turn.

    Implemented by :class:`skillrack.serve.execution.base_replies.BaseReplies`.
    """

    async def reply(self, parts: Sequence[PartLike]) -> None: ...

    async def status(self, parts: Sequence[PartLike]) -> None: ...

    async def artifact(
        self,
        parts: Sequence[PartLike],
        *,
        name: str | None,
        artifact_id: str | None,
        append: bool,
        last_chunk: bool | None,
    ) -> str: ...

    async def set_state(
        self, state: hookspecs.BaseTaskState, parts: Sequence[PartLike]
    ) -> None: ...


class BaseSkillContext(Cancellation):
    """A base skill's view of one turn of its exchange (``cancelled``, ``wait_cancelled`` too).

    The host's implementation of :class:`skillrack.BaseSkillContext`, the protocol a
    vendor annotates its handler with (:class:`skillrack.hookspecs.BaseSkillContext`);
    mypy holds it to the protocol at the end of this module.
    """

    def __init__(
        self,
        *,
        task_id: str,
        context_id: str,
        skill_id: str,
        caller: Caller,
        replies: Replies,
        history: Sequence[IncomingMessage] = (),
    ) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self.skill_id = skill_id
        self.caller = caller
        #: The caller's earlier Messages of this task, oldest first (empty on a new exchange).
        self.history: tuple[IncomingMessage, ...] = tuple(history)
        self._replies = replies
        super().__init__()

    async def reply(self, *parts: PartLike) -> None:
        """Answer with one agent Message and no Task; the handler then returns.

        Only as the first thing a new exchange sends: once a status, an
        Artifact or a question went out, the exchange is a Task and ends as one.
        """
        self._need_parts("reply", parts, "context.reply('Done.')")
        await self._replies.reply(parts)

    async def status(self, *parts: PartLike) -> None:
        """A status message while the task works (``TASK_STATE_WORKING``)."""
        self._need_parts(
            "status", parts, "context.status('Checking...'), or set_state('working') for none"
        )
        await self._replies.status(parts)

    async def artifact(
        self,
        *parts: PartLike,
        name: str | None = None,
        artifact_id: str | None = None,
        append: bool = False,
        last_chunk: bool | None = None,
    ) -> str:
        """Send an Artifact of ``parts``; returns its id (``artifact_id``, else a new one).

        ``append`` adds the parts to the Artifact of the same id sent before
        (a stream of chunks, ``last_chunk`` on the last one).
        """
        self._need_parts("artifact", parts, "context.artifact(DataPart({...}), name='report')")
        return await self._replies.artifact(
            parts, name=name, artifact_id=artifact_id, append=append, last_chunk=last_chunk
        )

    async def ask(self, *parts: PartLike) -> NoReturn:
        """Ask the caller for more: the task waits in ``TASK_STATE_INPUT_REQUIRED``.

        Raises :class:`~skillrack.errors.InputRequired`, a ``BaseException``: let it
        propagate (never catch ``BaseException`` around it).  The caller's answer
        starts the handler again, with the answer as its message and what came
        before in :attr:`history`.  With no parts the task waits without a
        status message, which A2A allows.
        """
        raise InputRequired(list(parts))

    async def set_state(self, state: hookspecs.BaseTaskState, *parts: PartLike) -> None:
        """Put the task in ``state`` now, ``parts`` (if any) its status message; see the protocol.

        ``state`` is one of ``working``, ``input-required``, ``auth-required``,
        ``completed``, ``failed``, ``rejected``, ``canceled``.  Nothing else is
        sent first (no ``working``).  After any state but ``working`` the
        task is settled or waiting: return, and send nothing more.
        """
        await self._replies.set_state(state, parts)

    def _need_parts(self, method: str, parts: tuple[PartLike, ...], example: str) -> None:
        if not parts:
            raise BaseSkillUsageError(
                f"base skill {self.skill_id!r}: context.{method}() needs at least one part "
                f"(A2A requires parts in a Message and an Artifact); write e.g. {example}"
            )


if TYPE_CHECKING:
    # Structurally, not by inheritance: the protocol's read-only properties would shadow
    # the attributes set above.  mypy refuses this line when the two drift apart.
    _IMPLEMENTS: type[hookspecs.BaseSkillContext] = BaseSkillContext
