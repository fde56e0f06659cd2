"""One public call of the client: one origin policy, one deadline, one look at each card.

Every public method of :class:`~skillrack.client.skill_client.SkillClient`
runs inside :func:`call_scope` (the :func:`one_call` decorator): its
requests obey the origin named by the URL it was given
(:mod:`skillrack.client.origin`, attached by :mod:`skillrack.client.transport`),
and ``timeout`` bounds all of them together, card, ``describe_skill``,
streams, polling and retries included.  A call made inside another
(``call`` describes first) joins the outer one: same agent, same deadline.

:class:`CallState` is what the running call remembers: which agents' cards
it already fetched or revalidated (one look per call), which it took from a
cache without asking, fresh by its ``Cache-Control`` (a stale one is fetched
again when the agent says ``interface_mismatch``), which security
requirements it already checked, and when its deadline ends (a retry does
not begin a wait that would pass it).

A call also says, for its own duration, that it runs on asyncio (sniffio's
``current_async_library_cvar``, as ``anyio.run`` says it): httpcore asks
sniffio which library runs it for every lock, event and shield of every
request, and anyio for every socket operation, and with nothing declared
sniffio finds out by importing and asking asyncio each time (about 5% of a
call's CPU in ``benchmarks/fanout.py``).  The client needs asyncio anyway
(its deadline is an ``asyncio.timeout``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from skillrack.client.oauth import TokenSource
from skillrack.client.origin import Origin, OriginPolicy
from skillrack.client.transport import OriginTokens, enter_origin_scope, leave_origin_scope
from skillrack.errors import ErrorCode, SkillCallError

_library: ContextVar[str | None] | None
try:
    from sniffio import current_async_library_cvar as _library
except ImportError:  # pragma: no cover - without sniffio, httpcore and anyio assume asyncio
    _library = None

_P = ParamSpec("_P")
_T = TypeVar("_T")


@dataclass
class CallState:
    """What the running public call remembers (module docstring)."""

    #: Agents whose card this call already fetched or revalidated.
    seen: set[str] = field(default_factory=set)
    #: Agents whose card this call took from a cache (memory, disk) without asking the agent.
    unasked: set[str] = field(default_factory=set)
    #: ``(agent, skill)`` pairs whose card security requirements this call already checked.
    checked: set[tuple[str, str | None]] = field(default_factory=set)
    #: The loop time at which the call's ``timeout`` ends.
    ends: float | None = None


_state: ContextVar[CallState | None] = ContextVar("skillrack_client_call", default=None)


def current() -> CallState:
    """The running call's state (a fresh, unshared one outside any call)."""
    return _state.get() or CallState()


def remaining() -> float | None:
    """Seconds left before the running call's deadline; None outside a call."""
    state = _state.get()
    if state is None or state.ends is None:
        return None
    return state.ends - asyncio.get_running_loop().time()


class call_scope:
    """Requests of this call obey the origin named by ``url``, all within ``timeout``.

    ``allow_origins``: under ``None`` the origins every call may also reach,
    under an origin those calls naming it may; ``token_source`` gives the
    OAuth tokens for the named origin.  A scope entered inside another call
    joins it (same agent, same deadline).

    A class rather than an ``asynccontextmanager`` generator: every public
    call of a client enters one, and a fan-out makes hundreds a second; this
    does the same steps without a generator, its frames and their wrappers.
    """

    __slots__ = ("_allow", "_deadline", "_source", "_timeout", "_tokens", "_url")

    def __init__(
        self,
        url: str,
        allow_origins: Mapping[Origin | None, frozenset[Origin]],
        token_source: Callable[[Origin], TokenSource | None],
        timeout: float,
    ) -> None:
        self._url = url
        self._allow = allow_origins
        self._source = token_source
        self._timeout = timeout
        self._deadline: asyncio.Timeout | None = None
        self._tokens: (
            tuple[Token[CallState | None], OriginTokens, Token[str | None] | None] | None
        ) = None

    async def __aenter__(self) -> None:
        if _state.get() is not None:
            return  # inside another call: nothing of its own to set up or undo
        named = OriginPolicy.for_url(self._url).named  # origin_refused when not http(s)
        everywhere, here = self._allow.get(None, _NONE), self._allow.get(named, _NONE)
        allowed = everywhere | here if here else everywhere  # no new set when one is empty
        source = self._source(named)
        if source is not None:  # an origin named for the token may take the other credentials
            allowed |= source.credentials.token_origins
        state = CallState()
        token = _state.set(state)
        scoped = enter_origin_scope(OriginPolicy(named, allowed), source)
        declared = None
        if _library is not None and _library.get() is None:
            declared = _library.set("asyncio")  # the module docstring says why
        self._tokens = (token, scoped, declared)
        try:
            self._deadline = deadline = asyncio.timeout(self._timeout)
            await deadline.__aenter__()
        except BaseException:
            self._tokens = None
            self._undeclare(declared)
            leave_origin_scope(scoped)
            _state.reset(token)
            raise
        state.ends = deadline.when()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        tokens, self._tokens = self._tokens, None
        if tokens is None:
            return  # joined an outer call
        deadline = self._deadline
        assert deadline is not None
        try:
            try:
                await deadline.__aexit__(kind, exc, traceback)
            finally:
                leave_origin_scope(tokens[1])
        except TimeoutError:
            if not deadline.expired():
                raise
            raise self._timed_out() from None
        finally:
            self._undeclare(tokens[2])
            _state.reset(tokens[0])
        if kind is not None and issubclass(kind, TimeoutError) and deadline.expired():
            raise self._timed_out() from None

    @staticmethod
    def _undeclare(declared: Token[str | None] | None) -> None:
        if declared is not None and _library is not None:
            _library.reset(declared)

    def _timed_out(self) -> SkillCallError:
        return SkillCallError.local(
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            f"the call to {self._url.rstrip('/')} did not finish within the client's timeout "
            f"of {self._timeout:g} s (--timeout); it was stopped",
        )


_NONE: frozenset[Origin] = frozenset()


def one_call(
    method: Callable[Concatenate[Any, str, _P], Awaitable[_T]],
) -> Callable[Concatenate[Any, str, _P], Awaitable[_T]]:
    """A public call of ``SkillClient`` (its ``_call_scope(url)``): one policy, one deadline."""

    @functools.wraps(method)
    async def run(self: Any, url: str, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        if _state.get() is not None:  # inside another call (``call`` describes): join it
            return await method(self, url, *args, **kwargs)
        async with self._call_scope(url):
            return await method(self, url, *args, **kwargs)

    return run
