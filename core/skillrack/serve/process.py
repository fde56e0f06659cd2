"""Process-wide settings that ``skillrack serve`` makes because it owns its process.

A library must not change what belongs to the application that embeds it
(its tracing, its garbage collector); ``skillrack serve`` is that
application, so it chooses, and says so in its start-up log.

- **a2a-sdk's tracing.** When OpenTelemetry is importable (``opentelemetry-api``
  arrives with a2a-sdk's own dependencies), a2a-sdk wraps its request path in
  spans; with no exporter configured they go nowhere, and they cost about a
  sixth of a bare a2a-sdk agent's throughput (``benchmarks/``).  a2a-sdk reads
  ``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED`` once, when it is first imported, so
  this runs before that (``launch.py``).  An operator who sets that variable,
  or configures an OpenTelemetry exporter (``OTEL_TRACES_EXPORTER``,
  ``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``)
  without ``OTEL_SDK_DISABLED=true``, keeps a2a-sdk's tracing on; the same
  setting turns skillrack's own spans on (:mod:`skillrack.serve.observability.traces`).
- **Metrics of several processes.**  With ``--workers N``, prometheus-client
  keeps each worker's values in files of a directory named by
  ``PROMETHEUS_MULTIPROC_DIR`` and adds them up at a scrape;
  :func:`metrics_directory` makes a fresh one for this run (values of an
  earlier run must not be added in) and removes it at the end.
- **The console's secret under several workers.**  Without ``[server]
  console_secret_file`` each process would make its own, and a browser's
  session cookie would be refused by every worker but one;
  :func:`console_secret_file` writes one random secret to a file only this
  user reads, names it in ``SKILLRACK_CONSOLE_SECRET_FILE`` for the workers,
  and removes it at the end.
- **The start-up heap.** Assembly leaves a few hundred thousand long-lived
  objects (plugins, schemas, compiled validators, a2a-sdk's descriptors);
  ``gc.freeze()`` moves them out of the collector's generations, so a full
  collection does not walk them (measured: 3-4% per request, and no pauses
  of 60-130 ms every few thousand requests).  While they are being made the
  collector is off (:func:`pause_collector`): it ran some 300 times over
  them during a start, a fifth of its CPU, for almost nothing (2,200 objects
  of garbage among 134,000 with the example plugin), so they are frozen
  without a last collection, which alone cost 0.1 s.
- **The young generation.** Every open stream (an SSE response waiting for
  its task's next event) holds a chain of suspended coroutines and async
  generator steps, some 45 objects, made anew each time an event reaches it
  and alive until the next one, seconds later.  With CPython's default
  threshold (a young collection every 700 net allocations) they were
  promoted to the oldest generation and died there, and its full
  collections, each walking every object of every open stream, came every
  few seconds: 1-4 s each with 10,000 streams, about half of the process's
  CPU; streams opened at 160 a second instead of 460, and the delay from
  publish to delivery went to seconds (``benchmarks/streams.py``).  With
  :data:`YOUNG_THRESHOLD` what waits for an event is rarely collected before
  it is replaced: no full collection came in a minute of 10,000 streams.  A
  young collection still walks every waiting chain (0.3-0.4 s with 10,000
  streams), but only after 50,000 objects more are alive than at the last
  one, which a server that keeps up seldom reaches.  Cyclic garbage waits
  longer for its collection: at most that many objects.
- **SIGTERM.** uvicorn stops at once on ``SIGTERM``; ``skillrack serve``
  drains first (:mod:`skillrack.serve.bindings.shutdown`), so it puts its own
  handler in front of uvicorn's (:func:`take_signal`) and hands over when done.
- **Open files.** Every open connection (a stream a client holds open
  included) is a file descriptor, and a soft ``RLIMIT_NOFILE`` of 1,024 (a
  common default) makes ``accept`` fail with ``EMFILE`` long before ``[server]
  max_connections``; :func:`raise_open_files` raises the soft limit (never the
  hard one, which only root may raise) and says so.
"""

from __future__ import annotations

import gc
import os
import secrets
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from types import FrameType

A2A_TRACING = "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"
#: Any of these set means someone wants traces exported: a2a-sdk's tracing stays on.
EXPORTER_SETTINGS = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)


def exporter_configured(environ: Mapping[str, str]) -> bool:
    """Whether the operator configured an OpenTelemetry trace exporter.

    One rule for a2a-sdk's tracing (here) and skillrack's own
    (:func:`skillrack.serve.observability.traces.configure`): both are on, or both off.
    """
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False  # the SDK would export nothing: a2a-sdk's spans would only cost
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    return exporter != "none" and any(environ.get(name, "").strip() for name in EXPORTER_SETTINGS)


def default_tracing(environ: MutableMapping[str, str]) -> bool:
    """Switch a2a-sdk's tracing off unless the operator chose; True when this switched it off."""
    if A2A_TRACING in environ or exporter_configured(environ):
        return False
    environ[A2A_TRACING] = "false"
    return True


