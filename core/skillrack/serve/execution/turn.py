"""One turn of a task as the executor carries it through the pipeline.

A turn is one call of ``AgentExecutor.execute``: the request context, where
its events go, who calls (as authentication established it, never from
message content), and what it records in metrics and traces, stage by stage.
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue

from skillrack.serve.execution.base_replies import TaskStart
from skillrack.serve.execution.updater import TurnUpdater
from skillrack.serve.observability.metrics import Metrics, TurnMetrics
from skillrack.serve.observability.traces import OFF, TurnTrace
from skillrack.serve.scope import CALLER_KEY, CLIENT_HOST_KEY
from skillrack.serve.security.caller import ANONYMOUS, Caller


def caller_of(context: RequestContext) -> Caller:
    """The caller authentication established (never taken from message content)."""
    call = context.call_context
    caller = call.state.get(CALLER_KEY) if call is not None else None
    return caller if isinstance(caller, Caller) else ANONYMOUS


def client_host_of(context: RequestContext) -> str | None:
    """The address the request came from, as the server saw it (for anonymous slots)."""
    call = context.call_context
    host = call.state.get(CLIENT_HOST_KEY) if call is not None else None
    return host if isinstance(host, str) else None


@dataclass(frozen=True)
class Turn:
    """One call of ``execute``: the request context, where its events go, and who calls."""

    context: RequestContext
    queue: EventQueue
    updater: TurnUpdater
    task_id: str
    caller: Caller
    client_host: str | None
    #: What this turn records in the agent's metrics (:mod:`skillrack.serve.observability.metrics`).
    observed: TurnMetrics
    #: The turn's server span and its stages (:mod:`skillrack.serve.observability.traces`);
    #: OFF when untraced.
    trace: TurnTrace = OFF
    #: A new task a base skill's turn has not sent yet (it may answer with a Message instead).
    start: TaskStart = field(default_factory=TaskStart)

    def stage(
        self, name: str, scope: str | None = None, *, final: bool = True
    ) -> AbstractContextManager[Any]:
        """One stage of the pipeline: its histogram and, when tracing, its span.

        One ``with`` for both, so that an untraced turn (the default) pays
        for the timer alone.  ``final``: see
        :meth:`skillrack.serve.observability.metrics.Turn.stage`.
        """
        timer = self.observed.stage(name, final=final)
        if self.trace is OFF:
            return timer
        return _Both(self.trace.stage(name, scope), timer)


class _Both:
    """A stage's span around its timer (the span entered first, left last)."""

    __slots__ = ("_span", "_timer")

    def __init__(self, span: AbstractContextManager[Any], timer: AbstractContextManager[Any]):
        self._span = span
        self._timer = timer

    def __enter__(self) -> None:
        self._span.__enter__()
        try:
            self._timer.__enter__()
        except BaseException:
            self._span.__exit__(*sys.exc_info())
            raise

    def __exit__(self, *exc: Any) -> bool | None:
        try:
            self._timer.__exit__(*exc)
        finally:
            suppressed = self._span.__exit__(*exc)
        return suppressed


def begin_turn(
    context: RequestContext, event_queue: EventQueue, metrics: Metrics, trace: TurnTrace = OFF
) -> Turn:
    """The turn ``context`` starts: its updater, its caller, its metrics and its span."""
    assert context.task_id is not None and context.context_id is not None
    assert context.message is not None
    # A follow-up Message may omit contextId; the task keeps the one it started with.
    task = context.current_task
    context_id = task.context_id if task is not None else context.context_id
    return Turn(
        context=context,
        queue=event_queue,
        updater=TurnUpdater(event_queue, context.task_id, context_id),
        task_id=context.task_id,
        caller=caller_of(context),
        client_host=client_host_of(context),
        observed=metrics.turn(),
        trace=trace,
    )
