"""What a skillrack plugin implements: its hooks, and the handlers of its skills.

Plugins implement the hooks with ``@skillrack.hookimpl`` and are found through
the ``skillrack`` entry-point group.  Hooks are named by role, as in datasette
and llm: ``register_*`` hooks hand the plugin a callback so that the host
checks every registration in one place and knows which plugin made it.

Evolving a hook means adding arguments, never changing them: pluggy passes an
implementation only the arguments it names, so old plugins keep working.

The skills a plugin registers carry handlers, and their signatures are stated
here too (:data:`Handler`, :data:`BaseHandler`), with what a handler may call
on its context (:class:`SkillContext`, :class:`BaseSkillContext`, public as
``skillrack.SkillContext`` and ``skillrack.BaseSkillContext``).  They are
protocols: the host's contexts (:mod:`skillrack.serve.execution`) implement
them, and a test's stand-in may too.  A declaration (``interface/``) names the
handler types and cannot import the rooms that define a caller, a Message or a
delegation's result; this module can, for type checkers only, which is why
they live here (docs/architecture.md, "Hook and handler signatures").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol, TypeAlias

import pluggy

if TYPE_CHECKING:
    from skillrack.client.composition import DomainCheck
    from skillrack.client.outcome import SkillResult
    from skillrack.interface.declare import BaseSkill, ResponseMode, Skill
    from skillrack.interface.health import HealthFinding
    from skillrack.interface.json_value import JsonObject, JsonValue
    from skillrack.protocol.parts import IncomingMessage, PartLike
    from skillrack.serve.security.approved import Approved
    from skillrack.serve.security.authn import RequestCredentials
    from skillrack.serve.security.authz import AuthorizationRequest, Decision
    from skillrack.serve.security.caller import Caller

PROJECT = "skillrack"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_skills(register: Callable[[Skill | BaseSkill], None]) -> None:
    """Declare this plugin's skills by calling ``register(Skill(...))`` once per skill.

    ``register(BaseSkill(...))`` declares a base-A2A skill beside them: no
    Skill Interface Document, its handler reads the caller's Message (see
    :class:`~skillrack.interface.declare.BaseSkill`).

    The host attributes every skill to the plugin whose implementation called
    ``register``, assembles and validates its Skill Interface Document, and
    refuses (and reports) a skill that breaks a rule while still loading the
    plugin's other skills.  Two plugins registering the same skill id stop
    start-up: a skill id is the agent's public name.  Return value is ignored.
    """


@hookspec
def authorize_invocation(request: AuthorizationRequest) -> Decision | None:
    """Give an opinion on one invocation: ``Decision.allow()``, ``Decision.deny()`` or ``None``.

    Called before every dispatch of a domain skill, every time (a decision is
    never cached).  ``request`` names the caller, the skill and its version,
    the operation (multi-operation skills), the resources and constraints
    taken from the arguments at the JSON Pointers the skill declares, and the
    skill's advertised authority.  The host combines every plugin's opinion
    with a veto rule: any deny wins, and without at least one allow the call
    is denied.  Implementations may be ``async``.  An implementation that
    raises counts as a deny.

    Each call is decided twice (:mod:`skillrack.serve.security.authz`): first
    with ``request.scope == "skill"`` (no operation, resources, constraints or
    arguments yet; before validation, so a caller refused the skill learns no
    field details), then with ``request.scope == "invocation"``.  At the skill
    scope, deny only what no call of the skill by this caller could pass;
    return ``None`` when the decision needs the details.
    """


@hookspec
def authenticate(request: RequestCredentials) -> Caller | None:
    """Turn a request into a caller, or refuse it.

    Return a :class:`~skillrack.serve.security.caller.Caller` (identity, tenant, attributes
    such as roles) for a credential this plugin owns and accepts; return
    ``None`` when the request carries no credential of this plugin's kind; raise
    :class:`~skillrack.serve.security.authn.AuthenticationFailed` when it carries one that
    cannot be accepted (unknown key, bad signature, expired).  Every plugin is
    asked; one refusal refuses the request.  May be ``async``.
    """


@hookspec
def security_schemes() -> dict[str, Any] | None:
    """A2A ``securitySchemes`` entries (JSON form) this plugin accepts, for the Agent Card.

    For example ``{"apiKey": {"apiKeySecurityScheme": {"location": "header",
    "name": "X-API-Key"}}}``.  Every scheme contributed is also listed as one
    alternative in the card's ``securityRequirements``.
    """


@hookspec
def www_authenticate() -> str | None:
    """The ``WWW-Authenticate`` challenge for this plugin's scheme (``'Bearer realm="a2a"'``)."""