def describe_tracing() -> str:
    """What a2a-sdk decided, for the start-up log (it has been imported by now)."""
    from a2a.utils import telemetry

    if not telemetry.otel_installed:
        return "off (OpenTelemetry is not installed)"
    if telemetry.otel_enabled:
        return f"on ({A2A_TRACING} is not false)"
    return f"off ({A2A_TRACING}={telemetry.env_value}; set it to true to trace)"


#: Set (by ``skillrack serve --workers``) when metric values live in per-process files.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


@contextmanager
def metrics_directory(environ: MutableMapping[str, str]) -> Iterator[str]:
    """A fresh ``PROMETHEUS_MULTIPROC_DIR`` for the workers about to start; removed afterwards."""
    path = tempfile.mkdtemp(prefix="skillrack-metrics-")
    previous = environ.get(MULTIPROC_ENV)
    environ[MULTIPROC_ENV] = path
    try:
        yield path
    finally:
        if previous is None:
            environ.pop(MULTIPROC_ENV, None)
        else:
            environ[MULTIPROC_ENV] = previous
        shutil.rmtree(path, ignore_errors=True)


#: Names the file holding the console's secret for ``serve --workers`` (see the module docstring).
CONSOLE_SECRET_ENV = "SKILLRACK_CONSOLE_SECRET_FILE"


@contextmanager
def console_secret_file(environ: MutableMapping[str, str]) -> Iterator[str]:
    """One random console secret for the workers about to start, in a 0600 file; removed after."""
    descriptor, path = tempfile.mkstemp(prefix="skillrack-console-")  # created 0600
    try:
        os.write(descriptor, secrets.token_urlsafe(48).encode())
    finally:
        os.close(descriptor)
    previous = environ.get(CONSOLE_SECRET_ENV)
    environ[CONSOLE_SECRET_ENV] = path
    try:
        yield path
    finally:
        if previous is None:
            environ.pop(CONSOLE_SECRET_ENV, None)
        else:
            environ[CONSOLE_SECRET_ENV] = previous
        os.unlink(path)


def pause_collector() -> bool:
    """Turn the cyclic collector off for the start; whether it was on (to restore it).

    :func:`freeze_startup_heap` turns it on again once the start-up heap is frozen.
    """
    enabled = gc.isenabled()
    gc.disable()
    return enabled


#: Net allocations of tracked objects between two young collections (CPython's default: 700).
YOUNG_THRESHOLD = 50_000
#: Young collections between two of the middle generation (CPython's default: 10).
MIDDLE_THRESHOLD = 20


def freeze_startup_heap() -> None:
    """Keep every object alive now out of later collections, and collect from here on.

    No collection first: the start leaves almost no garbage (see the module
    docstring).  The young generation is made large enough that what waits
    for a stream's next event is not promoted to the oldest generation.
    """
    gc.freeze()
    oldest = gc.get_threshold()[2]
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, oldest)
    gc.enable()


def take_signal(sig: int, first: Callable[[Callable[[], None]], object]) -> Callable[[], None]:
    """Put ``first`` before whatever handles ``sig`` now (uvicorn's exit); returns the undo.

    The first ``sig`` calls ``first(proceed)``, where ``proceed()`` runs the
    handler that was installed (so uvicorn stops when ``first`` says so); a
    second ``sig`` runs it at once (an operator who insists).  ``first`` runs
    in the signal handler: it must only schedule work (``call_soon_threadsafe``).
    Signals are the main thread's: elsewhere (an app run in a test's thread)
    nothing is taken and the undo does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(sig)
    taken = False

    def run_previous(frame: FrameType | None) -> None:
        if callable(previous):
            previous(sig, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)

    def handle(signum: int, frame: FrameType | None) -> None:
        nonlocal taken
        if taken:
            run_previous(frame)
            return
        taken = True
        first(lambda: run_previous(None))

    signal.signal(sig, handle)

    def undo() -> None:
        if signal.getsignal(sig) is handle:
            signal.signal(sig, previous)

    return undo


#: Descriptors a process needs besides its connections: listening sockets, the store's and
#: the log's files, connections to peers and webhooks.
FILE_HEADROOM = 256


def raise_open_files(connections: int) -> str | None:
    """Raise the soft open-file limit to hold ``connections`` (up to the hard limit).

    Returns the start-up line saying what it did, or ``None`` when the limit
    was high enough already (or the platform has no such limit: Windows).
    Workers started afterwards inherit the limit.
    """
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + FILE_HEADROOM
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return None
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    short = (
        f"{wanted:,} wanted for [server] max_connections = {connections:,}: raise the hard "
        "limit (ulimit -Hn, systemd LimitNOFILE=) or lower max_connections"
    )
    if target <= soft:
        return f"open files: soft limit {soft:,} is the hard limit; {short}"
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:  # macOS refuses more than OPEN_MAX
        return f"open files: soft limit {soft:,} could not be raised ({exc}); {short}"
    line = f"open files: soft limit raised from {soft:,} to {target:,}"
    if target < wanted:
        return f"{line} (the hard limit); {short}"
    return f"{line} for [server] max_connections = {connections:,}"
