"""The one door every request of a :class:`SkillClient` goes through.

The client's requests are made partly by skillrack (the Agent Card) and
partly by a2a-sdk's transports (messages, streams, polls); a redirect is
followed by httpx.  Checking the origin rule and the read bounds at each of
those places would leave one out sooner or later, so they are enforced here,
in an ``httpx`` transport that wraps the one that connects:

* before a request is sent, its URL must satisfy the :class:`OriginPolicy` of
  the exchange under way (set with :func:`origin_scope`): an interface URL or
  a redirect to another origin never receives a byte, credentials included;
* an HTTP 401 or 403 ends the exchange as ``authorization_failed``;
* every body is read through a :class:`BoundedStream` (the stream bound for
  ``text/event-stream``, the response bound otherwise), and a declared
  ``Content-Length`` over the bound is refused before reading;
* bodies are asked for without content coding, and a compressed body is
  refused, since a few compressed bytes can inflate past any bound;
* a bearer token from the exchange's :class:`~skillrack.client.oauth.TokenSource`
  (OAuth 2.0 client credentials) is attached to requests to the origin the
  call named and to the origins the caller named for it
  (``ClientCredentials.origins``), and to no other (not to ``allow_origins``,
  not where a redirect leads); an agent's 401 drops it from the source's cache;
* a cookie an agent sets goes back to that agent's origin only, never to
  another agent on the same host (:mod:`skillrack.client.cookies`);
* the current OpenTelemetry span, if one is recording (a skill handler's,
  when the host traces), goes along as W3C ``traceparent``/``tracestate``, so
  the peer's spans join the caller's trace; without one nothing is added, and
  baggage is never sent (one vendor's key-value pairs are not the next one's).

``inner`` is the transport that opens connections (by default httpx's own);
a host that must also decide which addresses may be dialled passes its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token

import httpx
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from skillrack.client.bounds import BoundedStream, declared_length, exceeded, where
from skillrack.client.challenge import authorization_failed
from skillrack.client.cookies import CookielessClient, OriginCookies
from skillrack.client.oauth import TokenSource
from skillrack.client.origin import Origin, OriginPolicy
from skillrack.client.origin_pools import PerOrigin
from skillrack.client.readbounds import ReadBounds
from skillrack.errors import ClientCode, SkillCallError

#: W3C Trace Context only: what skillrack's server reads (skillrack.serve.middleware.trace_context).
_TRACE_CONTEXT = TraceContextTextMapPropagator()

#: The exchange's origin policy and the source of the bearer token sent to its named origin:
#: one variable, so a call sets one (a token and a new context mapping each, per call).
_scope: ContextVar[tuple[OriginPolicy, TokenSource | None] | None] = ContextVar(
    "skillrack_origin_scope", default=None
)


#: What :func:`leave_origin_scope` undoes.
OriginTokens = Token[tuple[OriginPolicy, TokenSource | None] | None]


@contextmanager
def origin_scope(policy: OriginPolicy, bearer: TokenSource | None = None) -> Iterator[None]:
    """Requests made inside this block (this task and what it awaits) obey ``policy``.

    ``bearer`` supplies the token sent to ``policy.named``, and only there.
    """
    tokens = enter_origin_scope(policy, bearer)
    try:
        yield
    finally:
        leave_origin_scope(tokens)


def enter_origin_scope(policy: OriginPolicy, bearer: TokenSource | None) -> OriginTokens:
    """:func:`origin_scope`'s entry, for a scope that is not a ``with`` block of its own
    (:class:`~skillrack.client.call_scope.call_scope`); undo with :func:`leave_origin_scope`."""
    return _scope.set((policy, bearer))


def leave_origin_scope(tokens: OriginTokens) -> None:
    """Undo :func:`enter_origin_scope`."""
    _scope.reset(tokens)


def current_policy() -> OriginPolicy | None:
    """The policy of the exchange under way, if any."""
    scope = _scope.get()
    return scope[0] if scope is not None else None


class GuardedTransport(httpx.AsyncBaseTransport):
    """Origin rule before sending, authorization and bounds while receiving."""

    def __init__(self, inner: httpx.AsyncBaseTransport, bounds: ReadBounds) -> None:
        self.inner = inner
        self.bounds = bounds
        #: What agents set, each origin's sent back to it only (:mod:`~skillrack.client.cookies`).
        self.cookies = OriginCookies()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        scope = _scope.get()
        if scope is None:  # fail closed: every exchange of SkillClient sets one
            raise SkillCallError.local(
                ClientCode.ORIGIN_REFUSED,
                f"a request to {request.url} was made outside any call: refused",
            )
        policy, source = scope
        policy.check(request.url, "a request (to an interface URL or a redirect) to")
        sent = None
        target = Origin.of(request.url)
        if source is not None and (
            target == policy.named or target in source.credentials.token_origins
        ):
            sent = (await source.token()).value
            request.headers["Authorization"] = f"Bearer {sent}"
        _TRACE_CONTEXT.inject(request.headers)  # nothing unless a valid span is current
        self.cookies.attach(target, request)
        response = await self.inner.handle_async_request(request)
        if sent is not None and source is not None and response.status_code == 401:
            source.invalidate(sent)
        try:
            bounded = self._bounded(request, response)
        except BaseException:
            await response.aclose()
            raise
        self.cookies.learn(target, request, bounded)  # not from an answer refused above
        return bounded

    def _bounded(self, request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if response.status_code in (401, 403):
            raise authorization_failed(
                response.status_code, response.headers.get("www-authenticate"), where(request)
            )
        coding = response.headers.get("content-encoding", "identity").strip().lower()
        if coding not in ("", "identity"):
            raise SkillCallError.local(
                ClientCode.PROTOCOL_ERROR,
                f"{where(request)} answered with a {coding!r}-encoded body though the client "
                "asked for none (a compressed body could inflate past the client's read bounds)",
            )
        streaming = "text/event-stream" in response.headers.get("content-type", "")
        limit = self.bounds.max_stream_bytes if streaming else self.bounds.max_response_bytes
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        # The URL is formatted only when a bound is crossed (BoundedStream.what).
        prefix = "the event stream of" if streaming else "the answer to"
        bounded = BoundedStream(stream, limit, prefix, request, response)
        length = declared_length(response)
        if length is not None and length > limit:
            raise exceeded(bounded.what(), limit)
        response.stream = bounded
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def http_client(
    *,
    headers: Mapping[str, str],
    timeout: float,
    bounds: ReadBounds,
    transport: httpx.AsyncBaseTransport | None,
) -> httpx.AsyncClient:
    """The ``httpx`` client of a :class:`SkillClient`: every request through the guard.

    ``trust_env`` is off: proxy variables would route requests around the
    guard, and a ``.netrc`` would attach credentials the caller never gave.
    Redirects are followed, hop by hop through the guard, so only same-origin
    (or allowed) ones ever are.  An agent's cookies go back to its origin
    only (:mod:`skillrack.client.cookies` says why).
    """
    return CookielessClient(
        timeout=timeout,
        headers={"Accept-Encoding": "identity", **headers},
        transport=GuardedTransport(transport or PerOrigin(), bounds),
        follow_redirects=True,
        trust_env=False,
    )
