"""The agent's Prometheus metrics: one object holding every metric, and its label rules.

An operator has to see what the agents of several vendors do without reading
their logs; :class:`Metrics` is what ``GET /metrics``
(:mod:`skillrack.serve.bindings.metrics_endpoint`) exposes.  Each app gets its own
instance on its own ``CollectorRegistry``, so agents composed in one process
(tests, the in-process agent) never count into each other.

**Labels are bounded.**  A label value is a declared skill id (anything else
is ``unknown``: a caller who invents skill names must not invent time
series), a condition code of :class:`~skillrack.errors.ErrorCode`, a task
state, a stage or limit named here, or a name the operator installed (plugin,
rule, authentication plugin).  Nothing a caller sends becomes a label.

**Cheap on the request path.**  Counters and histograms of prometheus-client
cost a lock and an addition; the labelled children are resolved once per
label combination and kept (:meth:`Metrics._child`), so a request does not
build label tuples in the library.  A histogram observation goes straight to
the child's bucket found by bisection (:func:`fast_observer`: the same
values the library's own ``observe`` writes, without its per-call checks and
linear bucket scan); an invocation makes about fifteen of them (its stages,
its task-store operations, its duration).  Nothing is collected until a
scrape, and a scrape is rendered off the event loop
(:mod:`skillrack.serve.bindings.metrics_endpoint`).

**One observation per stage and turn.**  Authorization is asked twice in a
turn (may the caller use the skill, before validation; may it make this call,
after): ``skillrack_stage_duration_seconds{stage="authorization"}`` gets one
observation per turn, the two decisions' time added up (:meth:`TurnMetrics.stage`),
so its count is the number of turns authorized, as for every other stage.

**Several processes.**  ``skillrack serve --workers N`` sets
``PROMETHEUS_MULTIPROC_DIR`` before the workers start
(:mod:`skillrack.serve.process`); prometheus-client then keeps every value in
a file per process and the exposition adds them up.  The gauges say how
(``livesum`` for tasks in flight; ``max`` for the start-up facts that every
worker sets alike).  prometheus-client's ``Info`` type is not kept in that
mode, so the info metrics are gauges of value 1, the Prometheus convention
for ``*_info`` series.
"""

from __future__ import annotations

import bisect
import datetime as dt
import importlib.metadata
import logging
import os
import platform
import time
from collections.abc import Callable, Hashable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from skillrack.errors import ErrorCode
from skillrack.host.registry import Registry
from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.serve.process import MULTIPROC_ENV

if TYPE_CHECKING:
    from prometheus_client.metrics import MetricWrapperBase

logger = logging.getLogger(__name__)

#: The label value of any skill name the agent does not declare.
UNKNOWN = "unknown"
#: The stages of an invocation timed by ``skillrack_stage_duration_seconds``.
STAGES = ("validation", "authorization", "approval_wait", "handler", "output_validation")
#: The limits whose refusals ``skillrack_limit_refusals_total`` counts.
LIMITS = ("rate", "failed_authentication", "concurrency")
#: Why ``skillrack_unavailable_refusals_total`` counts a retryable 503 (gRPC ``UNAVAILABLE``).
REFUSED_DRAINING = "draining"
REFUSED_TASK_STORE = "task_store_unavailable"
REFUSED_LIMITS_STORE = "limits_store_unavailable"
REFUSAL_REASONS = (REFUSED_DRAINING, REFUSED_TASK_STORE, REFUSED_LIMITS_STORE)
#: How ``skillrack_orphaned_tasks_total`` counts a task whose process died while it ran.
ORPHAN_OUTCOMES = ("failed", "restarted")
#: Seconds: 1 ms to 5 min, the handler deadline's default (a skill call is not a web page).
DURATION_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, float("inf"),
)  # fmt: skip
#: Task-store operations are local or one database round trip.
STORE_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, float("inf"),
)  # fmt: skip


def multiprocess_dir() -> str | None:
    """The directory of the per-process value files, when several processes serve."""
    return os.environ.get(MULTIPROC_ENV) or None


def short_state(state_name: str) -> str:
    """``TASK_STATE_COMPLETED`` -> ``completed``: the ``state`` label value."""
    return state_name.removeprefix("TASK_STATE_").lower()


