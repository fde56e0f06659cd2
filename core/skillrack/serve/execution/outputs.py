"""What a handler sends out, validated before it leaves the host.

The draft's last steps before a response: a supporting record validates
against the schema of its declared kind, the final result against the
skill's ``output_schema``; a progressive result is not validated (the draft
applies ``output_schema`` only to the complete final result), but like
everything else it must carry only numbers a JSON peer reads exactly.  A
failure is ``output_invalid`` and nothing of the failed value is sent.
:class:`Outputs` hands its ``publish_record`` and ``publish_progress`` to the
:class:`~skillrack.serve.execution.skill_context.SkillContext`, and the executor gives it the
handler's return value.

One task may publish at most :attr:`OutputLimits.max_count` progress updates
and records, of at most :attr:`OutputLimits.max_bytes` together: past either,
nothing more is sent, the handler's publish call raises
``resource_limit_exceeded``, and the task fails with it even if the handler
catches the error and returns a result.  A stream's growth is thereby bounded
by the operator (``[server] max_task_outputs`` / ``max_task_output_bytes``),
not by the handler.  After the handler's deadline the outputs are
:meth:`~Outputs.closed` so that a handler still running in the background
cannot add to a task that has ended.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, NoReturn

from skillrack.errors import ConditionError, ErrorCode, ErrorDetail
from skillrack.host.registry import RegisteredSkill
from skillrack.interface.compact_json import compact_json
from skillrack.protocol.values import UnsafeNumber, check_numbers
from skillrack.serve.execution.artifacts import RESULT_ARTIFACT_ID, ArtifactPublisher


def check_safe_numbers(value: Any, what: str) -> None:
    """``output_invalid`` when ``value`` holds a number a JSON peer cannot read exactly."""
    try:
        check_numbers(value)
    except UnsafeNumber as exc:
        raise ConditionError(
            ErrorCode.OUTPUT_INVALID,
            f"{what}: {exc}; carry 64-bit values as strings",
            (ErrorDetail(instance_path=exc.pointer, keyword="integer-range"),),
        ) from None


@dataclass(frozen=True)
class OutputLimits:
    """How much one run of a handler may publish besides its final result."""

    #: Progress updates and supporting records, counted together.
    max_count: int = 1000
    #: Their compact JSON size in bytes, added up.
    max_bytes: int = 10_000_000


def json_size(value: Any, what: str) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON; ``output_invalid`` when it is not JSON."""
    try:
        text = compact_json(value)
        return len(text.encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError):
        raise ConditionError(ErrorCode.OUTPUT_INVALID, f"{what} is not a JSON value") from None


class OutputBudget:
    """What one task may still send besides its final result (:class:`OutputLimits`).

    Shared by schema skills (:class:`Outputs`) and base-A2A skills
    (:mod:`skillrack.serve.execution.base_replies`): the operator's limits bound both alike.
    """

    def __init__(self, skill_id: str, limits: OutputLimits | None = None) -> None:
        self.skill_id = skill_id
        self.limits = limits or OutputLimits()
        #: Outputs sent so far, and their bytes.
        self.count = 0
        self.bytes = 0
        #: Why the task must fail whatever the handler does next (a limit was passed).
        self.refusal: ConditionError | None = None
        self._closed = False

    def close(self) -> None:
        """Send nothing more: the task ended (its deadline passed) while the handler runs on."""
        self._closed = True

    def check_open(self) -> None:
        """Refuse at once, before any validation work, what can no longer be sent."""
        if self._closed:
            raise ConditionError(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                f"{self.skill_id!r} published after its task ended",
            )
        if self.refusal is not None:
            raise self.refusal
        if self.count >= self.limits.max_count:
            self._refuse("more outputs than allowed")

    def admit(self, size: int) -> None:
        """Count one more output of ``size`` bytes, or refuse it (and fail the task)."""
        self.check_open()
        if self.bytes + size > self.limits.max_bytes:
            self._refuse("outputs larger than allowed")
        self.count += 1
        self.bytes += size

    def _refuse(self, reason: str) -> NoReturn:
        self.refusal = ConditionError(
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            f"{self.skill_id!r} published {reason} for one task",
        )
        raise self.refusal


class Outputs:
    """The records, progressive results and final result of one run of one skill's handler."""

    def __init__(
        self,
        skill: RegisteredSkill,
        artifacts: ArtifactPublisher,
        limits: OutputLimits | None = None,
    ) -> None:
        self.skill = skill
        self.artifacts = artifacts
        self.budget = OutputBudget(skill.skill_id, limits)
        #: Whether a progressive result went out: a final result that then fails
        #: validation makes those unusable, and the error says so.
        self.progress_sent = False

    @property
    def refusal(self) -> ConditionError | None:
        """Why the task must fail whatever the handler does next (a limit was passed)."""
        return self.budget.refusal

    def close(self) -> None:
        """Send nothing more: the task ended (its deadline passed) while the handler runs on."""
        self.budget.close()

    def _check_open(self) -> None:
        self.budget.check_open()

    def _admit(self, value: Any, what: str) -> None:
        """Count one more progress update or record, or refuse it (and fail the task)."""
        self.budget.check_open()
        self.budget.admit(json_size(value, what))

    async def publish_record(self, kind: str, record: Any, artifact_id: str | None) -> str:
        """Validate a supporting record and send it; returns its Artifact id."""
        self._check_open()
        schema = self.skill.interface.records.get(kind)
        if schema is None:
            raise ConditionError(
                ErrorCode.OUTPUT_INVALID,
                f"{self.skill.skill_id!r} published a record of undeclared kind {kind!r}",
            )
        chosen = artifact_id or str(uuid.uuid4())
        if chosen == RESULT_ARTIFACT_ID:
            raise ConditionError(
                ErrorCode.OUTPUT_INVALID,
                f"artifact id {chosen!r} is reserved for the primary result",
            )
        check_safe_numbers(record, f"supporting record of kind {kind!r}")
        details = schema.validate(record)
        if details:
            raise ConditionError(
                ErrorCode.OUTPUT_INVALID,
                f"a supporting record of kind {kind!r} does not validate against its schema",
                details,
            )
        self._admit(record, f"supporting record of kind {kind!r}")
        await self.artifacts.record(kind, record, chosen)
        return chosen

    async def publish_progress(self, partial: Any) -> None:
        """Send a progressive version of the primary result (replacing the previous one)."""
        self._check_open()
        check_safe_numbers(partial, "progressive result")
        self._admit(partial, "progressive result")
        await self.artifacts.result(self.skill.skill_id, partial, final=False)
        self.progress_sent = True

    async def publish_result(self, result: Any) -> None:
        """Validate the final result against ``output_schema`` and send it.

        A limit passed earlier fails the task here, even when the handler
        caught the publish call's error and returned.
        """
        if self.refusal is not None:
            raise self.refusal
        check_safe_numbers(result, "result")
        details = self.skill.interface.output.validate(result)
        if details:
            unusable = (
                " (progressive results already sent are unusable)" if self.progress_sent else ""
            )
            raise ConditionError(
                ErrorCode.OUTPUT_INVALID,
                f"the result of {self.skill.skill_id!r} does not validate against its "
                "output_schema" + unusable,
                details,
            )
        await self.artifacts.result(self.skill.skill_id, result)
