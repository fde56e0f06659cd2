"""The AgentExecutor: from a request object to a final Task, in the draft's order.

Each call of :meth:`SkillExecutor.execute` is one turn of a task, and reads
as the pipeline it runs::

    parse -> select the skill -> may the caller use it? -> validate the arguments ->
    authorize the call -> the skill's precheck -> approve -> (a slot) ->
    run the handler -> validate records and result -> respond

Parsing is :func:`~skillrack.protocol.messages.parse_request` on a new task
and :func:`~skillrack.serve.execution.replay.replay` on a follow-up; selection and
validation are :mod:`skillrack.serve.execution.invocation`; both authorization
decisions (the skill before validation, the call after it) ask every policy
(:mod:`skillrack.serve.security.authz`); approval is
:mod:`skillrack.serve.execution.approval_gate`; the handler runs with a
:class:`~skillrack.serve.execution.skill_context.SkillContext` whose outputs are validated by
:class:`~skillrack.serve.execution.outputs.Outputs` and sent by
:class:`~skillrack.serve.execution.artifacts.ArtifactPublisher`.

Up to the slot the call is *admitted*; from the slot on it is *accepted for
execution*.  The draft ends a refusal during admission ``TASK_STATE_REJECTED``
and a failure after acceptance ``TASK_STATE_FAILED``; either way the status
Message holds exactly one Data Part ``{"error": {...}}``.  A handler's
exception never reaches the caller: the log keeps it with the task id.

Every run of a handler has a deadline (the skill's ``timeout``, else the
operator's ``[server] handler_timeout``).  The handler runs as its own
asyncio task; at the deadline it is cancelled, the task ends
``TASK_STATE_FAILED`` with ``resource_limit_exceeded`` *without waiting for
the handler*: one that swallows ``CancelledError`` or awaits something that
never comes keeps running in the background (logged, its outputs closed,
counted by ``skillrack_handlers_overdue``) and **keeps its caller's slot until
it really ends**, so a caller whose handlers ignore their deadline can keep at
most ``max_concurrent_tasks`` of them running, never an unbounded pile.  A
handler that blocks the
event loop itself (a synchronous call that never returns) cannot be stopped
by any deadline; handlers must not block.  So does a replica stopping (``stop_signal``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

import pluggy
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import TaskState

from skillrack.errors import (
    REJECTING_CODES,
    BaseSkillUsageError,
    ConditionError,
    ErrorCode,
    InputRequired,
    ProtocolError,
)
from skillrack.host.registry import RegisteredBaseSkill, RegisteredSkill, Registry
from skillrack.protocol.messages import EXTENSION_URI, NOT_A_REQUEST, SkillRequest, parse_request
from skillrack.protocol.parts import incoming
from skillrack.protocol.values import data_part
from skillrack.serve.execution.approval_gate import seek_approval
from skillrack.serve.execution.artifacts import ArtifactPublisher
from skillrack.serve.execution.base_replies import BaseReplies, a2a_error
from skillrack.serve.execution.base_routing import (
    MessageView,
    claiming_base_skill,
    named_base_skill,
)
from skillrack.serve.execution.base_skill_context import BaseSkillContext
from skillrack.serve.execution.concurrency import ConcurrencyLimiter, Slot
from skillrack.serve.execution.describe import describe_artifacts
from skillrack.serve.execution.input_deadline import InputDeadlines
from skillrack.serve.execution.invocation import (
    BaseCall,
    Invocation,
    authorization_request,
    base_authorization_request,
    check_invocation,
    has_details,
    select_skill,
    skill_authorization_request,
)
from skillrack.serve.execution.outputs import (
    OutputBudget,
    OutputLimits,
    Outputs,
    check_safe_numbers,
)
from skillrack.serve.execution.replay import replay_turn, user_messages
from skillrack.serve.execution.restarts import restartable
from skillrack.serve.execution.skill_context import Delegation, SkillContext
from skillrack.serve.execution.stop_signal import HandedOver, StopSignal
from skillrack.serve.execution.stored_caller import caller_metadata
from skillrack.serve.execution.task_record import new_task, skill_of
from skillrack.serve.execution.turn import Turn, begin_turn
from skillrack.serve.observability.metrics import Metrics
from skillrack.serve.observability.traces import turn as traced_turn
from skillrack.serve.scope import ACTIVATED_EXTENSIONS_KEY
from skillrack.serve.security.approvals import Approval, Approvals
from skillrack.serve.security.authz import (
    SKILL_SCOPE,
    AuthorizationRequest,
    authorize,
    authorize_skill,
)
from skillrack.serve.security.requirements import SkillRequirements, describe
from skillrack.serve.stores.counters import LimitCounter

logger = logging.getLogger(__name__)
#: One line per finished task: ids, states, codes and sizes, never contents or credentials.
audit = logging.getLogger("skillrack.audit")

#: The operator's default deadline of one run of a handler, seconds.
DEFAULT_HANDLER_TIMEOUT_S = 300.0


def final_state(code: ErrorCode, *, accepted: bool) -> TaskState:
    """The draft's state for an error: REJECTED when not accepted for execution, else FAILED."""
    if code in REJECTING_CODES:
        return TaskState.TASK_STATE_REJECTED
    if code is ErrorCode.RESOURCE_LIMIT_EXCEEDED and not accepted:
        return TaskState.TASK_STATE_REJECTED
    return TaskState.TASK_STATE_FAILED


