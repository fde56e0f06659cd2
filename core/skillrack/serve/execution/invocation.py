"""The invocation check, and the one description of a call that policies decide on.

A domain-skill request is checked in a fixed order: the skill is advertised
and ``skill_version`` and ``interface_digest`` name its active document
(:func:`select_skill`; ``interface_mismatch`` before anything looks at
``arguments``); then the executor asks whether this caller may invoke the
skill at all (:func:`skill_authorization_request`, see
:mod:`skillrack.serve.security.authz`), so that validation details reach only
callers allowed the skill; then ``arguments`` validate against
``input_schema`` (:func:`check_invocation`), which returns an
:class:`Invocation`, whose :class:`~skillrack.serve.security.authz.AuthorizationRequest`
(built here, and only here) is what both authorization policies
(``authorize_invocation``) and approvers (``approve_invocation``) see, so the
two can never disagree on the operation or the resources of one call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillrack.errors import ConditionError, ErrorCode
from skillrack.host.registry import RegisteredBaseSkill, RegisteredSkill, Registry
from skillrack.protocol.messages import SkillRequest
from skillrack.protocol.parts import IncomingMessage
from skillrack.serve.security.approved import Approved
from skillrack.serve.security.authz import (
    BASE_KIND,
    INVOCATION_SCOPE,
    SKILL_SCOPE,
    AuthorizationRequest,
    pick,
)
from skillrack.serve.security.caller import Caller


@dataclass(frozen=True)
class BaseCall:
    """A turn of a base-A2A skill: the skill, the caller's Message and the ones before it."""

    skill: RegisteredBaseSkill
    message: IncomingMessage
    history: Sequence[IncomingMessage] = ()


@dataclass(frozen=True)
class Invocation:
    """A call that passed the invocation check, for one turn of its task.

    For a base-A2A skill, ``skill`` is its :class:`RegisteredBaseSkill` and
    ``base_call`` the Message it answers (there are no arguments to validate).
    """

    skill: RegisteredSkill | RegisteredBaseSkill
    #: Who calls, which skill, what operation, on what: what policies and approvers decide on.
    request: AuthorizationRequest
    #: The caller's answers to the handler's questions so far
    #: (see :mod:`skillrack.serve.execution.skill_context`).
    answers: Sequence[Any] = ()
    base_call: BaseCall | None = None
    #: What let the call through the approval step (``context.approval``), once it did.
    approved: Approved | None = None

    @property
    def arguments(self) -> Any:
        return self.request.arguments

    @property
    def operation(self) -> str | None:
        return self.request.operation

    @property
    def caller(self) -> Caller:
        return self.request.caller


def select_skill(registry: Registry, request: SkillRequest) -> RegisteredSkill:
    """The advertised skill whose active document the request names, or the refusing condition."""
    skill = registry.get(request.skill)
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
    return skill


def check_invocation(
    registry: Registry, request: SkillRequest, caller: Caller, answers: Sequence[Any] = ()
) -> Invocation:
    """The checked invocation, or the condition that refuses it (the task is then REJECTED)."""
    skill = select_skill(registry, request)
    details = skill.interface.input.validate(
        request.arguments, sensitive=tuple(skill.skill.sensitive)
    )
    if details:
        raise ConditionError(
            ErrorCode.INPUT_INVALID,
            f"arguments do not validate against the input_schema of {skill.skill_id!r}",
            details,
        )
    return Invocation(skill, authorization_request(skill, request.arguments, caller), answers)


def skill_authorization_request(skill: RegisteredSkill, caller: Caller) -> AuthorizationRequest:
    """What a policy sees before validation: the caller and the skill, no details yet."""
    declared = skill.skill
    return AuthorizationRequest(
        caller=caller,
        skill_id=declared.id,
        skill_version=declared.version,
        plugin=skill.plugin,
        authority=dict(skill.interface.document["authority"]),
        scope=SKILL_SCOPE,
    )


def base_authorization_request(
    skill: RegisteredBaseSkill, caller: Caller, scope: str = INVOCATION_SCOPE
) -> AuthorizationRequest:
    """What a policy sees of a base skill's call: the caller and the skill (``kind == "base"``).

    A base skill declares no operations, resources or constraints, so both
    decisions see the same request but for ``scope``.
    """
    authority = skill.skill.authority
    return AuthorizationRequest(
        caller=caller,
        skill_id=skill.skill_id,
        skill_version="",
        plugin=skill.plugin,
        authority={
            "default_mode": authority.default_mode,
            "approval_may_be_required": authority.approval_may_be_required,
        },
        scope=scope,
        kind=BASE_KIND,
    )


def has_details(skill: RegisteredSkill) -> bool:
    """Whether the skill declares operations, resources or constraints policies decide on."""
    declared = skill.skill
    return bool(declared.operations or declared.resources or declared.constraints)


def authorization_request(
    skill: RegisteredSkill, arguments: Any, caller: Caller
) -> AuthorizationRequest:
    """What a policy sees of a call: the values at the JSON Pointers the skill declares.

    The operation is the value at the skill's ``operation_selector`` (for a
    multi-operation skill, when it is a string); resources and constraints are
    the values present at the pointers the skill declares for them.
    """
    declared = skill.skill
    operation = None
    if declared.operations and isinstance(arguments, Mapping):
        selected = arguments.get(declared.operation_selector)
        operation = selected if isinstance(selected, str) else None
    return AuthorizationRequest(
        caller=caller,
        skill_id=declared.id,
        skill_version=declared.version,
        plugin=skill.plugin,
        authority=dict(skill.interface.document["authority"]),
        operation=operation,
        resources=pick(arguments, list(declared.resources)),
        constraints=pick(arguments, list(declared.constraints)),
        arguments=arguments,
    )
