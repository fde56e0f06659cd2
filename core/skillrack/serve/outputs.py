"""What a handler sends out, validated before it leaves the host.

The draft's last steps before a response: a supporting record validates
against the schema of its declared kind, the final result against the
skill's ``output_schema``; a progressive result is not validated (the draft
applies ``output_schema`` only to the complete final result), but like
everything else it must carry only numbers a JSON peer reads exactly.  A
failure is ``output_invalid`` and nothing of the failed value is sent.
:class:`Outputs` hands its ``publish_record`` and ``publish_progress`` to the
:class:`~skillrack.serve.context.SkillContext`, and the executor gives it the
handler's return value.
"""

from __future__ import annotations

import uuid
from typing import Any

from skillrack.errors import ConditionError, ErrorCode, ErrorDetail
from skillrack.host.registry import RegisteredSkill
from skillrack.protocol.wire import UnsafeNumber, check_numbers
from skillrack.serve.artifacts import RESULT_ARTIFACT_ID, ArtifactPublisher


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


class Outputs:
    """The records, progressive results and final result of one run of one skill's handler."""

    def __init__(self, skill: RegisteredSkill, artifacts: ArtifactPublisher) -> None:
        self.skill = skill
        self.artifacts = artifacts
        #: Whether a progressive result went out: a final result that then fails
        #: validation makes those unusable, and the error says so.
        self.progress_sent = False

    async def publish_record(self, kind: str, record: Any, artifact_id: str | None) -> str:
        """Validate a supporting record and send it; returns its Artifact id."""
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
        await self.artifacts.record(kind, record, chosen)
        return chosen

    async def publish_progress(self, partial: Any) -> None:
        """Send a progressive version of the primary result (replacing the previous one)."""
        check_safe_numbers(partial, "progressive result")
        await self.artifacts.result(self.skill.skill_id, partial, final=False)
        self.progress_sent = True

    async def publish_result(self, result: Any) -> None:
        """Validate the final result against ``output_schema`` and send it."""
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