@hookspec
def approve_invocation(request: AuthorizationRequest) -> Decision | None:
    """Approve, refuse, or ask people about an invocation, before it runs.

    Called, after authorization allowed the call, on every call of every
    skill, whatever its ``default_mode`` and authority (the draft's approval
    checks "in every mode").  Return ``Decision.allow()`` to approve,
    ``Decision.deny()`` to refuse (the task ends ``TASK_STATE_REJECTED``
    with ``authorization_failed``), ``Decision.require(n, roles)`` to make the
    call wait until ``n`` distinct people holding one of ``roles`` granted it
    (``skillrack approvals grant``, the console), or ``None`` to leave it
    open: an operator then decides when the skill's declarations say the
    call needs approval (the chosen operation's flag, for a skill that flags
    operations; else an ``execute`` authority), else the call goes on.  Any
    refusal wins; then the requirement asking for the most approvers; then
    an approval.  May be ``async``.
    """


@hookspec
def configure_plugin(settings: Mapping[str, Any], base_dir: Path) -> None:
    """Receive the operator's settings for this plugin, before ``register_skills`` is called.

    ``settings`` is the ``[plugins.<name>]`` table of the configuration file,
    where ``<name>`` is the plugin's entry-point name (``{}`` when the operator
    wrote none); ``base_dir`` is the directory relative paths in it resolve
    against (the configuration file's).  Check every key
    (``skillrack.refuse_unknown_keys``) and raise ``skillrack.ConfigError``
    naming the key and what to write: start-up stops with that one line.
    Called once per process, synchronously, with this plugin's own table only.
    The first-party plugins' names (``api_keys``, ``jwt``, ``mtls``, ``oidc``,
    ``policy``, ``approval_rules``) are reserved.  Return value is ignored.
    """


@hookspec
def check_health() -> Iterable[HealthFinding] | None:
    """Say what this plugin needs and lacks, for ``skillrack doctor``: findings, one line each.

    Called after ``configure_plugin`` and ``register_skills``, synchronously,
    implementation by implementation.  Return ``skillrack.HealthFinding``
    values (``status`` ``ok``, ``warn`` or ``fail``; a ``message`` that names
    the device, file or setting and what to do; a ``subject``), or ``None``.
    Doctor lists them under ``health`` with the plugin's name; a ``fail`` fails
    the diagnosis.  Keep it quick and read-only: it runs on every
    ``skillrack doctor``.
    """


# -- the handlers a plugin's skills carry ------------------------------------------------------


class HandlerContext(Protocol):
    """What every handler's context offers: which task this is, who asked, cancellation."""

    @property
    def task_id(self) -> str:
        """The A2A task this run belongs to."""

    @property
    def context_id(self) -> str:
        """The A2A context (conversation) the task belongs to."""

    @property
    def skill_id(self) -> str: ...

    @property
    def caller(self) -> Caller:
        """Who is calling, as authentication established it (identity, tenant, attributes)."""

    @property
    def cancelled(self) -> bool:
        """True once the caller asked to cancel (cancellable skills only)."""

    async def wait_cancelled(self) -> None:
        """Wait until the caller cancels; race long waits against it."""


