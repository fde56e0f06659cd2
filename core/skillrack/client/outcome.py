"""From a remote Task to a validated outcome (client steps 9 and 10).

A streamed Task is assembled from its events first (artifact updates by
``artifactId``, ``append`` and ``lastChunk``, as A2A defines them), so that a
synchronous, streamed or polled call is judged on the same final Task.  Then:
a completed Task must hold exactly one primary result Artifact (named by the
skill id, one Data Part ``{"skill", "result"}``) whose result validates
against ``output_schema``, and every other Artifact must be a supporting
record of a declared kind that validates against that kind's schema.  A
completed Task that fails this is unusable: ``output_invalid``, locally,
without pretending the remote state changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from a2a.types import Artifact, StreamResponse, Task, TaskState

from skillrack.errors import ConditionError, ErrorCode, SkillCallError, parse_error_object
from skillrack.interface.document import VerifiedInterface
from skillrack.protocol.messages import APPROVAL_KEY
from skillrack.protocol.values import from_value


def state_name(state: int) -> str:
    return TaskState.Name(state)


@dataclass(frozen=True)
class SkillResult:
    """A validated outcome: the result, and records keyed by their ``artifactId``."""

    task_id: str
    state: str
    result: Any = None
    records: Mapping[str, Any] = field(default_factory=dict)
    record_kinds: Mapping[str, str] = field(default_factory=dict)
    input_request: Any = None

    @property
    def approval(self) -> dict[str, Any] | None:
        """What the task waits for when an operator's approval parks it, else ``None``.

        A skillrack agent says so in the input request's Data Part
        (``{"skillrack_approval": {"approval_id", "approver", ...}}``); the
        caller then sends any follow-up Message once it is decided
        (:meth:`SkillClient.resume <skillrack.client.skill_client.SkillClient.resume>`).
        """
        if self.state != state_name(TaskState.TASK_STATE_INPUT_REQUIRED):
            return None
        request = self.input_request
        waiting = request.get(APPROVAL_KEY) if isinstance(request, dict) else None
        return waiting if isinstance(waiting, dict) else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "task_id": self.task_id,
            "state": self.state,
            "result": self.result,
            "records": dict(self.records),
        }
        if self.state == state_name(TaskState.TASK_STATE_INPUT_REQUIRED):
            out["input_request"] = self.input_request
        return out


class TaskAssembler:
    """Rebuilds the Task a stream describes, event by event."""

    def __init__(self) -> None:
        self.task: Task | None = None

    def apply(self, event: StreamResponse) -> None:
        kind = event.WhichOneof("payload")
        if kind == "task":
            self.task = Task()
            self.task.CopyFrom(event.task)
            return
        if self.task is None:
            raise SkillCallError.local(
                ErrorCode.OUTPUT_INVALID, f"the stream sent {kind} before the Task"
            )
        if kind == "status_update":
            self.task.status.CopyFrom(event.status_update.status)
        elif kind == "artifact_update":
            self._artifact(event.artifact_update.artifact, event.artifact_update.append)

    def _artifact(self, artifact: Artifact, append: bool) -> None:
        assert self.task is not None
        for existing in self.task.artifacts:
            if existing.artifact_id == artifact.artifact_id:
                if append:
                    existing.parts.extend(artifact.parts)
                else:
                    existing.CopyFrom(artifact)
                return
        if append:
            raise SkillCallError.local(
                ErrorCode.OUTPUT_INVALID,
                f"append to unknown artifact {artifact.artifact_id!r} in the stream",
            )
        self.task.artifacts.append(artifact)


def _single_data(artifact: Artifact, what: str) -> Any:
    if len(artifact.parts) != 1 or not artifact.parts[0].HasField("data"):
        raise SkillCallError.local(
            ErrorCode.OUTPUT_INVALID, f"{what} must hold exactly one Data Part"
        )
    return from_value(artifact.parts[0].data)


def _status_data(task: Task) -> Any:
    parts = task.status.message.parts
    if len(parts) == 1 and parts[0].HasField("data"):
        return from_value(parts[0].data)
    return None


def outcome(task: Task, skill_id: str, interface: VerifiedInterface | None) -> SkillResult:
    """Judge a final (or interrupted) Task; raise :class:`SkillCallError` when unusable."""
    state = task.status.state
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        return SkillResult(task.id, state_name(state), input_request=_status_data(task))
    if state != TaskState.TASK_STATE_COMPLETED:
        parsed = parse_error_object(_status_data(task))
        code, message, details = parsed if parsed else ("unknown", None, [])
        raise SkillCallError(
            code=code,
            message=message or f"the remote task ended {state_name(state)}",
            details=tuple(details),
            remote=True,
            task_id=task.id,
            state=state_name(state),
        )
    primaries = [a for a in task.artifacts if a.name == skill_id]
    if len(primaries) != 1:
        raise _unusable(
            task,
            f"expected exactly one primary result Artifact named "
            f"{skill_id!r}, found {len(primaries)}",
        )
    value = _single_data(primaries[0], "the primary result Artifact")
    if (
        not isinstance(value, dict)
        or set(value) != {"skill", "result"}
        or value["skill"] != skill_id
    ):
        raise _unusable(task, 'the primary result is not {"skill", "result"} for this skill')
    result = value["result"]
    records: dict[str, Any] = {}
    kinds: dict[str, str] = {}
    for artifact in task.artifacts:
        if artifact is primaries[0]:
            continue
        record = _single_data(artifact, f"record Artifact {artifact.artifact_id!r}")
        if interface is not None:
            schema = interface.records.get(artifact.name)
            if schema is None:
                raise _unusable(
                    task, f"Artifact {artifact.artifact_id!r} has undeclared kind {artifact.name!r}"
                )
            _validate(task, schema.validate, record, f"record {artifact.artifact_id!r}")
        records[artifact.artifact_id] = record
        kinds[artifact.artifact_id] = artifact.name
    if interface is not None:
        _validate(task, interface.output.validate, result, "the result")
    return SkillResult(task.id, state_name(state), result, records, kinds)


def _validate(task: Task, validate: Any, value: Any, what: str) -> None:
    try:
        details = validate(value)
    except ConditionError as exc:  # resource limits on a hostile agent's output
        raise SkillCallError(
            exc.code.value,
            f"{what}: {exc.message}",
            task_id=task.id,
            state=state_name(task.status.state),
        ) from None
    if details:
        raise SkillCallError(
            ErrorCode.OUTPUT_INVALID.value,
            f"{what} does not validate although the remote task completed; it is unusable",
            tuple(d.to_dict() for d in details),
            task_id=task.id,
            state=state_name(task.status.state),
        )


def _unusable(task: Task, message: str) -> SkillCallError:
    return SkillCallError(
        ErrorCode.OUTPUT_INVALID.value,
        message + "; the output is unusable",
        task_id=task.id,
        state=state_name(task.status.state),
    )
