"""Now, in UTC to the millisecond, as the text skillrack records it (``2026-12-05T10:00:00.123Z``).

Who started a task and when (its metadata), a delegation hop's start and
end: each is ``datetime.now(UTC)`` written with
``isoformat(timespec="milliseconds")`` and ``Z``, one width, so that texts
compare as the times they name.  Building and formatting a ``datetime`` for
each costs a few microseconds per invocation; :func:`utc_now_millis` reads
the clock once and reuses the text of the current second while it lasts.
"""

from __future__ import annotations

import time

#: The last whole second written, and its text.
_second: tuple[int, str] = (-1, "")


def utc_now_millis() -> str:
    """Now in UTC to the millisecond (truncated, as ``isoformat`` truncates), ending in ``Z``."""
    global _second
    now = time.time()
    whole = int(now)
    if whole != _second[0]:
        _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)))
    return f"{_second[1]}.{int((now - whole) * 1000):03d}Z"


__all__ = ["utc_now_millis"]
