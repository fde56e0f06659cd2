"""OpenTelemetry traces of invocations: one server span per turn, one child span per stage.

An operator running agents from several vendors wants to follow one request
from the caller through every agent it reaches.  skillrack writes that trace
with the OpenTelemetry API (``opentelemetry-api``, a core dependency that
does nothing by itself); the SDK and an exporter are the optional extra
``skillrack[otel]``, configured by the standard ``OTEL_*`` variables.

What a turn of a task records (:func:`turn`)::

    skillrack.invoke <skill>          SERVER; parent: the caller's traceparent, if any
      skillrack.authorization         scope "skill" (before validation), then "call"
      skillrack.validation            arguments against input_schema
      skillrack.approval              asking approvers (a parked call ends the turn)
      skillrack.handler               the handler
        skillrack.delegate            CLIENT; a call of another agent (its server span is the child)
      skillrack.output_validation     the final result against output_schema

with the attributes of :class:`TurnTrace`: the skill, its version and
interface digest, the task id, the final state and the condition code.
Argument values, results, caller identities and exception texts are never
recorded (an exception's text can carry an argument value or a credential):
a failed stage is marked ``ERROR`` with the condition code or the exception's
type name only.  The span is named after the skill only once the skill is
known to be advertised, so a caller cannot mint span names.

**Off and cheap.**  Unless a real tracer provider is installed (by
:func:`configure`, by the application embedding skillrack, or by
:func:`install` in tests), :func:`turn` hands out :data:`OFF`, whose methods
do nothing and whose stages are one shared null context manager; the app then
has no trace-context middleware either
(:mod:`skillrack.serve.middleware.trace_context`).

**Who configures the SDK.**  A library must not install a global tracer
provider behind its application's back (:mod:`skillrack.serve.process`);
``skillrack serve`` owns its process and calls :func:`configure`, in every
worker.  It installs an SDK provider only when an exporter is configured, by
the same rule that keeps a2a-sdk's own tracing on
(:func:`skillrack.serve.process.exporter_configured`), and leaves a provider
the application already installed (``opentelemetry-instrument``) alone.

Only W3C ``traceparent``/``tracestate`` cross agents, extracted here and
injected by skillrack's client (:mod:`skillrack.client.transport`); baggage
is neither read nor forwarded, since it would carry one vendor's key-value
pairs to the next vendor's agent.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Coroutine, Iterator, Mapping
from contextlib import AbstractContextManager
from importlib.metadata import EntryPoint, PackageNotFoundError, entry_points, version
from typing import Any, TypeVar

from a2a.types import TaskState
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from skillrack.errors import ClientCode, ErrorCode, InputRequired, StartupError
from skillrack.host.registry import RegisteredSkill
from skillrack.serve.process import exporter_configured

T = TypeVar("T")

#: The instrumentation scope of every span skillrack makes.
TRACER_NAME = "skillrack"
#: The span of one turn; `` <skill>`` is appended once the skill is known to be advertised.
INVOKE_SPAN = "skillrack.invoke"
DESCRIBE_SPAN = "skillrack.describe_skill"
#: A handler's call of another agent (``context.delegate`` / ``context.compose``).
DELEGATE_SPAN = "skillrack.delegate"

# Attribute names (skillrack's own namespace: none of OpenTelemetry's conventions fits).
SKILL_ID = "skillrack.skill.id"
SKILL_VERSION = "skillrack.skill.version"
INTERFACE_DIGEST = "skillrack.skill.interface_digest"
PLUGIN = "skillrack.plugin"
TASK_ID = "skillrack.task.id"
TASK_STATE = "skillrack.task.state"
CONDITION = "skillrack.condition"
AUTHORIZATION_SCOPE = "skillrack.authorization.scope"
#: The ``[peers]`` name a handler delegated to.
PEER = "skillrack.peer"

#: The pipeline's stages, in order; each is a child span ``skillrack.<stage>``.
STAGES = ("authorization", "validation", "approval", "handler", "output_validation")
#: Every span and attribute name skillrack records (docs/observability.md lists them).
NAMES = frozenset(
    {INVOKE_SPAN, DESCRIBE_SPAN, DELEGATE_SPAN, *(f"skillrack.{stage}" for stage in STAGES)}
    | {SKILL_ID, SKILL_VERSION, INTERFACE_DIGEST, PLUGIN, TASK_ID, TASK_STATE, CONDITION}
    | {AUTHORIZATION_SCOPE, PEER}
)

#: ``OTEL_TRACES_EXPORTER`` names and the entry point that provides each ("otlp" depends on
#: ``OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL``, as in the SDK's own configurator).
_OTLP_BY_PROTOCOL = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}
_EXPORTER_GROUP = "opentelemetry_traces_exporter"

_installed: trace.TracerProvider | None = None
_tracer: tuple[trace.TracerProvider, trace.Tracer] | None = None


def install(provider: trace.TracerProvider | None) -> None:
    """Record spans with ``provider`` (``None``: back to the global one), not the global.

    For tests and embedders that must not replace OpenTelemetry's global
    provider (it can be set only once per process).
    """
    global _installed
    _installed = provider


def provider() -> trace.TracerProvider | None:
    """The provider spans go to, or ``None`` when nothing would record them."""
    if _installed is not None:
        return _installed
    current = trace.get_tracer_provider()
    if isinstance(current, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return current


def enabled() -> bool:
    """Whether a real tracer provider is installed (the app then extracts trace context)."""
    return provider() is not None


def tracer() -> trace.Tracer | None:
    """skillrack's tracer from the current provider, looked up once per provider."""
    global _tracer
    current = provider()
    if current is None:
        return None
    if _tracer is None or _tracer[0] is not current:
        _tracer = (current, current.get_tracer(TRACER_NAME, _version()))
    return _tracer[1]


