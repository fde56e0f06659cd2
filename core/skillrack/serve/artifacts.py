"""Every Artifact a task sends, in one place: ids, names, chunking and the extension URI.

A skill's task sends three kinds of Artifact: the primary result (under the
fixed id :data:`RESULT_ARTIFACT_ID`, named after the skill, replaced by each
progressive version and by the final one), supporting records (one Artifact
each, named after the record's kind) and ``describe_skill``'s answer.  All
carry the schema-interface extension URI and replace rather than append, so
that a replayed task (see :mod:`skillrack.serve.context`) rewrites what it sent
before instead of repeating it.  What goes into them is validated before it
gets here (:mod:`skillrack.serve.outputs`).
"""

from __future__ import annotations

from typing import Any

from a2a.server.tasks import TaskUpdater
from a2a.types import Part

from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.protocol.wire import data_part

#: The primary result Artifact's id.  Artifact ids are task-scoped, so one
#: fixed id is unambiguous, and a replayed or progressive result replaces it.
RESULT_ARTIFACT_ID = "result"


class ArtifactPublisher:
    """Sends the Artifacts of one task through its ``TaskUpdater``."""

    def __init__(self, updater: TaskUpdater) -> None:
        self._updater = updater

    async def result(self, skill_id: str, result: Any, *, final: bool = True) -> None:
        """The primary result; ``final`` false for a progressive version (more will follow)."""
        part = data_part({"skill": skill_id, "result": result})
        await self._publish(part, artifact_id=RESULT_ARTIFACT_ID, name=skill_id, last_chunk=final)

    async def record(self, kind: str, record: Any, artifact_id: str) -> None:
        """A supporting record, as its own Artifact."""
        await self._publish(data_part(record), artifact_id=artifact_id, name=kind, last_chunk=True)

    async def describe(self, payload: Part) -> None:
        """``describe_skill``'s answer (built once per skill, at start-up)."""
        await self._publish(payload, artifact_id=RESULT_ARTIFACT_ID, name=DESCRIBE_SKILL)

    async def _publish(
        self, part: Part, *, artifact_id: str, name: str, last_chunk: bool | None = None
    ) -> None:
        await self._updater.add_artifact(
            [part],
            artifact_id=artifact_id,
            name=name,
            append=False,
            last_chunk=last_chunk,
            extensions=[EXTENSION_URI],
        )
