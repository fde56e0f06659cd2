"""``describe_skill``'s answers: every advertised skill's document as a Data Part, built once.

The draft: the response "MUST be the previously assembled and validated
document"; nothing is assembled per request.  The executor looks its answer
up in the table :func:`describe_artifacts` builds when the agent starts.
"""

from __future__ import annotations

import logging

from a2a.types import Artifact, Part
from google.protobuf import json_format

from skillrack.errors import ConditionError, ErrorCode
from skillrack.host.registry import RegisteredSkill, Registry
from skillrack.interface.canonical import digest_of
from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.protocol.proto_json import remember
from skillrack.protocol.values import data_part
from skillrack.serve.execution.artifacts import describe_artifact

logger = logging.getLogger(__name__)


def _carried_problem(part: Part, skill: RegisteredSkill) -> str | None:
    """Why the Data Part does not carry ``skill``'s validated document, or None.

    The Part is read back as a receiver reads it (numbers as doubles), and the
    document it holds must have the advertised digest, as must the
    ``interface_digest`` beside it: what leaves the agent is then exactly the
    document that was validated.
    """
    try:
        carried = json_format.MessageToDict(part.data)
        result = carried["result"]
        if result["interface_digest"] != skill.interface_digest:
            return "its interface_digest is not the advertised one"
        if digest_of(result["interface"]) != skill.interface_digest:
            return "the document it carries does not have the advertised digest"
    except Exception as exc:  # anything unreadable is a payload that cannot be trusted
        return f"it cannot be read back ({type(exc).__name__})"
    return None


def describe_artifacts(registry: Registry) -> dict[str, Artifact | ConditionError]:
    """Each skill's payload as the Artifact ``describe_skill`` answers with, built once.

    Both are the same for every request, so both are done once: the Artifact
    here, its Data Part's JSON dict on the first answer that carries it
    (:func:`skillrack.protocol.proto_json.remember`).
    """
    artifacts: dict[str, Artifact | ConditionError] = {}
    for skill_id, payload in describe_payloads(registry).items():
        if isinstance(payload, ConditionError):
            artifacts[skill_id] = payload
            continue
        remember(payload.data)
        artifacts[skill_id] = describe_artifact(payload)
    return artifacts


def describe_payloads(registry: Registry) -> dict[str, Part | ConditionError]:
    """The ``describe_skill`` result Data Part of every advertised skill, built once.

    The draft: the response "MUST be the previously assembled and validated
    document"; nothing is assembled per request.  A payload that cannot be
    built (its document does not convert to a Data Part) is logged and left
    out: the skill stays advertised, and ``describe_skill`` for it reports
    ``interface_unavailable`` instead of stopping the whole agent.  A payload
    that does not carry the validated document (read back, its digest differs
    from the advertised one) is logged and replaced by the ``interface_invalid``
    its ``describe_skill`` then reports: the draft's "If the available document
    is malformed, inconsistent with the selected skill, versions, or digest
    ... the agent MUST report interface_invalid".
    """
    payloads: dict[str, Part | ConditionError] = {}
    for skill in registry:
        try:
            part = data_part(
                {
                    "skill": DESCRIBE_SKILL,
                    "result": {
                        "interface_digest": skill.interface_digest,
                        "interface": skill.interface.document,
                    },
                }
            )
        except Exception as exc:  # one skill's payload must not stop the agent
            logger.error(
                "the describe_skill payload of %s (plugin %s) could not be built (%s); "
                "describe_skill reports interface_unavailable for it",
                skill.skill_id,
                skill.plugin,
                type(exc).__name__,
            )
            continue
        problem = _carried_problem(part, skill)
        if problem is None:
            payloads[skill.skill_id] = part
            continue
        logger.error(
            "the describe_skill payload of %s (plugin %s) does not carry its validated "
            "document: %s; describe_skill reports interface_invalid for it",
            skill.skill_id,
            skill.plugin,
            problem,
        )
        payloads[skill.skill_id] = ConditionError(
            ErrorCode.INTERFACE_INVALID,
            f"the interface of {skill.skill_id!r} failed validation and cannot be returned",
        )
    return payloads
