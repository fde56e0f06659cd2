"""Every Artifact a task sends, in one place: ids, names, chunking and the extension URI.

A skill's task sends three kinds of Artifact: the primary result (under the
fixed id :data:`RESULT_ARTIFACT_ID`, named after the skill, replaced by each
progressive version and by the final one), supporting records (one Artifact
each, named after the record's kind) and ``describe_skill``'s answer.  All
carry the schema-interface extension URI and replace rather than append, so
that a replayed task (see :mod:`skillrack.serve.execution.skill_context`) rewrites what it sent
before instead of repeating it.  What goes into them is validated before it
gets here (:mod:`skillrack.serve.execution.outputs`).
"""

from __future__ import annotations

from typing import Any

from a2a.server.tasks import TaskUpdater
from a2a.types import Artifact, Part, TaskArtifactUpdateEvent

from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.protocol.values import data_part

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

    async def describe(self, artifact: Artifact) -> None:
        """``describe_skill``'s answer, the Artifact :func:`describe_artifact` built at start-up.

        The event is the one ``TaskUpdater.add_artifact`` would send for the
        payload, byte for byte (its Artifact copied the same way, through the
        constructor), without building the Artifact, and copying the whole
        document into it, again for every request.
        """
        updater = self._updater
        event = TaskArtifactUpdateEvent(
            task_id=updater.task_id, context_id=updater.context_id, artifact=artifact
        )
        await updater.event_queue.enqueue_event(event)

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


def describe_artifact(payload: Part) -> Artifact:
    """``describe_skill``'s answer Artifact for one payload, built once (see ``describe``)."""
    return Artifact(
        artifact_id=RESULT_ARTIFACT_ID,
        name=DESCRIBE_SKILL,
        parts=[payload],
        extensions=[EXTENSION_URI],
    )
