"""a2a-sdk's span wrappers taken off its classes when its tracing is off.

a2a-sdk decorates its request handlers, dispatchers and event queues with
``trace_class``: every method becomes a wrapper that opens a span around the
real one.  ``skillrack serve`` switches a2a-sdk's tracing off unless an
exporter is configured (:mod:`skillrack.serve.process`), and a2a-sdk then
swaps OpenTelemetry for a no-op object, but the wrappers stay: each call of a
wrapped method still runs the wrapper, its debug log call, four calls of the
no-op object and one more coroutine frame.  An event delivered to a stream
passes through several of them (the source queue's put, the dispatch to each
sink, each sink's get): about 5% of the server's CPU per delivered event with
10,000 open streams (``benchmarks/streams.py`` under py-spy).

:func:`drop_sdk_spans` puts the undecorated functions back (``trace_function``
keeps each under ``__wrapped__``, by ``functools.wraps``) on every class of
the a2a-sdk modules loaded so far, only while a2a-sdk's tracing is off, and
only in a process ``skillrack serve`` owns.
"""

from __future__ import annotations

import sys
from typing import Any


def sdk_tracing_on() -> bool:
    """Whether a2a-sdk records spans (OpenTelemetry installed and its tracing not switched off)."""
    from a2a.utils import telemetry

    return bool(telemetry.otel_installed and telemetry.otel_enabled)


def unwrapped(value: Any, wrappers_file: str) -> Any | None:
    """The function under a2a-sdk's span wrapper ``value``, or None if it is none.

    A wrapper is known by its code, defined in ``a2a.utils.telemetry``
    (``wrappers_file``): ``functools.wraps`` gives it the wrapped function's
    names, not its code.
    """
    code = getattr(value, "__code__", None)
    if code is None or code.co_filename != wrappers_file:
        return None
    return getattr(value, "__wrapped__", None)


def drop_sdk_spans() -> int:
    """Put back the undecorated methods of a2a-sdk's loaded classes; how many (0: tracing on)."""
    if sdk_tracing_on():
        return 0
    from a2a.utils import telemetry

    wrappers_file = telemetry.__file__
    dropped = 0
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "a2a" or name.startswith("a2a.")):
            continue
        for cls in list(vars(module).values()):
            if not isinstance(cls, type) or cls.__module__ != name:
                continue
            for attribute, value in list(vars(cls).items()):
                original = unwrapped(value, wrappers_file)
                if original is not None:
                    setattr(cls, attribute, original)
                    dropped += 1
    return dropped
