"""What a vendor writes: the typed declaration of one skill.

A vendor never writes a digest or a Skill Interface Document by hand.  It
names its schemas (shipped as package data) with the ``schema_uri`` and
``version`` it publishes them under, says how the skill interacts and what
authority posture it advertises, and gives an async handler.  The host turns
this into a validated, digested document (``interface.py``); a declaration
that breaks a rule is refused there, with the plugin, the skill and the field
named, rather than here, so that one bad skill never stops the others from
loading.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from skillrack.errors import SkillrackError
from skillrack.interface.canonical import loads_strict

if TYPE_CHECKING:
    # The handlers' signatures name a caller, a Message and a delegation's result, which
    # live in rooms above this one: hookspecs states them, for type checkers only.
    from skillrack.hookspecs import BaseHandler, ChangesNothing, Handler, MessageMatcher, Precheck

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

ResponseMode = Literal["sync", "stream", "poll"]
AuthorityMode = Literal["observe_only", "recommend_only", "execute"]


@dataclass(frozen=True)
class DomainSchema:
    """A domain schema and the portable identity its publisher gives it.

    ``source`` is either the schema value itself or a ``(package, path)`` pair
    naming package data; package data is read at assembly time so that a
    missing or malformed file refuses this skill instead of crashing the host.
    """

    schema_uri: str
    version: str
    source: Any
    dialect: str = DRAFT_2020_12

    @classmethod
    def from_package(
        cls, package: str, path: str, *, schema_uri: str, version: str, dialect: str = DRAFT_2020_12
    ) -> DomainSchema:
        """Declare a schema shipped as package data, e.g. ``("acme_skills", "schemas/in.json")``."""
        return cls(
            schema_uri=schema_uri,
            version=version,
            source=_PackageFile(package, path),
            dialect=dialect,
        )

    @classmethod
    def inline(
        cls, schema: Any, *, schema_uri: str, version: str, dialect: str = DRAFT_2020_12
    ) -> DomainSchema:
        """Declare a schema given as a Python value (tests, generated schemas)."""
        return cls(schema_uri=schema_uri, version=version, source=schema, dialect=dialect)

    def load(self, max_bytes: int | None = None) -> Any:
        """The schema value; raises ``OSError`` or ``ValueError`` when it cannot be read.

        A package file longer than ``max_bytes`` is refused (``SchemaFileTooLarge``)
        after reading at most ``max_bytes + 1`` of it, before it is parsed.
        """
        if isinstance(self.source, _PackageFile):
            return self.source.read(max_bytes)
        # Round-trip through strict JSON: the document must hold JSON, not Python objects.
        return loads_strict(json.dumps(self.source, allow_nan=True))


class SchemaFileTooLarge(SkillrackError, ValueError):
    """A schema file longer than the limit; refused before it is parsed."""


@dataclass(frozen=True)
class _PackageFile:
    package: str
    path: str

    def read(self, max_bytes: int | None = None) -> Any:
        resource = resources.files(self.package).joinpath(self.path)
        with resource.open("rb") as stream:
            data = stream.read() if max_bytes is None else stream.read(max_bytes + 1)
        if max_bytes is not None and len(data) > max_bytes:
            raise SchemaFileTooLarge(f"{self} is larger than {max_bytes} bytes")
        return loads_strict(data)

    def __str__(self) -> str:
        return f"{self.package}:{self.path}"


@dataclass(frozen=True)
class SupportingRecord:
    """One supporting-record kind: the Artifact name its records carry, and their schema."""

    kind: str
    schema: DomainSchema


@dataclass(frozen=True)
class Interaction:
    """How results are delivered; this reflects the implementation, so the vendor says it."""

    supported_response_modes: Sequence[ResponseMode] = ("sync", "stream", "poll")
    cancellable: bool = False


@dataclass(frozen=True)
class Authority:
    """The advertised operating posture.  Descriptive only: never a permission grant."""

    default_mode: AuthorityMode = "observe_only"
    approval_may_be_required: bool = False


@dataclass(frozen=True)
class Operation:
    """One operation of a multi-operation skill (the draft prefers one skill per operation)."""

    name: str
    description: str = ""
    may_require_approval: bool = False


@dataclass(frozen=True)
class Skill:
    """A skill a plugin registers with ``register(Skill(...))``.

    ``resources`` and ``constraints`` are JSON Pointers into the arguments that
    locate what authorization policies must decide on; ``sensitive`` are JSON
    Pointers whose values never appear in error details or logs.

    ``examples_path`` is a ``(package, directory)`` pair naming the package data
    that holds the skill's representative examples for ``skillrack plugin
    check``; by default they are in ``examples/<skill id>`` of the plugin's
    own package.  It is not part of the Skill Interface Document.

    ``timeout`` is how many seconds one run of the handler may take before the
    host cancels it and fails the task with ``resource_limit_exceeded``;
    ``None`` takes the operator's default (``[server] handler_timeout``).  A
    deadline is what frees the caller's concurrency slot when a handler hangs,
    so it applies whether or not the skill is cancellable.  Not part of the
    Skill Interface Document either: it bounds this host's work, not the
    interface.
    """

    id: str
    version: str
    name: str
    description: str
    input_schema: DomainSchema
    output_schema: DomainSchema
    #: ``async def handler(arguments: JsonObject, context: SkillContext) -> JsonValue``
    #: (:data:`skillrack.hookspecs.Handler`).
    handler: Handler
    supporting_records: Sequence[SupportingRecord] = ()
    interaction: Interaction = field(default_factory=Interaction)
    authority: Authority = field(default_factory=Authority)
    tags: Sequence[str] = ()
    examples: Sequence[str] = ()
    operations: Sequence[Operation] = ()
    operation_selector: str = "operation"
    resources: Sequence[str] = ()
    constraints: Sequence[str] = ()
    sensitive: Sequence[str] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    examples_path: tuple[str, str] | None = None
    timeout: float | None = None
    #: Security requirements beyond authentication the vendor asks for: alternatives (one
    #: suffices) of ``{scheme name: [scopes]}``, or a scheme name alone; the operator's
    #: ``[skills.<id>] security`` replaces them (:mod:`skillrack.serve.security.requirements`).
    #: Not part of the Skill Interface Document.
    security: Sequence[Mapping[str, Sequence[str]] | str] = ()
    #: Checked after the call is authorized and before an approval is asked (and before a
    #: slot is taken), on every turn: raise ``ConditionError`` (``constraint_rejected`` with
    #: a ``pointer``) for a call that cannot succeed whatever an operator decides, so that no
    #: operator's time goes to approving it.  It must be quick and free of side effects.
    #: Not part of the Skill Interface Document.
    precheck: Precheck | None = None
    #: ``changes_nothing(arguments) -> bool``: True when this call, with these (validated)
    #: arguments, changes nothing (a ``dry_run``), so that the host does not make it wait for
    #: an operator's approval as an ``execute`` skill's call otherwise would.  Approvers
    #: (``approve_invocation``) are still asked, and one that requires people still makes
    #: it wait.  Quick, pure, synchronous; one that raises counts as False (logged).  Not
    #: part of the Skill Interface Document.
    changes_nothing: ChangesNothing | None = None
    #: The host may run the handler again from the start when the process running it died
    #: (a replica killed, a restart on SQLite) instead of failing the task: for a skill that
    #: changes nothing, whose handler can run twice with the same effect.  Allowed for an
    #: ``observe_only`` skill, or one with ``changes_nothing`` (then only the calls it says
    #: change nothing are run again); assembly refuses it for any other.  The run again is
    #: the stored caller's, authorized again, with the task's original input and answers,
    #: at most ``[server] task_restarts`` times (docs/failures.md).  Not part of the Skill
    #: Interface Document.
    restartable: bool = False


def restartable_problem(skill: Skill) -> str | None:
    """Why ``skill`` cannot declare itself restartable, or ``None`` (also when it does not).

    Running a handler again after its process died repeats whatever it did
    before it died; only a skill that changes nothing may be repeated.
    """
    declared: Any = skill  # a plain dataclass: a plugin can put anything in it
    if not isinstance(declared.restartable, bool):
        return f"restartable must be true or false, not {type(declared.restartable).__name__}"
    if not declared.restartable:
        return None
    if declared.authority.default_mode == "observe_only" or declared.changes_nothing is not None:
        return None
    return (
        f"restartable is allowed for an observe_only skill (or one with changes_nothing), "
        f"and this one is {declared.authority.default_mode}: running its handler again after "
        "its process died could repeat a change; drop restartable=True or declare "
        "changes_nothing"
    )


def timeout_problem(timeout: object) -> str | None:
    """Why a declared ``timeout`` cannot be a deadline, or ``None`` when it can.

    A deadline that is zero, negative, infinite or not a number would either
    fail every call or never free the slot; assembly refuses the skill instead.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        return f"timeout must be a number of seconds or None, not {type(timeout).__name__}"
    if not math.isfinite(timeout) or timeout <= 0:
        return f"timeout must be a positive, finite number of seconds, not {timeout!r}"
    return None


