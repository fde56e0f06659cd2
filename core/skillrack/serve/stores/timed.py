"""Task-store latency and errors for the agent's metrics, without another store class.

a2a-sdk looks at the store it is given (cluster mode takes a
``VersionedTaskStore``; skillrack's request handler a
``SingleProcessTaskStore``), so a wrapping class would hide what it is.
:func:`time_operations` instead puts timed versions of the store's own
operations on the instance: the store stays what it was, and each call of
``get``, ``save``, ``delete`` and ``list`` is observed in
``skillrack_task_store_operation_duration_seconds`` and, when it raises,
``skillrack_task_store_errors_total`` (:mod:`skillrack.serve.observability.metrics`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import Any

from skillrack.serve.observability.metrics import Metrics

#: The operations every a2a-sdk task store has.
OPERATIONS = ("get", "save", "delete", "list")


def time_operations(store: Any, metrics: Metrics) -> None:
    """Replace ``store``'s operations on the instance with timed ones (see the module docstring)."""
    for name in OPERATIONS:
        operation = getattr(store, name, None)
        if operation is not None:
            observe, failed = metrics.store_recorders(name)
            setattr(store, name, _timed(operation, observe, failed))


def _timed(
    operation: Callable[..., Awaitable[Any]],
    observe: Callable[[float], None],
    failed: Callable[[], None],
) -> Callable[..., Awaitable[Any]]:
    """``operation``, observed: its recorders are resolved once, here, not on every call.

    An invocation makes about eight store calls; each costs two clock reads
    and one observation, nothing else.
    """

    @functools.wraps(operation)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        started = perf_counter()
        try:
            return await operation(*args, **kwargs)
        except Exception:
            failed()
            raise
        finally:
            observe(perf_counter() - started)

    return timed


__all__ = ["OPERATIONS", "time_operations"]
