"""Steps 4-6 of the client procedure: read ``describe_skill``'s answer, verify it, judge its trust.

:func:`describe_result` checks the shape of the completed task (one
Artifact named ``describe_skill``, one Data Part, ``{"skill", "result":
{"interface_digest", "interface"}}``).  :func:`verify_described` verifies
the document (the Skill Interface Schema, every inline schema and its
digest) and that the returned, computed and advertised digests agree and
name the selected skill and version: "a structurally valid document for a
different skill, version, or digest MUST NOT be accepted as a substitute".
A document read back from the on-disk cache goes through the same function.
Given the interface verified for another agent under the same key and
limits, it shares that one (document and compiled validators) when the
returned document's JCS bytes are exactly those of its document: every check
is a function of those bytes and the limits, so it would pass the same way.
:func:`refuse_untrusted` applies the schema trust policy
(:mod:`skillrack.interface.trust`); :func:`check_arguments` is step 7, the
arguments against the verified ``input_schema``, before anything is sent.  Every failure is a local
``SkillCallError`` with the draft's code and one line.
"""

from __future__ import annotations

from typing import Any

from a2a.types import Task, TaskState

from skillrack.client.cache import CacheKey
from skillrack.client.outcome import outcome
from skillrack.errors import ErrorCode, SkillCallError
from skillrack.interface.canonical import CanonicalizationError, canonical_bytes
from skillrack.interface.document import (
    DESCRIBE_SKILL,
    InterfaceError,
    VerifiedInterface,
    verify_document,
)
from skillrack.interface.limits import Limits
from skillrack.interface.trust import SchemaPolicy
from skillrack.protocol.states import TERMINAL
from skillrack.protocol.values import UnsafeNumber, check_numbers, from_value


def describe_result(task: Task) -> tuple[Any, str]:
    """``(document, interface_digest)`` of a ``describe_skill`` task, or the reason it has none."""
    completed = task.status.state == TaskState.TASK_STATE_COMPLETED
    if not completed and task.status.state in TERMINAL:
        outcome(task, DESCRIBE_SKILL, None)  # raises the remote task's error
    artifacts = list(task.artifacts)
    if not completed or len(artifacts) != 1 or artifacts[0].name != DESCRIBE_SKILL:
        raise SkillCallError.local(
            ErrorCode.INTERFACE_INVALID,
            "describe_skill must complete with exactly one Artifact named describe_skill",
        )
    parts = artifacts[0].parts
    if len(parts) != 1 or not parts[0].HasField("data"):
        raise SkillCallError.local(
            ErrorCode.INTERFACE_INVALID,
            "the describe_skill Artifact must hold exactly one Data Part",
        )
    value = from_value(parts[0].data)
    result = value.get("result") if isinstance(value, dict) else None
    if (
        not isinstance(value, dict)
        or value.get("skill") != DESCRIBE_SKILL
        or not isinstance(result, dict)
        or set(result) != {"interface_digest", "interface"}
    ):
        raise SkillCallError.local(
            ErrorCode.INTERFACE_INVALID,
            "the describe_skill result is not "
            '{"skill": "describe_skill", "result": {"interface_digest", "interface"}}',
        )
    return result["interface"], result["interface_digest"]


def verify_described(
    document: Any,
    returned_digest: str,
    key: CacheKey,
    limits: Limits,
    alike: VerifiedInterface | None = None,
) -> VerifiedInterface:
    """``document`` verified, its digests agreeing with ``key``'s (the card's advertisement).

    ``alike``: the interface verified under ``limits`` for another agent with
    ``key``'s skill, versions and digest (:meth:`InterfaceCache.alike`); it is
    returned when ``document`` is that very document (module docstring).
    """
    skill_id, advertised = key.skill_id, key.interface_digest
    if returned_digest != advertised:
        raise SkillCallError.local(
            ErrorCode.INTERFACE_INVALID,
            f"describe_skill returned digest {returned_digest} but the card advertises "
            f"{advertised}",
        )
    if alike is not None and _same_document(document, alike, key):
        return alike
    try:
        verified = verify_document(document, limits)
    except InterfaceError as exc:
        raise SkillCallError.local(
            exc.code,
            f"the document of {skill_id!r} is not acceptable "
            f"({exc.rule} at {exc.pointer or '/'}): {exc.message}",
        ) from None
    if verified.interface_digest != advertised:
        raise SkillCallError.local(
            ErrorCode.INTERFACE_INVALID,
            f"the document's computed digest {verified.interface_digest} differs from the "
            f"advertised {advertised}",
        )
    if verified.skill_id != skill_id or verified.skill_version != key.skill_version:
        raise SkillCallError.local(
            ErrorCode.INTERFACE_INVALID,
            f"describe_skill returned the document of {verified.skill_id!r} "
            f"{verified.skill_version}, not of {skill_id!r} {key.skill_version}",
        )
    return verified


def _same_document(document: Any, alike: VerifiedInterface, key: CacheKey) -> bool:
    """Whether ``document``'s JCS bytes are those of ``alike``'s document, verified for ``key``."""
    if (
        alike.interface_digest != key.interface_digest
        or alike.skill_id != key.skill_id
        or alike.skill_version != key.skill_version
    ):
        return False
    try:
        return canonical_bytes(document) == canonical_bytes(alike.document)
    except CanonicalizationError:
        return False  # the full verification says why


def refuse_untrusted(policy: SchemaPolicy, agent: str, interface: VerifiedInterface) -> None:
    """Raise ``interface_invalid`` when ``policy`` refuses a Schema Reference of ``interface``.

    Locally, before any invocation; the line names the first reference
    refused (a JSON Pointer into the document) and why, and counts the others.
    """
    refused = policy.refusals(interface)
    if not refused:
        return
    more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
    raise SkillCallError.local(
        ErrorCode.INTERFACE_INVALID,
        f"the document of {interface.skill_id!r} at {agent} is outside this client's "
        f"schema trust policy, so the skill is not called: {refused[0]}{more}",
    )


def check_arguments(interface: VerifiedInterface, arguments: Any) -> None:
    """Raise ``input_invalid`` (with details) when ``arguments`` do not validate."""
    try:
        check_numbers(arguments)
    except UnsafeNumber as exc:
        raise SkillCallError.local(
            ErrorCode.INPUT_INVALID,
            f"{exc}; A2A carries numbers as doubles, send such values as strings",
        ) from None
    try:
        details = interface.input.validate(arguments)
    except Exception as exc:  # resource limits
        code = getattr(exc, "code", ErrorCode.RESOURCE_LIMIT_EXCEEDED)
        raise SkillCallError.local(code, str(getattr(exc, "message", exc))) from None
    if details:
        raise SkillCallError.local(
            ErrorCode.INPUT_INVALID,
            "the arguments do not validate against the "
            f"input_schema of {interface.skill_id!r}; nothing was sent",
            details,
        )
