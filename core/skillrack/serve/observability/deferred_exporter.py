"""A span exporter made at its first export, not while ``skillrack serve`` starts.

The OTLP/HTTP exporter imports ``requests`` and ``urllib3`` and opens their
session when it is made: measured, a third of what an OpenTelemetry exporter
added to ``skillrack serve``'s start (issue 34: the card answered in under a
second with an exporter configured too).  Nothing needs it that early: the
SDK's ``BatchSpanProcessor`` hands spans to the exporter from its own thread,
in batches, after they end (``OTEL_BSP_SCHEDULE_DELAY``, 5 s by default).  So
:func:`~skillrack.serve.observability.traces.configure` gives the processor
this stand-in, which loads the exporter's entry point and makes the exporter
at the first batch, in that thread.

Whether the exporter is installed is still checked at start (its entry point
exists), so a missing package stops ``skillrack serve`` with one line as
before.  An exporter that is installed but cannot be made (a bad
``OTEL_EXPORTER_OTLP_CERTIFICATE``, a broken package) is logged once, with
its name, and its spans are dropped: the agent keeps serving, as it does
when the collector is down.

Imports the OpenTelemetry SDK (the ``otel`` extra): only ``configure``
imports this module, once an exporter is configured.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from importlib.metadata import EntryPoint

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

logger = logging.getLogger(__name__)


class DeferredExporter(SpanExporter):
    """The span exporter an entry point provides, made when the first batch is exported."""

    def __init__(self, name: str, entry_point: EntryPoint) -> None:
        self.name = name
        self._entry_point = entry_point
        self._lock = threading.Lock()
        self._exporter: SpanExporter | None = None
        self._failed = False

    def exporter(self) -> SpanExporter | None:
        """The real exporter, made on the first call; None if it could not be made."""
        with self._lock:
            if self._exporter is None and not self._failed:
                try:
                    self._exporter = self._entry_point.load()()
                except Exception as exc:  # any failure: one line, and the spans are dropped
                    self._failed = True
                    logger.error(
                        "traces: the %r span exporter could not be made (%s: %s); its spans "
                        "are dropped: check its OTEL_EXPORTER_* settings",
                        self.name,
                        type(exc).__name__,
                        exc,
                    )
            return self._exporter

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        exporter = self.exporter()
        if exporter is None:
            return SpanExportResult.FAILURE
        return exporter.export(spans)

    def shutdown(self) -> None:
        """Shut the exporter down if it was ever made (nothing was exported otherwise)."""
        with self._lock:
            exporter = self._exporter
        if exporter is not None:
            exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        with self._lock:
            exporter = self._exporter
        return exporter.force_flush(timeout_millis) if exporter is not None else True


__all__ = ["DeferredExporter"]