def fast_observer(child: Any) -> Callable[[float], None]:
    """``child.observe`` of a histogram child, without its per-call checks and bucket scan.

    prometheus-client's ``Histogram.observe`` checks that the child is
    observable, adds to the sum, then walks the buckets until the first upper
    bound at or above the value.  A resolved child is always observable, and
    the first such bound is what :func:`bisect.bisect_left` finds (the last
    bound is ``+Inf``), so this writes exactly the values ``observe`` would,
    through the same value objects (thread-safe, and per-process files under
    ``--workers``).  Should a prometheus-client release lay its histograms out
    otherwise, the library's own ``observe`` is used.
    """
    bounds = getattr(child, "_upper_bounds", None)
    total: Any = getattr(child, "_sum", None)
    buckets = getattr(child, "_buckets", None)
    if (
        not isinstance(bounds, list)
        or not isinstance(buckets, list)
        or len(bounds) != len(buckets)
        or not bounds
        or bounds[-1] != float("inf")
        or not hasattr(total, "inc")
    ):
        observe: Callable[[float], None] = child.observe
        return observe
    add = total.inc
    counts = [bucket.inc for bucket in buckets]
    find = bisect.bisect_left

    def observed(amount: float) -> None:
        add(amount)
        if amount == amount:  # NaN falls in no bucket, as with observe
            counts[find(bounds, amount)](1)

    return observed


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN


