"""The AgentExecutor: from a request object to a final Task, in the draft's order.

For a domain skill: the request object is well formed; the skill is
advertised; ``skill_version`` and ``interface_digest`` name the active
document (``interface_mismatch`` before anything looks at ``arguments``);
``arguments`` validate against ``input_schema``; every authorization policy is
asked; the handler runs with a :class:`~skillrack.serve.context.SkillContext`; the
final result validates against ``output_schema``; only then the primary result
Artifact and ``TASK_STATE_COMPLETED``.  Every error ends the Task with a status
Message holding exactly one Data Part ``{"error": {...}}``, in the state the
draft assigns; a handler's exception never reaches the caller, the log keeps it
with the task id.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
import uuid
from collections.abc import Mapping
from typing import Any

import pluggy
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus
from a2a.utils.errors import UnsupportedOperationError

from skillrack.errors import REJECTING_CODES, ConditionError, ErrorCode, ErrorDetail
from skillrack.host.registry import RegisteredSkill, Registry
from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.protocol.messages import (
    EXTENSION_URI,
    NOT_A_REQUEST,
    SkillRequest,
    follow_up_value,
    parse_request,
)
from skillrack.protocol.wire import UnsafeNumber, check_numbers, data_part, from_value
from skillrack.serve.context import ANONYMOUS, Caller, Delegation, InputRequired, SkillContext
from skillrack.serve.security.approvals import APPROVAL_KEY, DENIED, GRANTED, ApprovalStore
from skillrack.serve.security.authz import AuthorizationRequest, authorize, pick

logger = logging.getLogger(__name__)
#: One line per finished task: ids, states, codes and sizes, never contents or credentials.
audit = logging.getLogger("skillrack.audit")


def _log_failure(message: str, task_id: str | None, exc: BaseException) -> None:
    """Log where an exception came from, without its message.

    Exception messages can carry argument values or credentials (``str(exc)``
    of a failed database call, say); the traceback's frames are enough to find
    the bug, and the task id ties it to the caller's report.
    """
    frames = "".join(traceback.format_tb(exc.__traceback__))
    logger.error(message + ": %s\n%s", task_id, type(exc).__name__, frames)


#: The primary result Artifact's id.  Artifact ids are task-scoped, so one
#: fixed id is unambiguous, and a replayed or progressive result replaces it.
RESULT_ARTIFACT_ID = "result"
#: Task metadata key naming the skill, so that CancelTask can be refused for a
#: non-cancellable skill before a2a-sdk touches the task.
SKILL_METADATA_KEY = "skillrack_skill"
#: Where the server puts the set of extensions it activated for one request.
ACTIVATED_STATE_KEY = "skillrack.activated_extensions"
#: Where the server puts the authenticated Caller.
CALLER_STATE_KEY = "skillrack.caller"


def final_state(code: ErrorCode, *, accepted: bool) -> TaskState:
    """The draft's state for an error: REJECTED when not accepted for execution, else FAILED."""
    if code in REJECTING_CODES:
        return TaskState.TASK_STATE_REJECTED
    if code is ErrorCode.RESOURCE_LIMIT_EXCEEDED and not accepted:
        return TaskState.TASK_STATE_REJECTED
    return TaskState.TASK_STATE_FAILED


def describe_payloads(registry: Registry) -> dict[str, Part]:
    """The ``describe_skill`` result Data Part of every advertised skill, built once."""
    return {
        skill.skill_id: data_part(
            {
                "skill": DESCRIBE_SKILL,
                "result": {
                    "interface_digest": skill.interface_digest,
                    "interface": skill.interface.document,
                },
            }
        )
        for skill in registry
    }


def caller_of(context: RequestContext) -> Caller:
    """The caller authentication established (never taken from message content)."""
    call = context.call_context
    caller = call.state.get(CALLER_STATE_KEY) if call is not None else None
    return caller if isinstance(caller, Caller) else ANONYMOUS