class TurnTrace:
    """The server span of one turn of a task, and its stages (:data:`OFF` when tracing is off)."""

    def __init__(self, span: Span | None, tracer: trace.Tracer | None) -> None:
        self._span = span
        self._tracer = tracer

    def stage(self, name: str, scope: str | None = None) -> AbstractContextManager[Any]:
        """A child span ``skillrack.<name>`` around one stage of the pipeline."""
        if self._tracer is None:
            return _NOTHING
        return _stage_span(self._tracer, name, scope)

    def skill(self, skill: RegisteredSkill) -> None:
        """The advertised skill this turn invokes: it names the span."""
        if self._span is None:
            return
        self._span.update_name(f"{INVOKE_SPAN} {skill.skill_id}")
        self._span.set_attributes(
            {
                SKILL_ID: skill.skill_id,
                SKILL_VERSION: skill.skill.version,
                INTERFACE_DIGEST: skill.interface_digest,
                PLUGIN: skill.plugin,
            }
        )

    def describing(self, skill: RegisteredSkill | None) -> None:
        """This turn is ``describe_skill``, of ``skill`` when the one asked for is advertised."""
        if self._span is None:
            return
        self._span.update_name(DESCRIBE_SPAN)
        if skill is not None:
            self._span.set_attribute(SKILL_ID, skill.skill_id)

    def ended(self, state: str, condition: str | None = None) -> None:
        """The state this turn left the task in, and the condition that ended it, if any."""
        if self._span is None:
            return
        self._span.set_attribute(TASK_STATE, state)
        if condition is not None:
            self._span.set_attribute(CONDITION, condition)
            self._span.set_status(Status(StatusCode.ERROR, condition))


#: What :func:`turn` hands out when tracing is off: every method does nothing.
OFF = TurnTrace(None, None)
_NOTHING: AbstractContextManager[None] = contextlib.nullcontext()
_OFF_TURN: AbstractContextManager[TurnTrace] = contextlib.nullcontext(OFF)


@contextlib.contextmanager
def _stage_span(tracer: trace.Tracer, name: str, scope: str | None) -> Iterator[Span]:
    with tracer.start_as_current_span(
        f"skillrack.{name}",
        attributes={AUTHORIZATION_SCOPE: scope} if scope else None,
        record_exception=False,  # its text may carry argument values
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except InputRequired:  # a question to the caller, not a failure
            raise
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, _condition_of(exc)))
            raise


def _condition_of(exc: BaseException) -> str:
    """What a span may say of an exception: its condition code, else its type's name."""
    code = getattr(exc, "code", None)
    value = getattr(code, "value", None)
    return value if isinstance(value, str) else type(exc).__name__


def turn(task_id: str) -> AbstractContextManager[TurnTrace]:
    """The server span of one turn (current while the turn runs), or :data:`OFF`."""
    current = tracer()
    if current is None:
        return _OFF_TURN  # one shared object: nothing is created per turn
    return _recording_turn(current, task_id)


@contextlib.contextmanager
def _recording_turn(tracer: trace.Tracer, task_id: str) -> Iterator[TurnTrace]:
    with tracer.start_as_current_span(
        INVOKE_SPAN,
        kind=SpanKind.SERVER,
        attributes={TASK_ID: task_id},
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield TurnTrace(span, tracer)
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, _condition_of(exc)))
            raise


# -- delegation: a CLIENT span around each call of another agent ---------------------------------


_KNOWN_CODES = frozenset(c.value for c in ErrorCode) | frozenset(c.value for c in ClientCode)
_KNOWN_STATES = frozenset(TaskState.keys())