class Metrics:
    """Every metric of one agent (see the module docstring for the label rules)."""

    def __init__(self, registry: Registry | None = None) -> None:
        self.registry = CollectorRegistry()
        self._skills: dict[str, str] = (
            {s.skill_id: s.skill.version for s in registry} if registry is not None else {}
        )
        if registry is not None:  # base-A2A skills have no version
            self._skills.update({b: "" for b in registry.base_skills})
        self._children: dict[Hashable, Any] = {}
        self._stage_observers: dict[str, dict[str, Callable[[float], None]]] = {}
        self._observers: dict[Hashable, Callable[[float], None]] = {}
        self._counts: dict[Hashable, Callable[[], None]] = {}
        #: Collectors computed at each scrape rather than kept in (per-process) values.
        self.at_scrape: list[Collector] = []
        on = self.registry
        self.invocations = Counter(
            "skillrack_invocations",
            "Turns of tasks that ended, by skill, skill version, final state and condition code",
            ["skill", "skill_version", "state", "code"],
            registry=on,
        )
        self.invocation_seconds = Histogram(
            "skillrack_invocation_duration_seconds",
            "Seconds from a turn's start to its final state, by skill",
            ["skill"],
            buckets=DURATION_BUCKETS,
            registry=on,
        )
        self.stage_seconds = Histogram(
            "skillrack_stage_duration_seconds",
            "Seconds spent in one stage of an invocation, by skill and stage",
            ["skill", "stage"],
            buckets=DURATION_BUCKETS,
            registry=on,
        )
        self.in_flight = Gauge(
            "skillrack_tasks_in_flight",
            "Handlers running now, by skill",
            ["skill"],
            multiprocess_mode="livesum",
            registry=on,
        )
        self.overdue_handlers = Gauge(
            "skillrack_handlers_overdue",
            "Handlers still running after their deadline (cancelled, ignoring it), by skill",
            ["skill"],
            multiprocess_mode="livesum",
            registry=on,
        )
        self.describe_calls = Counter(
            "skillrack_describe_skill_calls",
            "describe_skill calls, by the skill asked about",
            ["skill"],
            registry=on,
        )
        self.card_requests = Counter(
            "skillrack_card_requests",
            "Requests for the Agent Card (card) or its keys (jwks); response: full or not_modified",
            ["document", "response"],
            registry=on,
        )
        self.authentication_failures = Counter(
            "skillrack_authentication_failures",
            "Requests refused by authentication, by the plugin that refused "
            "(none: no credential accepted; repeated: a credential header repeated)",
            ["scheme"],
            registry=on,
        )
        self.authorization_denials = Counter(
            "skillrack_authorization_denials",
            "Invocations refused by a policy or an approver, by skill and decision",
            ["skill", "decision"],
            registry=on,
        )
        self.limit_refusals = Counter(
            "skillrack_limit_refusals",
            "Requests or calls refused by a limit (rate, failed_authentication, concurrency)",
            ["limit"],
            registry=on,
        )
        self.approvals = Counter(
            "skillrack_approvals",
            "Approval steps by skill and outcome (waiting: parked for an operator)",
            ["skill", "outcome"],
            registry=on,
        )
        self.store_seconds = Histogram(
            "skillrack_task_store_operation_duration_seconds",
            "Seconds of one task-store operation",
            ["operation"],
            buckets=STORE_BUCKETS,
            registry=on,
        )
        self.limits_store_outages = Counter(
            "skillrack_limits_store_outages",
            "Times the Redis limits store became unreachable (limits_on_outage says what then)",
            registry=on,
        )
        self.task_store_outages = Counter(
            "skillrack_task_store_outages",
            "Times the task store (PostgreSQL, cluster mode) became unreachable",
            registry=on,
        )
        self.unavailable_refusals = Counter(
            "skillrack_unavailable_refusals",
            "Requests answered with a retryable 503 (gRPC UNAVAILABLE): the replica draining, "
            "its task store or (limits_on_outage = deny) its limits store unreachable",
            ["reason"],
            registry=on,
        )
        self.orphaned_tasks = Counter(
            "skillrack_orphaned_tasks",
            "Tasks whose replica or process died while they ran, ended here: failed, or "
            "restarted (a restartable skill run again)",
            ["outcome"],
            registry=on,
        )
        # Present at zero from the start: an operator's rate() and alert see the series
        # before the first refusal or death (the values are bounded, module docstring).
        for reason in REFUSAL_REASONS:
            self._child(self.unavailable_refusals, reason)
        for outcome in ORPHAN_OUTCOMES:
            self._child(self.orphaned_tasks, outcome)
        self.store_errors = Counter(
            "skillrack_task_store_errors",
            "Task-store operations that raised",
            ["operation"],
            registry=on,
        )
        self.refused_skills = Gauge(
            "skillrack_refused_skills",
            "Skills refused at start-up, by plugin and the rule they broke",
            ["plugin", "rule"],
            multiprocess_mode="max",
            registry=on,
        )
        self.build_info = Gauge(
            "skillrack_build_info",
            "Versions of skillrack, a2a-sdk and Python (value 1)",
            ["skillrack", "a2a_sdk", "python"],
            multiprocess_mode="max",
            registry=on,
        )
        self.plugin_info = Gauge(
            "skillrack_plugin_info",
            "Loaded plugins and their versions (value 1)",
            ["plugin", "distribution", "version"],
            multiprocess_mode="max",
            registry=on,
        )
        self.skill_info = Gauge(
            "skillrack_skill_info",
            "Advertised skills: version, plugin and interface digest (value 1)",
            ["skill", "skill_version", "plugin", "interface_digest"],
            multiprocess_mode="max",
            registry=on,
        )
        if registry is not None:
            self._startup_facts(registry)

    def _startup_facts(self, registry: Registry) -> None:
        """What start-up decided: build info, plugins, advertised and refused skills."""
        self.build_info.labels(
            _version("skillrack"), _version("a2a-sdk"), platform.python_version()
        ).set(1)
        for loaded in registry.plugins:
            self.plugin_info.labels(
                loaded.name, loaded.distribution or "", loaded.version or ""
            ).set(1)
        for skill in registry:
            self.skill_info.labels(
                skill.skill_id, skill.skill.version, skill.plugin, skill.interface_digest
            ).set(1)
        refused: dict[tuple[str, str], int] = {}
        for refusal in registry.refused:
            key = (refusal.plugin, refusal.rule)
            refused[key] = refused.get(key, 0) + 1
        for (plugin, rule), count in refused.items():
            self.refused_skills.labels(plugin, rule).set(count)

    def count_at_scrape(self, name: str, documentation: str, count: Callable[[], int]) -> None:
        """A gauge read at each scrape from ``count`` (say, a store shared by the workers)."""
        collector = _CountAtScrape(name, documentation, count)
        self.registry.register(collector)
        self.at_scrape.append(collector)

    # -- label values -----------------------------------------------------------------------

    def skill_label(self, name: str | None) -> str:
        """``name`` when the agent declares it (or it is ``describe_skill``), else ``unknown``."""
        if name is not None and (name in self._skills or name == DESCRIBE_SKILL):
            return name
        return UNKNOWN

    def _child(self, metric: MetricWrapperBase, *labels: str) -> Any:
        """The labelled child of ``metric``, resolved once per label combination."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def _observer(self, metric: MetricWrapperBase, *labels: str) -> Callable[[float], None]:
        """The :func:`fast_observer` of ``metric``'s child, resolved once per label combination."""
        key = (id(metric), labels)
        found = self._observers.get(key)
        if found is None:
            found = self._observers[key] = fast_observer(self._child(metric, *labels))
        return found

    # -- what the request path records ------------------------------------------------------

    def turn(self) -> TurnMetrics:
        """A recorder for one turn of a task (:class:`TurnMetrics`)."""
        return TurnMetrics(self)

    def ended(self, skill: str | None, state_name: str, code: ErrorCode | None) -> None:
        """One turn ended in ``state_name`` (a ``TASK_STATE_*`` name) with ``code``."""
        label = self.skill_label(skill)
        key = (label, state_name, code)
        count = self._counts.get(key)
        if count is None:  # once per label combination: the labels are bounded (module docstring)
            version = self._skills.get(label, "")
            state, value = short_state(state_name), code.value if code else ""
            count = self._counts[key] = self._child(
                self.invocations, label, version, state, value
            ).inc
        count()

    def describe_called(self, skill: str | None) -> None:
        self._child(self.describe_calls, self.skill_label(skill)).inc()

    def card_requested(self, document: str, *, not_modified: bool) -> None:
        self._child(self.card_requests, document, "not_modified" if not_modified else "full").inc()

    def authentication_failed(self, scheme: str) -> None:
        self._child(self.authentication_failures, scheme).inc()

    def denied(self, skill: str | None, decision: str) -> None:
        """A policy (``skill``, ``call``) or an approver (``approval``) refused."""
        self._child(self.authorization_denials, self.skill_label(skill), decision).inc()

    def limit_refused(self, limit: str) -> None:
        self._child(self.limit_refusals, limit).inc()

    def limits_store_outage(self) -> None:
        """The Redis limits store stopped answering (counted once per outage)."""
        self.limits_store_outages.inc()

    def task_store_outage(self) -> None:
        """The task store stopped answering (counted once per outage)."""
        self.task_store_outages.inc()

    def unavailable_refused(self, reason: str) -> None:
        """A request answered with the retryable 503 for ``reason`` (:data:`REFUSAL_REASONS`)."""
        self._child(self.unavailable_refusals, reason).inc()

    def orphans_ended(self, failed: int, restarted: int) -> None:
        """Tasks a dead process left running, once their new state is written (committed)."""
        if failed:
            self._child(self.orphaned_tasks, "failed").inc(failed)
        if restarted:
            self._child(self.orphaned_tasks, "restarted").inc(restarted)

    def approval(self, skill: str | None, outcome: str, requested_at: str | None = None) -> None:
        """An approval step's outcome; a granted wait also times ``approval_wait``."""
        label = self.skill_label(skill)
        self._child(self.approvals, label, outcome).inc()
        if outcome == "denied":
            self._child(self.authorization_denials, label, "approval").inc()
        if outcome == "granted" and requested_at:
            try:
                since = dt.datetime.fromisoformat(requested_at)
            except ValueError:
                return
            waited = (dt.datetime.now(dt.UTC) - since).total_seconds()
            self._child(self.stage_seconds, label, "approval_wait").observe(max(waited, 0.0))

    def stage_observers(self, skill: str | None) -> dict[str, Callable[[float], None]]:
        """Stage name -> the ``observe`` of ``skill``'s histogram child, built once per label."""
        label = self.skill_label(skill)
        found = self._stage_observers.get(label)
        if found is None:
            found = self._stage_observers[label] = {
                stage: self._observer(self.stage_seconds, label, stage) for stage in STAGES
            }
        return found

    def store_operation(self, operation: str) -> StoreTimer:
        """Times one task-store operation (``with metrics.store_operation("get"): ...``)."""
        observe, failed = self.store_recorders(operation)
        return StoreTimer(observe, failed)

    def store_recorders(self, operation: str) -> tuple[Callable[[float], None], Callable[[], None]]:
        """``operation``'s latency observer and error count, resolved once (the timed store)."""
        errors = self._child(self.store_errors, operation)
        return self._observer(self.store_seconds, operation), lambda: errors.inc()