class SkillContext(HandlerContext, Protocol):
    """What a schema skill's handler may call: records, progress, input, delegation.

    ``request_input`` and ``delegate`` may raise signals and errors a handler
    lets through: :class:`~skillrack.errors.InputRequired` is a
    ``BaseException`` (as ``asyncio.CancelledError`` is), so never catch
    ``BaseException`` or ``InputRequired`` around them.
    """

    @property
    def skill_version(self) -> str: ...

    @property
    def operation(self) -> str | None:
        """The operation chosen, for a multi-operation skill; else ``None``."""

    @property
    def approval(self) -> Approved | None:
        """What approved the call (approval id, approvers), for its records; else None."""

    async def publish_record(
        self, kind: str, record: JsonValue, *, artifact_id: str | None = None
    ) -> str:
        """Validate ``record`` against ``kind``'s schema and send it; returns its Artifact id."""

    async def publish_progress(self, partial_result: JsonValue) -> None:
        """Send a progressive version of the primary result (not validated, replaces the last)."""

    async def request_input(
        self, request: JsonValue, *, deadline: dt.datetime | None = None
    ) -> JsonValue:
        """The caller's answer to ``request``; parks the task (``InputRequired``) until it comes.

        With ``deadline`` (an aware ``datetime``, the same on every replay) the host
        runs the handler on at the deadline, unasked, and this raises
        :class:`~skillrack.errors.InputDeadlinePassed` when no answer came in time.
        """

    async def delegate(
        self, peer: str, skill_id: str, arguments: JsonValue, *, mode: ResponseMode = "sync"
    ) -> SkillResult:
        """Call ``skill_id`` at the configured peer agent ``peer``, as a new downstream task."""

    async def compose(
        self,
        upstream: tuple[str, str],
        instance: JsonValue,
        downstream: tuple[str, str],
        *,
        domain_checks: Mapping[str, DomainCheck] | None = None,
    ) -> SkillResult:
        """Feed an upstream skill's output (``instance``) to a downstream skill, if eligible."""


class BaseSkillContext(HandlerContext, Protocol):
    """What a base-A2A skill's handler may call: a direct reply, or a task's messages.

    ``ask`` raises :class:`~skillrack.errors.InputRequired` (a ``BaseException``):
    let it through.
    """

    @property
    def history(self) -> tuple[IncomingMessage, ...]:
        """The caller's earlier Messages of this task, oldest first (empty on a new exchange)."""

    async def reply(self, *parts: PartLike) -> None:
        """Answer with one agent Message and no Task (only as a new exchange's first answer)."""

    async def status(self, *parts: PartLike) -> None:
        """A status message while the task works (``TASK_STATE_WORKING``)."""

    async def artifact(
        self,
        *parts: PartLike,
        name: str | None = None,
        artifact_id: str | None = None,
        append: bool = False,
        last_chunk: bool | None = None,
    ) -> str:
        """Send an Artifact of ``parts``; returns its id."""

    async def ask(self, *parts: PartLike) -> NoReturn:
        """Ask the caller for more: the task waits in ``TASK_STATE_INPUT_REQUIRED``.

        With no parts, the task waits without a status message (A2A allows it).
        """

    async def set_state(self, state: BaseTaskState, *parts: PartLike) -> None:
        """Put the task in ``state`` now, with ``parts`` (if any) as its status message.

        No ``TASK_STATE_WORKING`` is sent first.  After a final state or an
        interrupted one (``input-required``, ``auth-required``) the handler
        returns and sends nothing more; the caller's next Message (for an
        interrupted one) runs it again.
        """


#: The task states a base skill may set directly (``BaseSkillContext.set_state``), A2A's
#: ``TASK_STATE_*`` names in lower case with hyphens.
BaseTaskState: TypeAlias = Literal[
    "working", "input-required", "auth-required", "completed", "failed", "rejected", "canceled"
]

#: ``async def handler(arguments: JsonObject, context: SkillContext) -> JsonValue``: a schema
#: skill's handler; the result is validated against the skill's ``output_schema``.
Handler: TypeAlias = "Callable[[JsonObject, SkillContext], Awaitable[JsonValue]]"

#: ``async def precheck(arguments: JsonObject, caller: Caller) -> None``: refuses a call the
#: skill can never honour (an unknown device, say) by raising ``ConditionError``, after
#: authorization and before any approval is asked (``Skill.precheck``).
Precheck: TypeAlias = "Callable[[JsonObject, Caller], Awaitable[None]]"

#: ``changes_nothing(arguments: JsonObject) -> bool``: True when a call with these arguments
#: changes nothing (a dry run), so the host asks no operator to approve it
#: (``Skill.changes_nothing``).
ChangesNothing: TypeAlias = "Callable[[JsonObject], bool]"

#: What a base skill's handler returns: ``None``, a ``str``, one part, or a sequence of parts
#: (the task's final status message); ignored after ``context.reply``.
BaseReply: TypeAlias = "PartLike | Sequence[PartLike] | None"

#: ``async def handler(message: IncomingMessage, context: BaseSkillContext) -> BaseReply``.
BaseHandler: TypeAlias = "Callable[[IncomingMessage, BaseSkillContext], Awaitable[BaseReply]]"

#: ``matches(message) -> bool``: whether a Message that names no skill is for this base skill.
MessageMatcher: TypeAlias = "Callable[[IncomingMessage], bool]"