class SkillExecutor(AgentExecutor):
    """Runs describe_skill and domain skills for a2a-sdk's DefaultRequestHandler."""

    def __init__(
        self,
        registry: Registry,
        manager: pluggy.PluginManager,
        delegation: Delegation | None = None,
        max_concurrent: int = 32,
        approvals: ApprovalStore | None = None,
    ) -> None:
        self.registry = registry
        self.manager = manager
        self.delegation = delegation
        self.max_concurrent = max_concurrent
        self.approvals = approvals
        self._active: dict[str, int] = {}
        self._describe = describe_payloads(registry)
        self._running: dict[str, SkillContext] = {}

    # -- entry points called by a2a-sdk ---------------------------------------------------------

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        assert context.message is not None
        # A follow-up Message may omit contextId; the task keeps the one it started with.
        context_id = context.current_task.context_id if context.current_task else context.context_id
        updater = TaskUpdater(event_queue, context.task_id, context_id)
        accepted = False
        try:
            if context.current_task is None:
                request: SkillRequest | None = None
                error: ConditionError | None = None
                try:
                    request = parse_request(context.message)
                except ConditionError as exc:
                    error = exc
                except Exception:  # whatever a malformed message raises, the task exists first
                    error = ConditionError(ErrorCode.INPUT_INVALID, NOT_A_REQUEST)
                await event_queue.enqueue_event(self._new_task(context, request))
                if error is not None:
                    raise error
                assert request is not None
                self._activate(context)
                if request.is_describe:
                    await self._describe_skill(request, updater)
                    return
                answers: list[Any] = []
            else:
                request, answers = self._replay(context)
                self._activate(context)
            skill = self._check_invocation(request)
            operation = await self._authorize(skill, request.arguments, context)
            if not await self._approved(skill, operation, request.arguments, context, updater):
                return  # parked in TASK_STATE_INPUT_REQUIRED until an operator decides
            caller = caller_of(context)
            slot = f"{caller.tenant}/{caller.identity}"
            if self._active.get(slot, 0) >= self.max_concurrent:
                raise ConditionError(
                    ErrorCode.RESOURCE_LIMIT_EXCEEDED, "too many tasks running for this caller"
                )
            self._active[slot] = self._active.get(slot, 0) + 1
            accepted = True
            try:
                await self._run(skill, request.arguments, answers, operation, context, updater)
            finally:
                self._active[slot] -= 1
                if not self._active[slot]:
                    del self._active[slot]
        except ConditionError as exc:
            await self._end_with_error(updater, exc, accepted=accepted)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _log_failure("task %s failed inside skillrack", context.task_id, exc)
            await self._end_with_error(
                updater,
                ConditionError(
                    ErrorCode.OUTPUT_INVALID,
                    f"the skill failed before producing a valid result (task {context.task_id})",
                ),
                accepted=True,
            )
        finally:
            self._running.pop(context.task_id, None)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        skill_id = _skill_of(task) if task is not None else None
        registered = self.registry.get(skill_id) if skill_id else None
        if registered is not None and not registered.skill.interaction.cancellable:
            # Normally refused earlier by the request handler; kept as a safety net.
            raise UnsupportedOperationError(message=f"skill {skill_id!r} is not cancellable")
        running = self._running.get(context.task_id or "")
        if running is not None:
            running._mark_cancelled()
        assert context.task_id is not None and context.context_id is not None
        context_id = task.context_id if task is not None else context.context_id
        updater = TaskUpdater(event_queue, context.task_id, context_id)
        await updater.cancel(updater.new_agent_message([data_part({"canceled": True})]))

    # -- steps ----------------------------------------------------------------------------------

    def _new_task(self, context: RequestContext, request: SkillRequest | None) -> Task:
        assert context.message is not None
        task = Task(
            id=context.task_id,
            context_id=context.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[context.message],
        )
        if request is not None:
            task.metadata.update({SKILL_METADATA_KEY: request.skill})
        return task

    def _activate(self, context: RequestContext) -> None:
        """Record that this request activated the extension, so the server can echo it."""
        if EXTENSION_URI in context.requested_extensions and context.call_context is not None:
            activated = context.call_context.state.get(ACTIVATED_STATE_KEY)
            if isinstance(activated, set):
                activated.add(EXTENSION_URI)

    def _replay(self, context: RequestContext) -> tuple[SkillRequest, list[Any]]:
        """Rebuild the original request and the caller's answers from the task's history.

        A user Message that follows an approval wait is a nudge to look again,
        not an answer to a handler's question, so it is not counted.
        """
        task = context.current_task
        assert task is not None and context.message is not None
        messages: list[Message] = list(task.history)
        known = {m.message_id for m in messages}
        for extra in (task.status.message, context.message):
            if extra.message_id and extra.message_id not in known:
                messages.append(extra)
                known.add(extra.message_id)
        user: list[Message] = []
        nudge = False
        for message in messages:
            if message.role == Role.ROLE_AGENT:
                nudge = _is_approval_wait(message)
            elif message.role == Role.ROLE_USER:
                if not nudge or not user:
                    user.append(message)
                nudge = False
        request = parse_request(user[0])
        if request.is_describe:
            raise ConditionError(ErrorCode.INPUT_INVALID, "describe_skill takes no follow-up")
        return request, [follow_up_value(m) for m in user[1:]]

    def _check_invocation(self, request: SkillRequest) -> RegisteredSkill:
        skill = self.registry.get(request.skill)
        if skill is None:
            raise ConditionError(
                ErrorCode.SKILL_NOT_ADVERTISED,
                f"skill {request.skill!r} is not advertised by this agent",
            )
        if (
            request.skill_version != skill.skill.version
            or request.interface_digest != skill.interface_digest
        ):
            raise ConditionError(
                ErrorCode.INTERFACE_MISMATCH,
                f"skill {skill.skill_id!r} is active at version {skill.skill.version} with "
                f"interface digest {skill.interface_digest}; retrieve it again with describe_skill",
            )
        details = skill.interface.input.validate(
            request.arguments, sensitive=tuple(skill.skill.sensitive)
        )
        if details:
            raise ConditionError(
                ErrorCode.INPUT_INVALID,
                f"arguments do not validate against the input_schema of {skill.skill_id!r}",
                details,
            )
        return skill

    async def _authorize(
        self, skill: RegisteredSkill, arguments: Any, context: RequestContext
    ) -> str | None:
        declared = skill.skill
        operation = None
        if declared.operations and isinstance(arguments, Mapping):
            selected = arguments.get(declared.operation_selector)
            operation = selected if isinstance(selected, str) else None
        verdict = await authorize(
            self.manager,
            AuthorizationRequest(
                caller=caller_of(context),
                skill_id=declared.id,
                skill_version=declared.version,
                plugin=skill.plugin,
                authority=dict(skill.interface.document["authority"]),
                operation=operation,
                resources=pick(arguments, list(declared.resources)),
                constraints=pick(arguments, list(declared.constraints)),
                arguments=arguments,
            ),
        )
        if not verdict.allowed:
            logger.info(
                "task %s: %s denied by policy: %s",
                context.task_id,
                declared.id,
                [(name, d.reason if d else None) for name, d in verdict.opinions],
            )
            raise ConditionError(
                ErrorCode.AUTHORIZATION_FAILED,
                f"the caller is not authorized to invoke {declared.id!r}",
            )
        return operation

    async def _approved(
        self,
        skill: RegisteredSkill,
        operation: str | None,
        arguments: Any,
        context: RequestContext,
        updater: TaskUpdater,
    ) -> bool:
        """True when the call may go on; False when it waits for an operator.

        Runs on every turn of the task (a replay asks again), so a decision
        made while the task waited is seen, and nothing is cached across tasks.
        """
        if not needs_approval(skill, operation):
            return True
        declared = skill.skill
        caller = caller_of(context)
        resources = pick(arguments, list(declared.resources))
        request = AuthorizationRequest(
            caller=caller,
            skill_id=declared.id,
            skill_version=declared.version,
            plugin=skill.plugin,
            authority=dict(skill.interface.document["authority"]),
            operation=operation,
            resources=resources,
            constraints=pick(arguments, list(declared.constraints)),
            arguments=arguments,
        )
        verdict = await authorize(self.manager, request, hook="approve_invocation")
        if verdict.denied:
            raise ConditionError(ErrorCode.AUTHORIZATION_FAILED, "the invocation was not approved")
        if verdict.allowed:
            return True
        if self.approvals is None:
            raise ConditionError(
                ErrorCode.AUTHORIZATION_FAILED,
                f"{declared.id!r} requires an approval and this agent has no approval store",
            )
        assert context.task_id is not None
        approval = await self.approvals.arequest(
            task_id=context.task_id,
            skill_id=declared.id,
            skill_version=declared.version,
            operation=operation,
            caller=caller.identity,
            tenant=caller.tenant,
            resources=resources,
        )
        if approval.state == GRANTED:
            return True
        if approval.state == DENIED:
            raise ConditionError(ErrorCode.AUTHORIZATION_FAILED, "the invocation was not approved")
        audit.info("task %s of %s waits for approval %s", context.task_id, declared.id, approval.id)
        await updater.requires_input(
            updater.new_agent_message([data_part(approval.waiting_part())])
        )
        return False

    async def _describe_skill(self, request: SkillRequest, updater: TaskUpdater) -> None:
        skill_id = request.arguments["skill_id"]
        if self.registry.get(skill_id) is None:
            raise ConditionError(
                ErrorCode.SKILL_NOT_ADVERTISED,
                f"skill {skill_id!r} is not advertised by this agent",
            )
        payload = self._describe.get(skill_id)
        if payload is None:
            raise ConditionError(
                ErrorCode.INTERFACE_UNAVAILABLE,
                f"the interface of {skill_id!r} cannot be returned right now",
            )
        await updater.add_artifact(
            [payload],
            artifact_id=RESULT_ARTIFACT_ID,
            name=DESCRIBE_SKILL,
            extensions=[EXTENSION_URI],
        )
        await updater.complete()

    async def _run(
        self,
        skill: RegisteredSkill,
        arguments: Any,
        answers: list[Any],
        operation: str | None,
        context: RequestContext,
        updater: TaskUpdater,
    ) -> None:
        declared = skill.skill
        progress_sent = False

        async def publish_record(kind: str, record: Any, artifact_id: str | None) -> str:
            schema = skill.interface.records.get(kind)
            if schema is None:
                raise ConditionError(
                    ErrorCode.OUTPUT_INVALID,
                    f"{declared.id!r} published a record of undeclared kind {kind!r}",
                )
            chosen = artifact_id or str(uuid.uuid4())
            if chosen == RESULT_ARTIFACT_ID:
                raise ConditionError(
                    ErrorCode.OUTPUT_INVALID,
                    f"artifact id {chosen!r} is reserved for the primary result",
                )
            _check_numbers(record, f"supporting record of kind {kind!r}")
            details = schema.validate(record)
            if details:
                raise ConditionError(
                    ErrorCode.OUTPUT_INVALID,
                    f"a supporting record of kind {kind!r} does not validate against its schema",
                    details,
                )
            await updater.add_artifact(
                [data_part(record)],
                artifact_id=chosen,
                name=kind,
                append=False,
                last_chunk=True,
                extensions=[EXTENSION_URI],
            )
            return chosen

        async def publish_progress(partial: Any) -> None:
            nonlocal progress_sent
            _check_numbers(partial, "progressive result")
            await updater.add_artifact(
                [data_part({"skill": declared.id, "result": partial})],
                artifact_id=RESULT_ARTIFACT_ID,
                name=declared.id,
                append=False,
                last_chunk=False,
                extensions=[EXTENSION_URI],
            )
            progress_sent = True

        assert context.task_id is not None
        handler_context = SkillContext(
            task_id=context.task_id,
            context_id=updater.context_id,
            skill_id=declared.id,
            skill_version=declared.version,
            caller=caller_of(context),
            publish_record=publish_record,
            publish_progress=publish_progress,
            answers=answers,
            operation=operation,
            delegation=self.delegation,
        )
        self._running[context.task_id] = handler_context
        await updater.start_work()
        try:
            result = await declared.handler(arguments, handler_context)
        except InputRequired as asked:
            _check_numbers(asked.request, "input request")
            await updater.requires_input(updater.new_agent_message([data_part(asked.request)]))
            return
        except (ConditionError, asyncio.CancelledError):
            raise
        except Exception as exc:
            _log_failure(
                f"task %s: handler of {declared.id} (plugin {skill.plugin}) raised",
                context.task_id,
                exc,
            )
            raise ConditionError(
                ErrorCode.OUTPUT_INVALID,
                f"the skill failed before producing a valid result (task {context.task_id})",
            ) from None
        _check_numbers(result, "result")
        details = skill.interface.output.validate(result)
        if details:
            unusable = " (progressive results already sent are unusable)" if progress_sent else ""
            raise ConditionError(
                ErrorCode.OUTPUT_INVALID,
                f"the result of {declared.id!r} does not validate against its output_schema"
                + unusable,
                details,
            )
        await updater.add_artifact(
            [data_part({"skill": declared.id, "result": result})],
            artifact_id=RESULT_ARTIFACT_ID,
            name=declared.id,
            append=False,
            last_chunk=True,
            extensions=[EXTENSION_URI],
        )
        await updater.complete()
        audit.info("task %s of %s completed", context.task_id, declared.id)

    async def _end_with_error(
        self, updater: TaskUpdater, error: ConditionError, *, accepted: bool
    ) -> None:
        state = final_state(error.code, accepted=accepted)
        audit.info(
            "task %s ended %s with %s (%d detail(s))",
            updater.task_id,
            TaskState.Name(state),
            error.code.value,
            len(error.details),
        )
        message = updater.new_agent_message([data_part(error.to_error_object())])
        await updater.update_status(state, message=message)


def _check_numbers(value: Any, what: str) -> None:
    try:
        check_numbers(value)
    except UnsafeNumber as exc:
        raise ConditionError(
            ErrorCode.OUTPUT_INVALID,
            f"{what}: {exc}; carry 64-bit values as strings",
            (ErrorDetail(instance_path=exc.pointer, keyword="integer-range"),),
        ) from None


def needs_approval(skill: RegisteredSkill, operation: str | None) -> bool:
    """Execute-mode skills, or the operations of a multi-operation skill declared so."""
    declared = skill.skill
    if declared.operations:
        chosen = next((op for op in declared.operations if op.name == operation), None)
        return chosen is not None and chosen.may_require_approval
    return declared.authority.default_mode == "execute"


def _is_approval_wait(message: Message) -> bool:
    if len(message.parts) != 1 or not message.parts[0].HasField("data"):
        return False
    value = from_value(message.parts[0].data)
    return isinstance(value, dict) and APPROVAL_KEY in value


def _skill_of(task: Task) -> str | None:
    value = task.metadata.fields.get(SKILL_METADATA_KEY)
    return value.string_value if value is not None and value.string_value else None