class SkillExecutor(AgentExecutor):
    """Runs describe_skill, domain skills and base-A2A skills for a2a-sdk's request handler."""

    def __init__(
        self,
        registry: Registry,
        manager: pluggy.PluginManager,
        delegation: Delegation | None = None,
        max_concurrent: int = 32,
        approvals: Approvals | None = None,
        limits: LimitCounter | None = None,
        handler_timeout: float = DEFAULT_HANDLER_TIMEOUT_S,
        output_limits: OutputLimits | None = None,
        metrics: Metrics | None = None,
        requirements: SkillRequirements | None = None,
        deadlines: InputDeadlines | None = None,
    ) -> None:
        self.registry = registry
        self.deadlines = deadlines or InputDeadlines()
        self.requirements = requirements or SkillRequirements()
        self.manager = manager
        self.delegation = delegation
        self.approvals = approvals
        self.limiter = ConcurrencyLimiter(max_concurrent, limits)
        self.handler_timeout = handler_timeout
        self.output_limits = output_limits or OutputLimits()
        self.metrics = metrics or Metrics(registry)
        self._describe = describe_artifacts(registry)
        self._running: dict[str, SkillContext | BaseSkillContext] = {}
        #: Handlers still running after their deadline (held here: asyncio keeps weak references).
        self._overdue: set[asyncio.Task[Any]] = set()
        #: Ends running handlers (``output_invalid``) when a replica stops; counts them too.
        self.stopping = StopSignal(lambda: len(self._running))
        #: This turn's overdue handler, by task id, until the turn hands it its slot.
        self._overdue_of: dict[str, asyncio.Task[Any]] = {}
        #: Slot releases scheduled when an overdue handler ended (held, as above).
        self._releases: set[asyncio.Task[None]] = set()

    # -- entry points called by a2a-sdk ---------------------------------------------------------

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """One turn of a task, in its server span (:mod:`skillrack.serve.observability.traces`)."""
        with traced_turn(context.task_id or "") as trace:
            await self._execute(begin_turn(context, event_queue, self.metrics, trace))

    async def _execute(self, turn: Turn) -> None:
        """Admit the call, then run it; every error ends the task."""
        try:
            admitted = await self._admit(turn)
        except _PROCESS_SIGNALS:
            raise
        except BaseException as exc:  # a plugin's hook may raise anything: the task still ends
            await self._respond_with_error(turn, _as_exception(exc), accepted=False)
            return
        if admitted is None:
            return  # describe_skill answered, or parked until an operator decides
        invocation, slot = admitted
        overdue: asyncio.Task[Any] | None = None
        try:
            with turn.observed.running():
                if invocation.base_call is not None:
                    await self._run_base(invocation, invocation.base_call, turn)
                else:
                    await self._run(invocation, turn)
        except _PROCESS_SIGNALS:
            raise
        except ProtocolError as exc:  # a base skill's, before it sent anything (_run_base)
            raise a2a_error(exc) from None
        except HandedOver:  # the replica drains: a survivor runs the task again, unended here
            pass
        except BaseException as exc:
            await self._respond_with_error(turn, _as_exception(exc), accepted=True)
        finally:
            overdue = self._overdue_of.pop(turn.task_id, None)
            if overdue is None or overdue.done():
                await slot.release()
            else:  # the handler runs on: its caller's slot stays taken until it ends
                overdue.add_done_callback(self._release_later(slot))
            self._running.pop(turn.task_id, None)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Tell the running handler, then end the task ``TASK_STATE_CANCELED``.

        A non-cancellable skill never gets here: the request handler refuses
        CancelTask first
        (:class:`skillrack.serve.bindings.request_handler.SkillrackRequestHandler`).
        """
        running = self._running.get(context.task_id or "")
        if running is not None:
            running._mark_cancelled()
            cancelled: str | None = running.skill_id
        else:
            cancelled = skill_of(context.current_task) if context.current_task else None
        self.metrics.ended(cancelled, "TASK_STATE_CANCELED", None)
        assert context.task_id is not None and context.context_id is not None
        task = context.current_task
        context_id = task.context_id if task is not None else context.context_id
        updater = TaskUpdater(event_queue, context.task_id, context_id)
        await updater.cancel(updater.new_agent_message([data_part({"canceled": True})]))

    # -- admission: a refusal here ends the task REJECTED ---------------------------------------

    async def _admit(self, turn: Turn) -> tuple[Invocation, Slot] | None:
        """parse -> select -> authorize the skill -> validate -> authorize the call -> approve.

        ``None`` when nothing is left to run on this turn: ``describe_skill``
        was answered, or the call waits for an operator's approval.
        """
        if (parsed := await self._parse(turn)) is None:
            return None
        request, answers = parsed
        if isinstance(request, BaseCall):
            return await self._admit_base(request, turn)
        if request.is_describe:
            await self._describe_skill(request, turn)
            return None
        skill = select_skill(self.registry, request)
        turn.trace.skill(skill)
        # Before validation: a refused caller learns no field details.
        await self._authorize_skill(
            skill.skill_id,
            skill_authorization_request(skill, turn.caller),
            has_details(skill),
            turn,
        )
        with turn.stage("validation"):
            try:
                invocation = check_invocation(self.registry, request, turn.caller, answers)
            except ConditionError as invalid:
                if invalid.details:
                    await self._authorize_details(skill, request, turn)
                raise
        return await self._admit_call(invocation, turn)

    async def _authorize_details(
        self, skill: RegisteredSkill, request: SkillRequest, turn: Turn
    ) -> None:
        """Field details only to a caller the call-stage decision would allow.

        A policy may abstain at the skill stage (the hook contract asks it
        to, when it needs the operation or resources); whatever it answered
        there, the call-stage decision is asked on what the arguments hold
        (their operation and resources, invalid as they are) before
        ``input_invalid`` pointers and messages reach the caller: a caller it
        would deny learns ``authorization_failed`` only.
        """
        verdict = await authorize(
            self.manager, authorization_request(skill, request.arguments, turn.caller)
        )
        if not verdict.allowed:
            turn.observed.denied("call")
            self._refuse(skill.skill_id, verdict.opinions, turn, "the call")

    async def _authorize_skill(
        self, skill_id: str, request: AuthorizationRequest, details: bool, turn: Turn
    ) -> None:
        """The skill's security requirements, then the skill-scope authorization decision."""
        self._check_requirements(skill_id, turn)
        with turn.stage("authorization", "skill", final=False):
            verdict = await authorize_skill(self.manager, request, has_details=details)
            if not verdict.allowed:
                turn.observed.denied("skill")
                self._refuse(skill_id, verdict.opinions, turn, "the skill")

    async def _admit_call(
        self, invocation: Invocation, turn: Turn
    ) -> tuple[Invocation, Slot] | None:
        """The call's authorization, its approval and a concurrency slot (any skill kind)."""
        with turn.stage("authorization", "call"):  # observes both decisions' time, once
            await self._authorize(invocation, turn)
        skill = invocation.skill
        if isinstance(skill, RegisteredSkill) and skill.skill.precheck is not None:
            # The skill's own refusal of a call it can never honour, before an operator is asked.
            await skill.skill.precheck(invocation.arguments, turn.caller)
        with turn.trace.stage("approval"):
            approved = await self._approve(invocation, turn)
        if approved is None:
            return None
        try:
            return approved, await self.limiter.acquire(turn.caller, turn.client_host)
        except ConditionError:
            self.metrics.limit_refused("concurrency")
            raise

    async def _parse(self, turn: Turn) -> tuple[SkillRequest | BaseCall, list[Any]] | None:
        """The request and the caller's answers so far; a new task is created first.

        ``None`` when the host's turn after a deadline finds nothing to run (``replay_turn``).
        A Message routed to a base-A2A skill (:mod:`skillrack.serve.execution.base_routing`)
        is a :class:`BaseCall`, whose new task is sent only when the turn needs it.
        """
        context = turn.context
        assert context.message is not None
        if context.current_task is None:
            # Read as a base skill reads it only when one could take it (base_routing):
            # a schema request's Data Part is converted once, by parse_request.
            view = MessageView(context.message)
            base = named_base_skill(self.registry, context.message, view)
            if base is not None:
                return self._base_call(turn, base, view()), []
            try:
                request: SkillRequest | None = parse_request(context.message)
                error: ConditionError | None = None
            except ConditionError as exc:
                request, error = None, exc
            except Exception:  # whatever a malformed message raises, the task exists first
                request, error = None, ConditionError(ErrorCode.INPUT_INVALID, NOT_A_REQUEST)
            if error is not None:
                base = claiming_base_skill(self.registry, context.message, view)
                if base is not None:
                    return self._base_call(turn, base, view()), []
            task = new_task(context, request.skill if request is not None else None)
            if request is not None and restartable(self.registry, request.skill):
                # Kept for the host's run of it on another replica (restarts.py).
                task.metadata.update(caller_metadata(turn.caller))
            await turn.queue.enqueue_event(task)
            if error is not None:
                raise error
            assert request is not None
            answers: list[Any] = []
        else:
            base = self.registry.base_skills.get(skill_of(context.current_task) or "")
            if base is not None:
                said = [incoming(m) for m in user_messages(context.current_task, context.message)]
                turn.observed.skill = base.skill_id
                return BaseCall(base, said[-1], said[:-1]), []
            replayed = await replay_turn(
                context.current_task, context.message, self.deadlines, turn.updater
            )
            if replayed is None:
                return None
            request, answers = replayed
        turn.observed.skill = request.skill
        _activate(context)
        return request, answers

    def _base_call(self, turn: Turn, skill: RegisteredBaseSkill, view: Any) -> BaseCall:
        """A new exchange with a base skill; its task waits until the turn needs it."""
        context, queue = turn.context, turn.queue
        task = new_task(context, skill.skill_id)
        turn.start.defer(lambda: queue.enqueue_event(task))
        turn.observed.skill = skill.skill_id
        return BaseCall(skill, view)

    async def _admit_base(self, call: BaseCall, turn: Turn) -> tuple[Invocation, Slot] | None:
        """The same stages as a schema skill's call, without arguments to validate."""
        skill = call.skill
        scoped = base_authorization_request(skill, turn.caller, SKILL_SCOPE)
        await self._authorize_skill(skill.skill_id, scoped, False, turn)
        invocation = Invocation(
            skill, base_authorization_request(skill, turn.caller), base_call=call
        )
        return await self._admit_call(invocation, turn)

    async def _describe_skill(self, request: SkillRequest, turn: Turn) -> None:
        skill_id = request.arguments["skill_id"]
        turn.trace.describing(self.registry.get(skill_id))
        self.metrics.describe_called(skill_id)
        payload = self._describe.get(skill_id)  # built once, at start-up
        if payload is None:
            if self.registry.get(skill_id) is not None:  # advertised, but nothing to return
                raise ConditionError(
                    ErrorCode.INTERFACE_UNAVAILABLE,
                    f"the interface of {skill_id!r} cannot currently be returned",
                )
            raise ConditionError(
                ErrorCode.SKILL_NOT_ADVERTISED,
                f"skill {skill_id!r} is not advertised by this agent",
            )
        if isinstance(payload, ConditionError):  # never an unvalidated substitute
            raise ConditionError(payload.code, payload.message)
        await ArtifactPublisher(turn.updater).describe(payload)
        await turn.updater.complete()
        turn.trace.ended(TaskState.Name(TaskState.TASK_STATE_COMPLETED))
        turn.observed.ended("TASK_STATE_COMPLETED")

    def _check_requirements(self, skill_id: str, turn: Turn) -> None:
        """The skill's own security requirements (the card says them), before any policy."""
        if self.requirements.allows(skill_id, turn.caller):
            return
        turn.observed.denied("skill")
        wanted = describe(self.requirements.of(skill_id))
        logger.info(
            "task %s: %s requires %s; the caller met %s",
            turn.task_id,
            skill_id,
            wanted,
            dict(turn.caller.schemes) or "no scheme",
            extra=_fields(turn.task_id, skill_id, ErrorCode.AUTHORIZATION_FAILED),
        )
        raise ConditionError(
            ErrorCode.AUTHORIZATION_FAILED,
            f"the caller is not authorized to invoke {skill_id!r}: it requires {wanted} "
            "(the skill's securityRequirements on the Agent Card)",
        )

    async def _authorize(self, invocation: Invocation, turn: Turn) -> None:
        verdict = await authorize(self.manager, invocation.request)
        if not verdict.allowed:
            turn.observed.denied("call")
            self._refuse(invocation.skill.skill_id, verdict.opinions, turn, "the call")

    @staticmethod
    def _refuse(skill_id: str, opinions: Any, turn: Turn, what: str) -> NoReturn:
        """``authorization_failed``; the policies' reasons go to the log only."""
        logger.info(
            "task %s: %s of %s denied by policy: %s",
            turn.task_id,
            what,
            skill_id,
            [(name, d.reason if d else None) for name, d in opinions],
            extra=_fields(turn.task_id, skill_id, ErrorCode.AUTHORIZATION_FAILED),
        )
        raise ConditionError(
            ErrorCode.AUTHORIZATION_FAILED,
            f"the caller is not authorized to invoke {skill_id!r}",
        )

    async def _approve(self, invocation: Invocation, turn: Turn) -> Invocation | None:
        """The call with what approved it when it may go on; None when it waits for people."""
        pending = await seek_approval(
            self.manager, self.approvals, invocation, turn.task_id, observe=self.metrics.approval
        )
        if not isinstance(pending, Approval):
            if pending is None and invocation.approved is None:
                return invocation  # nobody had to approve: the call as it is, not a copy
            return dataclasses.replace(invocation, approved=pending)
        audit.info(
            "task %s of %s waits for approval %s",
            turn.task_id,
            invocation.skill.skill_id,
            pending.id,
            extra=_fields(turn.task_id, invocation.skill.skill_id),
        )
        updater = turn.updater
        await turn.start.ensure()
        await updater.requires_input(updater.new_agent_message([data_part(pending.waiting_part())]))
        turn.trace.ended(TaskState.Name(TaskState.TASK_STATE_INPUT_REQUIRED))
        return None

    # -- execution: a failure here ends the task FAILED -----------------------------------------

    async def _run(self, invocation: Invocation, turn: Turn) -> None:
        """Run the handler, then validate and send its result: ``TASK_STATE_COMPLETED``."""
        skill = invocation.skill
        assert isinstance(skill, RegisteredSkill)
        outputs = Outputs(skill, ArtifactPublisher(turn.updater), self.output_limits)
        handler_context = SkillContext(
            task_id=turn.task_id,
            context_id=turn.updater.context_id,
            skill_id=skill.skill_id,
            skill_version=skill.skill.version,
            caller=turn.caller,
            publish_record=outputs.publish_record,
            publish_progress=outputs.publish_progress,
            answers=invocation.answers,
            operation=invocation.operation,
            delegation=self.delegation,
            approval=invocation.approved,
        )
        self._running[turn.task_id] = handler_context
        await turn.updater.start_work()
        try:
            result = await self._run_handler(
                skill,
                skill.skill.handler(invocation.arguments, handler_context),
                handler_context,
                outputs.budget,
                turn,
            )
        except InputRequired as asked:
            check_safe_numbers(asked.request, "input request")
            await self.deadlines.park(turn.updater, asked, turn.caller)
            turn.trace.ended(TaskState.Name(TaskState.TASK_STATE_INPUT_REQUIRED))
            return
        except (ConditionError, HandedOver):
            raise
        except Exception as exc:
            _log_failure(
                f"task %s: handler of {skill.skill_id} (plugin {skill.plugin}) raised",
                turn.task_id,
                exc,
            )
            raise _failed(turn) from None
        with turn.stage("output_validation"):
            await outputs.publish_result(result)
        await turn.updater.complete()
        turn.trace.ended(TaskState.Name(TaskState.TASK_STATE_COMPLETED))
        turn.observed.ended("TASK_STATE_COMPLETED")
        if audit.isEnabledFor(logging.INFO):  # the fields are not built for a line not written
            audit.info(
                "task %s of %s completed",
                turn.task_id,
                skill.skill_id,
                extra=_fields(turn.task_id, skill.skill_id),
            )

    async def _run_base(self, invocation: Invocation, call: BaseCall, turn: Turn) -> None:
        """Run a base skill's handler: a direct Message, or a task it ends (see base_context)."""
        skill = call.skill
        budget = OutputBudget(skill.skill_id, self.output_limits)
        replies = BaseReplies(turn.updater, turn.start, budget, turn.queue.enqueue_event)
        handler_context = BaseSkillContext(
            task_id=turn.task_id,
            context_id=turn.updater.context_id,
            skill_id=skill.skill_id,
            caller=turn.caller,
            replies=replies,
            history=call.history,
        )
        self._running[turn.task_id] = handler_context
        try:
            result = await self._run_handler(
                skill,
                skill.skill.handler(call.message, handler_context),
                handler_context,
                budget,
                turn,
            )
            await replies.end(result, f"task {turn.task_id}: {skill.skill_id} ({skill.plugin})")
        except InputRequired as asked:
            await replies.ask(asked.request)
            turn.trace.ended(TaskState.Name(TaskState.TASK_STATE_INPUT_REQUIRED))
            return
        except Exception as exc:
            if replies.replied:  # the exchange is over: nothing more can reach the caller
                _log_failure(
                    f"task %s: base skill {skill.skill_id} (plugin {skill.plugin}) raised "
                    "after its reply",
                    turn.task_id,
                    exc,
                )
                return
            if isinstance(exc, ConditionError):
                raise
            if isinstance(exc, ProtocolError) and not replies.sent_anything:
                raise  # answered as the binding's error (_execute)
            if isinstance(exc, BaseSkillUsageError):  # skillrack's own words: safe to log
                logger.error("task %s: %s (plugin %s); failed", turn.task_id, exc, skill.plugin)
                raise _failed(turn) from None
            _log_failure(
                f"task %s: handler of {skill.skill_id} (plugin {skill.plugin}) raised",
                turn.task_id,
                exc,
            )
            raise _failed(turn) from None
        ended = TaskState.Name(replies.left_in or TaskState.TASK_STATE_COMPLETED)
        state = "a Message" if replies.replied else ended
        turn.trace.ended(ended)
        turn.observed.ended(ended)
        if audit.isEnabledFor(logging.INFO):  # the fields are not built for a line not written
            audit.info(
                "task %s of %s answered with %s",
                turn.task_id,
                skill.skill_id,
                state,
                extra=_fields(turn.task_id, skill.skill_id),
            )

    async def _run_handler(
        self,
        skill: RegisteredSkill | RegisteredBaseSkill,
        handler: Any,
        context: SkillContext | BaseSkillContext,
        budget: OutputBudget,
        turn: Turn,
    ) -> Any:
        """The handler's result by its deadline; a passed output limit wins over what came next."""
        try:
            with turn.stage("handler"):
                return await self._within_deadline(skill, handler, context, budget.close, turn)
        except _PROCESS_SIGNALS:
            raise
        except BaseException as exc:
            if budget.refusal is not None:  # a limit passed fails the task, whatever came next
                raise budget.refusal from None
            asked = _question_in(exc)
            if asked is not None and asked is not exc:
                raise asked from None  # asked inside a task group: still the question
            if asked is None and not isinstance(exc, Exception):
                raise _as_exception(exc) from exc
            raise

    async def _within_deadline(
        self,
        skill: RegisteredSkill | RegisteredBaseSkill,
        handler: Any,
        context: SkillContext | BaseSkillContext,
        close: Callable[[], None],
        turn: Turn,
    ) -> Any:
        """The handler's result, or ``resource_limit_exceeded`` at its deadline.

        The handler (the coroutine ``handler``) runs as its own asyncio task so
        that the deadline never depends on the handler's cooperation: at the
        deadline it is cancelled and, finished or not, left behind (see the
        module docstring); ``close`` stops its outputs.
        """
        timeout = skill.skill.timeout or self.handler_timeout
        running = asyncio.ensure_future(handler)
        if await self.stopping.wait(running, timeout if math.isfinite(timeout) else None):
            return running.result()
        close()
        context._mark_cancelled()
        running.cancel()
        await asyncio.sleep(0)  # a handler that honours cancellation ends here, not overdue
        if running.done():
            running.add_done_callback(self._overdue_finished(skill.skill_id, skill.plugin, turn))
        else:
            self._overdue.add(running)
            self._overdue_of[turn.task_id] = running
            gauge = self.metrics.overdue_handlers.labels(self.metrics.skill_label(skill.skill_id))
            gauge.inc()
            running.add_done_callback(lambda _: gauge.dec())
            running.add_done_callback(self._overdue_finished(skill.skill_id, skill.plugin, turn))
        self.stopping.check(skill.skill_id)  # the replica stops: the task fails (or is handed)
        logger.warning(
            "task %s: handler of %s (plugin %s) passed its deadline of %g s; cancelled",
            turn.task_id,
            skill.skill_id,
            skill.plugin,
            timeout,
        )
        raise ConditionError(
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            f"skill {skill.skill_id!r} did not finish within its deadline of {timeout:g} s",
        )

    def _release_later(self, slot: Slot) -> Callable[[asyncio.Task[Any]], None]:
        """A done callback giving ``slot`` back once an overdue handler really ended."""

        def release(_: asyncio.Task[Any]) -> None:
            releasing = asyncio.ensure_future(slot.release())
            self._releases.add(releasing)
            releasing.add_done_callback(self._releases.discard)

        return release

    def _overdue_finished(
        self, skill_id: str, plugin: str, turn: Turn
    ) -> Callable[[asyncio.Task[Any]], None]:
        """What to do when a handler left at its deadline finally ends: forget it, log how."""

        def finished(running: asyncio.Task[Any]) -> None:
            self._overdue.discard(running)
            if running.cancelled():
                return
            exc = running.exception()  # retrieved, so asyncio does not log it again
            if exc is None:
                logger.warning(
                    "task %s: handler of %s (plugin %s) ignored cancellation and returned "
                    "after its deadline; the result was dropped",
                    turn.task_id,
                    skill_id,
                    plugin,
                )
            elif not isinstance(exc, ConditionError | InputRequired):
                _log_failure(
                    f"task %s: handler of {skill_id} (plugin {plugin}) raised after its deadline",
                    turn.task_id,
                    exc,
                )

        return finished

    # -- respond with an error ------------------------------------------------------------------

    async def _respond_with_error(self, turn: Turn, exc: Exception, *, accepted: bool) -> None:
        """End the task with one Data Part ``{"error": ...}`` in the draft's state.

        A task that already ended (its end failed to save: the store went away) is not
        failed, counted or audited again: ``exc`` goes on to the request, answered 503.
        """
        if turn.updater.ended:
            raise exc
        await turn.start.ensure()  # a base skill's task, when it was not sent yet
        if isinstance(exc, ConditionError):
            error = exc
        else:
            _log_failure("task %s failed inside skillrack", turn.task_id, exc)
            error = _failed(turn)
        state = final_state(error.code, accepted=accepted)
        turn.observed.ended(TaskState.Name(state), error.code)
        audit.info(
            "task %s ended %s with %s (%d detail(s))",
            turn.task_id,
            TaskState.Name(state),
            error.code.value,
            len(error.details),
            extra=_fields(turn.task_id, self.metrics.skill_label(turn.observed.skill), error.code),
        )
        message = turn.updater.new_agent_message([data_part(error.to_error_object())])
        await turn.updater.update_status(state, message=message)
        turn.trace.ended(TaskState.Name(state), error.code.value)