class _CountAtScrape(Collector):
    """One unlabelled gauge whose value is asked for at each scrape."""

    def __init__(self, name: str, documentation: str, count: Callable[[], int]) -> None:
        self._name = name
        self._documentation = documentation
        self._count = count

    def collect(self) -> Iterator[Metric]:
        try:
            value = self._count()
        except Exception as exc:  # a scrape must not fail with the store: the series is absent
            logger.warning("metrics: %s could not be read (%s)", self._name, type(exc).__name__)
            return
        yield GaugeMetricFamily(self._name, self._documentation, value=value)

    def describe(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(self._name, self._documentation)


class _Stage:
    """Times one stage of a turn into its histogram child (a ``with`` block)."""

    __slots__ = ("_observe", "_started")

    def __init__(self, observe: Callable[[float], None]) -> None:
        self._observe = observe
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self._observe(time.perf_counter() - self._started)


class StoreTimer:
    """Times one task-store operation and counts it as an error when it raises."""

    __slots__ = ("_failed", "_observe", "_started")

    def __init__(self, observe: Callable[[float], None], failed: Callable[[], None]) -> None:
        self._observe = observe
        self._failed = failed
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        self._observe(time.perf_counter() - self._started)
        if kind is not None and issubclass(kind, Exception):
            self._failed()


class _Authorizing:
    """Adds one authorization decision's time to its turn; the last one observes the total."""

    __slots__ = ("_final", "_started", "_turn")

    def __init__(self, turn: TurnMetrics, final: bool) -> None:
        self._turn = turn
        self._final = final
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        turn = self._turn
        turn._authorizing += time.perf_counter() - self._started
        if self._final:
            turn._observe_authorization()


class TurnMetrics:
    """What one turn of a task records: its skill once known, its stages, how it ended."""

    __slots__ = ("_authorizing", "_metrics", "_stages", "_started", "skill")

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._started = time.perf_counter()
        #: The skill the request names (mapped to a label when recorded).
        self.skill: str | None = None
        self._stages: dict[str, Callable[[float], None]] | None = None
        #: Seconds of authorization not yet observed (-1: none this turn, or already observed).
        self._authorizing = -1.0

    def _observers(self) -> dict[str, Callable[[float], None]]:
        stages = self._stages
        if stages is None:  # once per turn, after the skill is known
            stages = self._stages = self._metrics.stage_observers(self.skill)
        return stages

    def stage(self, stage: str, *, final: bool = True) -> _Stage | _Authorizing:
        """``with turn.stage("validation"): ...`` times that stage for this turn's skill.

        ``authorization`` is observed once per turn: a decision entered with
        ``final=False`` (the skill, before validation) adds its time to the
        turn's, and the final one (the call) observes the sum; a turn that
        ends in between (refused, or its arguments invalid) observes what it
        spent when it ends (:meth:`ended`).
        """
        if stage == "authorization":
            if self._authorizing < 0:
                self._authorizing = 0.0
            return _Authorizing(self, final)
        return _Stage(self._observers()[stage])

    def _observe_authorization(self) -> None:
        spent = self._authorizing
        if spent >= 0:
            self._authorizing = -1.0
            self._observers()["authorization"](spent)

    def running(self) -> _Running:
        """``with turn.running(): ...`` counts a handler in flight."""
        metrics = self._metrics
        return _Running(metrics._child(metrics.in_flight, metrics.skill_label(self.skill)))

    def denied(self, decision: str) -> None:
        self._metrics.denied(self.skill, decision)

    def ended(self, state_name: str, code: ErrorCode | None = None) -> None:
        """The turn ended in ``state_name``: count it and observe its duration."""
        if self._authorizing >= 0:  # ended between the two authorization decisions
            self._observe_authorization()
        metrics = self._metrics
        metrics.ended(self.skill, state_name, code)
        metrics._observer(metrics.invocation_seconds, metrics.skill_label(self.skill))(
            time.perf_counter() - self._started
        )


class _Running:
    __slots__ = ("_gauge",)

    def __init__(self, gauge: Any) -> None:
        self._gauge = gauge

    def __enter__(self) -> None:
        self._gauge.inc()

    def __exit__(self, *exc: object) -> None:
        self._gauge.dec()


__all__ = [
    "LIMITS",
    "MULTIPROC_ENV",
    "ORPHAN_OUTCOMES",
    "REFUSAL_REASONS",
    "REFUSED_DRAINING",
    "REFUSED_LIMITS_STORE",
    "REFUSED_TASK_STORE",
    "STAGES",
    "UNKNOWN",
    "Metrics",
    "StoreTimer",
    "TurnMetrics",
    "fast_observer",
    "multiprocess_dir",
    "short_state",
]