async def delegating(peer: str, skill_id: str, call: Coroutine[Any, Any, T]) -> T:
    """``call`` (a handler's call of another agent) inside a CLIENT span, when tracing is on."""
    current = tracer()
    if current is None:
        return await call
    with current.start_as_current_span(
        DELEGATE_SPAN,
        kind=SpanKind.CLIENT,
        attributes={PEER: peer, SKILL_ID: skill_id},
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            result = await call
        except BaseException as exc:
            code = getattr(exc, "code", None)
            condition = code if code in _KNOWN_CODES else type(exc).__name__
            span.set_status(Status(StatusCode.ERROR, condition))
            if code in _KNOWN_CODES:
                span.set_attribute(CONDITION, str(code))
            state = getattr(exc, "state", None)
            if state in _KNOWN_STATES:
                span.set_attribute(TASK_STATE, str(state))
            raise
        state = getattr(result, "state", None)
        if state in _KNOWN_STATES:
            span.set_attribute(TASK_STATE, str(state))
        return result


# -- skillrack serve: the SDK from the OTEL_* variables -------------------------------------------


def _exporter_names(environ: Mapping[str, str]) -> list[str]:
    """The entry-point names of the exporters ``OTEL_TRACES_EXPORTER`` asks for."""
    names = [n.strip().lower() for n in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    chosen: list[str] = []
    for name in names or ["otlp"]:
        if name in ("", "none"):
            continue
        if name == "otlp":
            protocol = (
                environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf"
            ).strip()
            if protocol not in _OTLP_BY_PROTOCOL:
                raise StartupError(
                    f"OTEL_EXPORTER_OTLP_PROTOCOL is {protocol!r}; use http/protobuf or grpc"
                )
            name = _OTLP_BY_PROTOCOL[protocol]
        chosen.append(name)
    return chosen


def _version() -> str:
    try:
        return version("skillrack")
    except PackageNotFoundError:  # pragma: no cover - run from a bare source tree
        return "0+unknown"


def _decide(environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """What ``environ`` asks for: the start-up log's words, and the exporters to install.

    Raises :class:`~skillrack.errors.StartupError` when an exporter is asked
    for that is not installed, so ``skillrack serve`` refuses to start rather
    than run silently untraced.
    """
    if provider() is not None:
        return "on (the application's tracer provider)", []
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return "off (OTEL_SDK_DISABLED=true)", []
    if not exporter_configured(environ):
        return "off (set OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER to export)", []
    names = _exporter_names(environ)
    if not names:
        return "off (OTEL_TRACES_EXPORTER=none)", []
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        raise StartupError(
            "OTEL_TRACES_EXPORTER or OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry "
            "SDK is not installed: pip install 'skillrack[otel]', or unset them"
        )
    for name in names:
        _exporter(name)  # installed? (loaded at the first export: DeferredExporter)
    return f"on (exporting with {', '.join(names)})", names


def describe(environ: Mapping[str, str]) -> str:
    """What :func:`configure` would do with ``environ``, for the start-up log; installs nothing."""
    return _decide(environ)[0]


def configure(environ: Mapping[str, str]) -> str:
    """Install an SDK tracer provider when ``environ`` configures an exporter; say what was done.

    Everything else about the SDK (sampler, batch sizes, endpoint, headers,
    resource attributes) is read by the SDK itself from the same ``OTEL_*``
    variables of the process.  ``service.name`` defaults to ``skillrack``.
    """
    description, names = _decide(environ)
    if not names:
        return description
    from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from skillrack.serve.observability.deferred_exporter import DeferredExporter

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "skillrack"}))
    if SERVICE_VERSION not in resource.attributes:
        resource = resource.merge(Resource({SERVICE_VERSION: _version()}))
    sdk_provider = TracerProvider(resource=resource)  # OTEL_TRACES_SAMPLER
    for name in names:  # each exporter is made at its first batch, not during the start
        sdk_provider.add_span_processor(BatchSpanProcessor(DeferredExporter(name, _exporter(name))))
    trace.set_tracer_provider(sdk_provider)
    return description


def _exporter(name: str) -> EntryPoint:
    """The entry point of the span exporter an installed package registers under ``name``."""
    found = entry_points(group=_EXPORTER_GROUP, name=name)
    if not found:
        package = {
            "otlp_proto_http": "skillrack[otel]",
            "otlp_proto_grpc": "opentelemetry-exporter-otlp-proto-grpc",
        }.get(name, f"the package providing the {name!r} span exporter")
        raise StartupError(
            f"OTEL_TRACES_EXPORTER asks for the {name!r} span exporter, which no installed "
            f"package provides: pip install '{package}', or change OTEL_TRACES_EXPORTER"
        )
    return next(iter(found))
