"""The UTC texts of ``protocol/clock.py``: ``datetime.isoformat``'s, a second's text reused."""

from __future__ import annotations

import datetime as dt
import re
import time

from hypothesis import given
from hypothesis import strategies as st

from skillrack.protocol.clock import second_text, utc_now_millis

EPOCH = dt.datetime(1970, 1, 1)


@given(st.integers(min_value=-62135596800, max_value=253402300799))
def test_a_seconds_text_is_what_isoformat_writes(seconds: int) -> None:
    expected = (EPOCH + dt.timedelta(seconds=seconds)).isoformat()
    assert second_text(seconds) == expected
    assert second_text(seconds) == expected  # the second kept from the call before


def test_now_is_utc_to_the_millisecond_as_datetime_writes_it() -> None:
    """``utc_now_millis`` reuses the formatted second: it still reads the clock every time."""
    for _ in range(3):
        before = dt.datetime.now(dt.UTC).replace(microsecond=0)
        text = utc_now_millis()
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text)
        read = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        assert before <= read <= dt.datetime.now(dt.UTC)
        time.sleep(0.6)  # the next one lies in another second, formatted again
