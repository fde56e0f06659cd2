"""A client call declares asyncio to sniffio for its duration, and only then.

httpcore and anyio ask sniffio which async library runs them on every lock,
event, shield and socket operation; declared, sniffio answers from its
context variable instead of importing and asking asyncio each time.
"""

from __future__ import annotations

import pytest

from skillrack.client.call_scope import call_scope
from skillrack.errors import SkillCallError

sniffio = pytest.importorskip("sniffio")  # present wherever httpcore's sniffing costs
LIBRARY = sniffio.current_async_library_cvar


def scope(url: str = "http://127.0.0.1:9/") -> call_scope:
    return call_scope(url, {}, lambda origin: None, 5.0)


async def test_a_call_declares_asyncio_and_undeclares_it_after() -> None:
    assert LIBRARY.get() is None
    async with scope():
        assert LIBRARY.get() == "asyncio"
        assert sniffio.current_async_library() == "asyncio"
        async with scope():  # a call inside a call joins it: still declared
            assert LIBRARY.get() == "asyncio"
        assert LIBRARY.get() == "asyncio"
    assert LIBRARY.get() is None


async def test_a_failed_call_undeclares_it_too() -> None:
    with pytest.raises(RuntimeError, match="the skill broke"):
        async with scope():
            raise RuntimeError("the skill broke")
    assert LIBRARY.get() is None


async def test_a_url_refused_before_the_call_declares_nothing() -> None:
    with pytest.raises(SkillCallError):
        async with scope("file:///etc/passwd"):
            pass
    assert LIBRARY.get() is None


async def test_a_library_declared_by_the_caller_is_left_as_it_was() -> None:
    """Under anyio.run (or any caller that declared itself) the call changes nothing."""
    token = LIBRARY.set("asyncio")
    try:
        async with scope():
            assert LIBRARY.get() == "asyncio"
        assert LIBRARY.get() == "asyncio"  # not reset to None by the call
    finally:
        LIBRARY.reset(token)
