"""Times in UTC as the text skillrack writes them, a second's text formatted once.

Who started a task and when (its metadata), a delegation hop's start and
end: each is ``datetime.now(UTC)`` written with
``isoformat(timespec="milliseconds")`` and ``Z`` (:func:`utc_now_millis`),
one width, so that texts compare as the times they name.  A status
timestamp in an answer is ``Timestamp.ToJsonString``'s text
(:mod:`skillrack.protocol.proto_json`).  Both begin with the second, written
as ``datetime.isoformat`` writes it; building and formatting a ``datetime``
for each costs a few microseconds per invocation, and they fall in the same
few seconds, so :func:`second_text` keeps the text of the last second it
wrote.
"""

from __future__ import annotations

import datetime as dt
import time

_EPOCH = dt.datetime(1970, 1, 1)
#: The last whole second written, and its text.
_second: tuple[int, str] = (0, "1970-01-01T00:00:00")


def second_text(seconds: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` of ``seconds`` since the epoch, UTC (years 1 to 9999)."""
    global _second
    last, text = _second
    if seconds != last:
        text = (_EPOCH + dt.timedelta(seconds=seconds)).isoformat()
        _second = (seconds, text)
    return text


def utc_now_millis() -> str:
    """Now in UTC to the millisecond (truncated, as ``isoformat`` truncates), ending in ``Z``."""
    now = time.time()
    whole = int(now)
    return f"{second_text(whole)}.{int((now - whole) * 1000):03d}Z"


__all__ = ["second_text", "utc_now_millis"]
