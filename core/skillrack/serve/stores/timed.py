"""Task-store latency and errors for the agent's metrics, without another store class.

a2a-sdk looks at the store it is given (cluster mode takes a
``VersionedTaskStore``; skillrack's request handler a
``SingleProcessTaskStore``), so a wrapping class would hide what it is.
:func:`time_operations` instead puts timed versions of the store's own
operations on the instance: the store stays what it was, and each call of
``get``, ``save``, ``delete`` and ``list`` is observed in
``skillrack_task_store_operation_duration_seconds`` and, when it raises,
``skillrack_task_store_errors_total`` (:mod:`skillrack.serve.metrics`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from skillrack.serve.metrics import Metrics

#: The operations every a2a-sdk task store has.
OPERATIONS = ("get", "save", "delete", "list")


def time_operations(store: Any, metrics: Metrics) -> None:
    """Replace ``store``'s operations on the instance with timed ones (see the module docstring)."""
    for name in OPERATIONS:
        operation = getattr(store, name, None)
        if operation is not None:
            setattr(store, name, _timed(operation, metrics, name))


def _timed(
    operation: Callable[..., Awaitable[Any]], metrics: Metrics, name: str
) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(operation)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        with metrics.store_operation(name):
            return await operation(*args, **kwargs)

    return timed


__all__ = ["OPERATIONS", "time_operations"]
