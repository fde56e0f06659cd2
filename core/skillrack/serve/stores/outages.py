"""Noticing at once that the database went away, from the errors of the store's own connections.

The lease keeper (:mod:`skillrack.serve.stores.leases`) learns that the task
store is unreachable at its next round, up to a third of a lease later, and
that it is back the same way.  :func:`watch_outages` shortens the first half:
SQLAlchemy tells it of every error on the engine's connections, and an error
that says the connection is gone or cannot be made (a disconnect, a refused
or timed-out connect) marks the store down at once, so the next requests are
answered 503 straight away rather than each failing on its own connect
(:mod:`skillrack.serve.middleware.drain`).  Errors of a statement (a
constraint, a conflict) are not outages and are left alone, except the
SQLSTATEs that say the server itself went (class 08, a connection exception;
57P01 to 57P03, the server shutting down or not yet accepting connections),
which a statement in flight during a fast shutdown may get.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import event
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.ext.asyncio import AsyncEngine

#: Exceptions a failed connect surfaces as, underneath SQLAlchemy's wrapper.
_CONNECT_ERRORS = (OSError, TimeoutError)
#: SQLSTATEs of a server going away: shutting down (admin or crash), not accepting yet.
_SERVER_GONE = frozenset({"57P01", "57P02", "57P03"})


def server_gone(original: BaseException) -> bool:
    """Whether a driver error carries a SQLSTATE saying the server went (class 08 or 57P0x)."""
    sqlstate = getattr(original, "sqlstate", None)
    return isinstance(sqlstate, str) and (sqlstate.startswith("08") or sqlstate in _SERVER_GONE)


def watch_outages(engine: AsyncEngine, down: Callable[[str], None]) -> None:
    """Call ``down(reason)`` whenever a connection of ``engine`` is lost or cannot be made."""

    def handle_error(context: ExceptionContext) -> None:
        original = context.original_exception
        if context.is_disconnect or isinstance(original, _CONNECT_ERRORS) or server_gone(original):
            text = str(original).splitlines()[0] if str(original) else ""
            down(f"{type(original).__name__}: {text}"[:200] if text else type(original).__name__)

    event.listen(engine.sync_engine, "handle_error", handle_error)
