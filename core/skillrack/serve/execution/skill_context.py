"""What a handler may do while it runs: the :class:`SkillContext`.

A handler receives the validated ``arguments`` and a context.  Through the
context, and only through it, a handler publishes supporting records (each
validated against its kind's schema before it leaves the host), publishes
progressive versions of its primary result, asks the caller for more input,
and notices cancellation.  The executor (:mod:`skillrack.serve.execution.executor`)
owns the A2A side (``TaskUpdater``, Artifacts, states); the context only calls
back into it, so this module knows nothing about a2a-sdk.

Asking for input follows a *replay* model.  ``await context.request_input(q)``
returns the caller's answer when the task already holds one; otherwise the
task parks in ``TASK_STATE_INPUT_REQUIRED`` and, when the follow-up Message
arrives (on any replica, even after a restart), the handler is run again from
the start with the same arguments and the answers so far.  A handler therefore
asks for input before it causes side effects, and publishes records with
stable ``artifact_id`` values so that a replay replaces rather than repeats
them.

A question may carry a deadline (``request_input(q, deadline=...)``): at the
deadline, with no answer, the host runs the handler again itself and the
question raises :class:`~skillrack.errors.InputDeadlinePassed`
(:mod:`skillrack.serve.execution.input_deadline`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from skillrack.errors import InputDeadlinePassed, InputRequired
from skillrack.interface.declare import ResponseMode
from skillrack.interface.json_value import JsonValue
from skillrack.serve.execution.input_deadline import DeadlinePassed, passed, timestamp
from skillrack.serve.security.approved import Approved
from skillrack.serve.security.caller import Caller, owner_of

if TYPE_CHECKING:
    from skillrack import hookspecs

    # What a delegation returns is the client's; named for type checkers only (a type-only
    # seam, tests/test_layout.py), so the context never imports the client.
    from skillrack.client.composition import DomainCheck
    from skillrack.client.outcome import SkillResult

PublishRecord = Callable[[str, JsonValue, str | None], Awaitable[str]]
PublishProgress = Callable[[JsonValue], Awaitable[None]]


class Delegation(Protocol):
    """What the executor gives the context so that a handler can call other agents.

    The one statement of this signature: :class:`skillrack.client.composition.Peers`
    implements it and :class:`~skillrack.serve.execution.traced_delegation.TracedDelegation`
    wraps it, and mypy checks both against it where ``serve/server.py`` hands them to the
    executor.  A protocol, so that the context does not import the client.
    """

    async def delegate(
        self,
        upstream_task_id: str,
        peer: str,
        skill_id: str,
        arguments: JsonValue,
        mode: ResponseMode,
        owner: str = "",
    ) -> SkillResult: ...

    async def compose(
        self,
        upstream_task_id: str,
        upstream: tuple[str, str],
        instance: JsonValue,
        downstream: tuple[str, str],
        domain_checks: Mapping[str, DomainCheck] | None = None,
        owner: str = "",
    ) -> SkillResult: ...


class Cancellation:
    """Whether the caller asked to cancel: shared by every kind of handler context."""

    def __init__(self) -> None:
        self._cancelled = asyncio.Event()

    @property
    def cancelled(self) -> bool:
        """True once the caller asked to cancel (cancellable skills only)."""
        return self._cancelled.is_set()

    async def wait_cancelled(self) -> None:
        """Wait until the caller cancels; useful to race long waits against cancellation."""
        await self._cancelled.wait()

    def _mark_cancelled(self) -> None:
        self._cancelled.set()


class SkillContext(Cancellation):
    """The handler's view of one invocation (one A2A task).

    The host's implementation of :class:`skillrack.SkillContext`, the protocol a
    vendor annotates its handler with (:class:`skillrack.hookspecs.SkillContext`);
    mypy holds it to the protocol at the end of this module.
    """

    def __init__(
        self,
        *,
        task_id: str,
        context_id: str,
        skill_id: str,
        skill_version: str,
        caller: Caller,
        publish_record: PublishRecord,
        publish_progress: PublishProgress,
        answers: Sequence[JsonValue] = (),
        operation: str | None = None,
        delegation: Delegation | None = None,
        approval: Approved | None = None,
    ) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self.skill_id = skill_id
        self.skill_version = skill_version
        self.caller = caller
        self.operation = operation
        #: What let the call through the approval step; ``None`` when nobody had to approve.
        self.approval = approval
        self._publish_record = publish_record
        self._publish_progress = publish_progress
        self._answers = list(answers)
        self._asked = 0
        self._delegation = delegation
        super().__init__()

    async def publish_record(
        self, kind: str, record: JsonValue, *, artifact_id: str | None = None
    ) -> str:
        """Validate ``record`` against ``kind``'s schema and send it as its own Artifact.

        Returns the Artifact's ``artifactId`` (``artifact_id`` if given, else a new
        one) so that the result can reference the record.  Raises
        :class:`~skillrack.errors.ConditionError` (``output_invalid``) when the
        record does not validate or ``kind`` is not declared: nothing is sent.
        """
        return await self._publish_record(kind, record, artifact_id)

    async def publish_progress(self, partial_result: JsonValue) -> None:
        """Send a progressive version of the primary result.

        Each version replaces the previous one (``append`` false); it is not
        validated, as the draft applies ``output_schema`` only to the complete
        final result, which the handler returns.
        """
        await self._publish_progress(partial_result)

    async def request_input(
        self, request: JsonValue, *, deadline: dt.datetime | None = None
    ) -> JsonValue:
        """Return the caller's answer to ``request``, asking for it if the task has none yet.

        ``request`` is JSON describing what is needed; it becomes the Data Part of
        the ``TASK_STATE_INPUT_REQUIRED`` status Message.  The answer is the Data
        Part (or text) of the caller's follow-up Message, unvalidated, as the
        draft specifies for follow-ups.  The :class:`~skillrack.errors.InputRequired`
        it raises is a ``BaseException``: a handler lets it through.

        ``deadline`` (an aware ``datetime``; the same one on every replay, so keep
        it with what the handler did): when it passes with no answer, the host
        runs the handler again without a message from the caller, and this call
        raises :class:`~skillrack.errors.InputDeadlinePassed` (an answer that
        arrives later counts as none).  The status Message's metadata
        ``skillrack_input_deadline`` tells the caller the deadline.
        """
        index = self._asked
        self._asked += 1
        if index < len(self._answers):
            answer = self._answers[index]
            if isinstance(answer, DeadlinePassed):
                raise InputDeadlinePassed(answer.deadline)
            return answer
        if deadline is None:
            raise InputRequired(request)
        stamp = timestamp(deadline)
        if passed(stamp):
            raise InputDeadlinePassed(stamp)
        raise InputRequired(request, deadline=stamp, question=index)

    async def delegate(
        self, peer: str, skill_id: str, arguments: JsonValue, *, mode: ResponseMode = "sync"
    ) -> SkillResult:
        """Call ``skill_id`` at the configured peer agent ``peer`` as a new downstream task.

        Runs the whole client procedure (retrieve and verify the interface,
        validate the arguments, validate the result and records) and records
        the hop (both task ids, both agents) for diagnostics, under the
        caller's tenant (:func:`owner_of`).  Returns a
        :class:`skillrack.client.outcome.SkillResult`; raises
        :class:`skillrack.errors.SkillCallError` on failure.
        """
        return await self._delegation_or_fail().delegate(
            self.task_id, peer, skill_id, arguments, mode, owner_of(self.caller)
        )

    async def compose(
        self,
        upstream: tuple[str, str],
        instance: JsonValue,
        downstream: tuple[str, str],
        *,
        domain_checks: Mapping[str, DomainCheck] | None = None,
    ) -> SkillResult:
        """Feed ``instance`` (an upstream skill's output) to a downstream skill, if eligible.

        ``upstream`` and ``downstream`` are ``(peer, skill_id)``.  Direct
        composition requires identical Schema References (URI, version,
        dialect, digest); otherwise ``composition_ineligible`` is raised and
        nothing is sent.
        """
        return await self._delegation_or_fail().compose(
            self.task_id, upstream, instance, downstream, domain_checks, owner_of(self.caller)
        )

    def _delegation_or_fail(self) -> Delegation:
        if self._delegation is None:
            raise RuntimeError("this agent has no peers configured for delegation")
        return self._delegation


if TYPE_CHECKING:
    # Structurally, not by inheritance: the protocol's read-only properties would shadow
    # the attributes set above.  mypy refuses this line when the two drift apart.
    _IMPLEMENTS: type[hookspecs.SkillContext] = SkillContext