@dataclass(frozen=True)
class BaseSkill:
    """A base-A2A skill a plugin registers with ``register(BaseSkill(...))``, beside its Skills.

    It has no Skill Interface Document: it reads the caller's Message as it
    comes (text, files, data) and answers through its context (a direct
    Message reply, status messages, Artifacts, a question).  The card lists it
    as an ordinary ``AgentSkill`` with ``input_modes`` and ``output_modes``;
    the schema-interface extension, ``describe_skill`` and digests never do,
    since the draft forbids a caller to infer schemas for it.

    A Message reaches it only when routed explicitly: its metadata names the
    skill (``{"skill": "<id>"}``), or, for a Message that is no request
    object (no Data Part with a ``skill`` member, no schema-interface
    extension listed), ``matches(message)`` returns True.  Authentication,
    authorization (``request.kind == "base"``, scope ``skill`` then
    ``invocation``), approvals (by ``authority``, as for a Skill), limits,
    the deadline (``timeout``) and tenants apply as they do to every Skill.
    """

    id: str
    name: str
    description: str
    #: ``async def handler(message: IncomingMessage, context: BaseSkillContext)``, returning
    #: ``None``, a ``str``, a part or parts (:data:`skillrack.hookspecs.BaseHandler`).
    handler: BaseHandler
    matches: MessageMatcher | None = None
    input_modes: Sequence[str] = ("text/plain",)
    output_modes: Sequence[str] = ("text/plain",)
    tags: Sequence[str] = ()
    examples: Sequence[str] = ()
    authority: Authority = field(default_factory=Authority)
    cancellable: bool = False
    timeout: float | None = None
    #: Security requirements beyond authentication the vendor asks for: alternatives (one
    #: suffices) of ``{scheme name: [scopes]}``, or a scheme name alone; the operator's
    #: ``[skills.<id>] security`` replaces them (:mod:`skillrack.serve.security.requirements`).
    #: Not part of the Skill Interface Document.
    security: Sequence[Mapping[str, Sequence[str]] | str] = ()


def base_skill_problem(skill: BaseSkill) -> str | None:
    """Why a base skill's declaration cannot be served, or ``None`` when it can."""
    # Declarations are plain dataclasses: a plugin can put anything in them.
    declared: Any = skill
    if not isinstance(declared.id, str) or not declared.id or declared.id != declared.id.strip():
        return "id must be a non-empty string without surrounding spaces"
    if not callable(declared.handler):
        return "handler must be an async function (message, context)"
    if declared.matches is not None and not callable(declared.matches):
        return "matches must be a function (message) -> bool, or None"
    for name in ("input_modes", "output_modes"):
        modes = getattr(declared, name)
        if isinstance(modes, str) or not modes or not all(isinstance(m, str) and m for m in modes):
            return f"{name} must be a non-empty list of media types"
    if not isinstance(declared.authority, Authority):
        return "authority must be a skillrack.Authority"
    return timeout_problem(declared.timeout)