def _fields(task_id: str, skill: str | None, code: ErrorCode | None = None) -> dict[str, Any]:
    """The structured fields of a log line (``--log-format json``).

    See :mod:`skillrack.serve.observability.logs`.

    Only ids, a skill name and a condition code: the same hygiene as the text.
    """
    return {"task_id": task_id, "skill": skill, "code": code.value if code is not None else None}


def _activate(context: RequestContext) -> None:
    """Record that this request activated the extension, so the server can echo it."""
    if EXTENSION_URI in context.requested_extensions and context.call_context is not None:
        activated = context.call_context.state.get(ACTIVATED_EXTENSIONS_KEY)
        if isinstance(activated, set):
            activated.add(EXTENSION_URI)


def _failed(turn: Turn) -> ConditionError:
    """What the caller learns of an unexpected exception: that it happened, and the task id."""
    return ConditionError(
        ErrorCode.OUTPUT_INVALID,
        f"the skill failed before producing a valid result (task {turn.task_id})",
    )


def _log_failure(message: str, task_id: str | None, exc: BaseException) -> None:
    """Log where an exception came from, without its message.

    Exception messages can carry argument values or credentials (``str(exc)``
    of a failed database call, say); the traceback's frames are enough to find
    the bug, and the task id ties it to the caller's report.
    """
    frames = "".join(traceback.format_tb(exc.__traceback__))
    logger.error(
        message + ": %s\n%s",
        task_id,
        type(exc).__name__,
        frames,
        extra={"task_id": task_id, "skill": None, "code": None},
    )


#: What a turn never converts into a failed task: the process or the turn itself is stopping.
_PROCESS_SIGNALS = (asyncio.CancelledError, KeyboardInterrupt, SystemExit)


def _question_in(exc: BaseException) -> InputRequired | None:
    """The :class:`InputRequired` that ``exc`` is, or that a group holds with nothing else.

    A handler that asks inside an asyncio or anyio task group raises a
    ``BaseExceptionGroup`` around the signal; it parks the task all the same.
    """
    if isinstance(exc, InputRequired):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        asked, rest = exc.split(InputRequired)
        if asked is not None and rest is None:
            inner: BaseException = asked
            while isinstance(inner, BaseExceptionGroup):
                inner = inner.exceptions[0]
            return inner if isinstance(inner, InputRequired) else None
    return None


def _as_exception(exc: BaseException) -> Exception:
    """``exc`` as an ordinary exception, so that it ends the task like any failure."""
    if isinstance(exc, Exception):
        return exc
    wrapped = RuntimeError(f"a {type(exc).__name__} (not an Exception) was raised")
    wrapped.__cause__ = exc
    return wrapped
