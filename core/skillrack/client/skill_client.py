"""The client agent: the draft's procedure for calling a schema-governed skill of any agent.

``SkillClient`` runs the eleven steps of "Client-agent behavior": fetch the
Agent Card (revalidated with ``ETag``), check the advertisement, select the
skill's version and digest, retrieve the document with ``describe_skill``
(activating the extension with the header *and* the Message's
``extensions``), verify that advertised, returned and computed digests agree
and that the document validates and names the selected skill and version,
validate the arguments, invoke, and validate the output and every supporting
record.  Verified documents and their compiled validators are cached by
(agent, skill, skill version, interface version, digest), so a repeated call
makes no new ``describe_skill``.

With ``card_keys`` (a JWKS, or the path of one) the card must carry a JWS
signature (A2A 1.0 section 8.4) by one of those pinned keys: a card without
one is refused with ``card_signature_invalid`` before anything is sent.

The client's trust boundary: every request goes through
:mod:`skillrack.client.transport`, so the caller's credentials reach only the
origin of the URL the caller named (or an origin allowed with
``allow_origins``; :mod:`skillrack.client.origin`), bodies are read within
:class:`~skillrack.client.readbounds.ReadBounds`, a 401 or 403 is
``authorization_failed``, and ``timeout`` bounds each whole public call
(card, describe, streams and polling together) with ``resource_limit_exceeded``.

Everything found locally raises :class:`~skillrack.errors.SkillCallError`
with ``remote=False`` and without any task state; remote failures carry the
remote task's error object, state and id.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar, cast

import httpx
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.service_parameters import ServiceParametersFactory, with_a2a_extensions
from a2a.types import (
    AgentCard,
    GetTaskRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
)
from google.protobuf import json_format

from skillrack.client.advertisement import Advertisement, read_advertisement
from skillrack.client.bounds import exceeded
from skillrack.client.busy import ADVICE, BEGUN, AgentBusy, retrying
from skillrack.client.cache import CARD_CACHE, CacheBounds, CacheKey, InterfaceCache, LruCache
from skillrack.client.call_scope import call_scope, current, one_call, remaining
from skillrack.client.card_security import Presented, check_card_security
from skillrack.client.cards import CachedCard, parse_card, read_card
from skillrack.client.challenge import with_card_hint
from skillrack.client.disk_cache import DiskCache
from skillrack.client.failures import mapped_failures as _transport
from skillrack.client.grpc_channel import (
    GRPC,
    binding_name,
    channel_factory,
)
from skillrack.client.jsonrpc_answers import LeanClientFactory
from skillrack.client.oauth import ClientCredentials, TokenSource
from skillrack.client.origin import Origin, allowed_origins
from skillrack.client.origin_pools import PerOrigin
from skillrack.client.outcome import SkillResult, TaskAssembler, outcome
from skillrack.client.push import PushTarget
from skillrack.client.reachable import reachable_card
from skillrack.client.readbounds import DEFAULT_BOUNDS, ReadBounds
from skillrack.client.sdk_clients import SdkClients
from skillrack.client.tls import ClientTls, TlsByOrigin, refused_hint
from skillrack.client.token_reach import may_receive
from skillrack.client.transport import current_policy, http_client
from skillrack.client.verify import (
    check_arguments,
    describe_result,
    refuse_untrusted,
    verify_described,
)
from skillrack.errors import ClientCode, ErrorCode, SkillCallError
from skillrack.interface.document import (
    DESCRIBE_SKILL,
    VerifiedInterface,
)
from skillrack.interface.limits import DEFAULT_LIMITS, Limits
from skillrack.interface.trust import SchemaPolicy
from skillrack.interface.versions import INTERFACE_VERSION
from skillrack.protocol.messages import APPROVAL_KEY, EXTENSION_URI
from skillrack.protocol.parts import PartLike, user_message
from skillrack.protocol.states import INTERRUPTED, TERMINAL
from skillrack.protocol.values import data_part

if TYPE_CHECKING:  # imported when keys are pinned (PyJWT and cryptography: cards.py)
    from skillrack.protocol.signing import CardKeys

logger = logging.getLogger(__name__)

#: The service parameters (HTTP headers) that activate the schema-interface extension.
_ACTIVATED = ServiceParametersFactory.create([with_a2a_extensions([EXTENSION_URI])])

Mode = Literal["sync", "stream", "poll"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


class SkillClient:
    """Calls schema-governed skills of any agent that implements the draft.

    ``headers`` (for example ``{"Authorization": "Bearer ..."}`` or an API key
    header) are sent on every request to the agent, and only to the origin of
    the URL named in the call, or to one of ``allow_origins``
    (``"https://host:port"`` strings; or a mapping from an agent's URL to the
    origins allowed for calls to that agent alone, as ``[peers]`` configures
    them).  ``card_keys`` pins the public keys (a JWKS dict or the path of a
    JWKS file) the agent's card must be signed by.  ``bounds`` limits what is
    read; ``timeout`` (seconds) limits each whole call.  ``transport`` is the
    ``httpx`` transport that connects (``httpx.ASGITransport(app)`` for an
    in-process agent, a host's address guard); the client wraps it with the
    origin rule and the bounds.  Use as an async context manager, or call
    :meth:`aclose`.

    ``tls`` (a :class:`~skillrack.client.tls.ClientTls`, or a mapping from an
    agent's URL to one, as ``[peers]`` configures them) is the client
    certificate to present (mutual TLS) and the CA bundle to verify the
    agent with; the client builds the connecting transport from it, unless
    ``transport`` is given, which must then present them itself (the host's
    address guard does).  A card whose ``securityRequirements`` (the
    agent's, or the called skill's) can only be met with a client
    certificate is refused locally, before anything is sent, when none is
    configured for that agent.

    ``oauth`` (:class:`~skillrack.client.oauth.ClientCredentials`, or a
    mapping from an agent's URL to them, as ``[peers]`` configures them)
    obtains bearer tokens by the OAuth 2.0 client-credentials grant, cached
    until shortly before they expire, and sends them to the origin of the
    URL a call names (its gRPC port too, when safe, and the credentials'
    ``origins``: :mod:`skillrack.client.token_reach`) and nowhere else;
    ``oauth_transport`` connects to the token endpoint (a host's address
    guard).  Before a message is sent, a
    card whose ``securityRequirements`` (the agent's, or the called
    skill's) nothing this client presents can meet is refused locally with
    ``authorization_failed`` (:mod:`skillrack.client.card_security`).

    ``trust`` (a :class:`~skillrack.interface.trust.SchemaPolicy`) is the
    draft's schema trust: pinned schema identities and their digests,
    allowed dialects, minimum versions per ``schema_uri``; with
    ``card_keys`` (the trusted publishers) it decides which verified
    documents this client lets govern a call.  A document outside it is
    refused with ``interface_invalid`` before the skill is invoked.

    Every cache is bounded in entries and bytes, least recently used first:
    ``card_cache`` for Agent Cards, ``limits.max_cache_entries`` and
    ``limits.max_cache_bytes`` for the interface cache and ``describe_calls``.
    """

    def __init__(
        self,
        *,
        headers: Mapping[str, str] | None = None,
        limits: Limits = DEFAULT_LIMITS,
        cache: InterfaceCache | None = None,
        timeout: float = 60.0,
        binding: str | None = None,
        poll_interval: float = 0.2,
        card_keys: CardKeys | Mapping[str, Any] | str | os.PathLike[str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        allow_origins: Iterable[str] | Mapping[str, Iterable[str]] = (),
        bounds: ReadBounds = DEFAULT_BOUNDS,
        card_cache: CacheBounds = CARD_CACHE,
        tls: ClientTls | Mapping[str, ClientTls] | None = None,
        oauth: ClientCredentials | Mapping[str, ClientCredentials] | None = None,
        oauth_transport: httpx.AsyncBaseTransport | None = None,
        trust: SchemaPolicy | None = None,
        retries: int = 0,
        disk_cache: DiskCache | None = None,
    ) -> None:
        self.limits = limits
        #: How many times a request the agent refused with HTTP 429 or 503 (gRPC
        #: RESOURCE_EXHAUSTED or UNAVAILABLE) is sent again.
        self.retries = retries
        #: Cards and verified documents kept between runs (None: memory only).
        self.disk = disk_cache
        #: The schema trust policy every verified document must also meet (None: any).
        self.trust = trust if trust is not None and not trust.empty else None
        #: Per agent origin (``None``: every agent), the TLS settings of calls to it.
        self.tls: dict[Origin | None, ClientTls] = (
            {Origin.of(url): one for url, one in tls.items()}
            if isinstance(tls, Mapping)
            else ({None: tls} if tls is not None else {})
        )
        if transport is None and self.tls:
            if None in self.tls:
                transport = PerOrigin(verify=self.tls[None].context())
            else:
                transport = TlsByOrigin(
                    {o: t.context() for o, t in self.tls.items() if o is not None}
                )
        self._header_names = frozenset(name.lower() for name in headers or {})
        self._bearer_header = any(
            name.lower() == "authorization" and value.lower().startswith("bearer ")
            for name, value in (headers or {}).items()
        )
        if oauth is not None and "authorization" in self._header_names:
            raise ValueError("give either an Authorization header or OAuth client credentials")
        #: Per agent origin (``None``: every agent), where its bearer tokens come from.
        self.tokens: dict[Origin | None, TokenSource] = {}
        for url, creds in oauth.items() if isinstance(oauth, Mapping) else [(None, oauth)]:
            if creds is not None:
                source = TokenSource(creds, transport=oauth_transport, timeout=timeout)
                self.tokens[Origin.of(url) if url is not None else None] = source
        self.bounds = bounds
        #: Origins other than the one a call names that may receive the credentials:
        #: under ``None`` for every call, under an origin for calls naming it.
        self.allow_origins = allowed_origins(allow_origins)
        self.card_keys: CardKeys | None = None
        if card_keys is not None:
            from skillrack.protocol.signing import CardKeys

            self.card_keys = CardKeys.load(card_keys)
        self.cache = cache or InterfaceCache(limits.max_cache_entries, limits.max_cache_bytes)
        self.binding = binding_name(binding)
        self._headers = dict(headers or {})
        self.poll_interval = poll_interval
        self.timeout = timeout
        self._http = http_client(
            headers=dict(headers or {}), timeout=timeout, bounds=bounds, transport=transport
        )
        # Bounded: a client named many agents, or sent huge cards, must not grow without end.
        self._cards: LruCache[str, CachedCard] = LruCache(card_cache)
        #: The describe_skill exchanges under way: concurrent calls wait for the one running.
        self._describing: dict[CacheKey, asyncio.Event] = {}
        #: a2a-sdk's clients, made once per agent and card (two per card: streaming or not).
        self._sdk_clients = SdkClients(2 * card_cache.entries)
        #: Count of describe_skill exchanges sent, per (agent, skill): diagnostics.
        self.describe_calls: LruCache[tuple[str, str], int] = LruCache(
            CacheBounds(limits.max_cache_entries, limits.max_cache_bytes)
        )

    def _presents_certificate(self, url: str) -> bool:
        """Whether calls to ``url`` present a client certificate."""
        found = self.tls.get(Origin.of(url)) or self.tls.get(None)
        return found is not None and found.presents_certificate

    async def __aenter__(self) -> SkillClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def _call_scope(self, url: str) -> AbstractAsyncContextManager[None]:
        """This client's :func:`~skillrack.client.call_scope.call_scope` for ``url``."""
        return call_scope(url, self.allow_origins, self._token_source, self.timeout)

    def _retrying(self, attempt: Callable[[], Awaitable[_T]]) -> Awaitable[_T]:
        """``attempt()``, sent again on HTTP 429 or 503, or their gRPC statuses (``retries``),
        within the call's deadline (``retrying``'s own coroutine: no frame of this one)."""
        return retrying(attempt, self.retries, remaining)

    def _token_source(self, named: Origin) -> TokenSource | None:
        return self.tokens.get(named) or self.tokens.get(None)

    async def _presented(self, agent: str) -> Presented:
        """What this client sends to ``agent``: header names, a bearer token and its scopes."""
        source = self._token_source(Origin.of(agent))
        scopes = (await source.token()).scopes if source is not None else None
        return Presented(
            headers=self._header_names,
            bearer=self._bearer_header or source is not None,
            scopes=scopes,
            certificate=self._presents_certificate(agent),
        )

    # -- step 1: the card, revalidated with HTTP caching -------------------------------------------

    @one_call
    async def card(self, url: str) -> dict[str, Any]:
        """The agent's card as JSON (fetched, or revalidated with ``If-None-Match``)."""
        return (await self._card(url)).card

    async def _card(self, url: str) -> CachedCard:
        """The card: once per public call, from memory, the disk cache or the agent.

        A card kept in memory or on disk and still fresh by its
        ``Cache-Control`` costs no request; otherwise the kept ETag revalidates
        it.  A card used without asking the agent may be older than the
        agent's documents: :meth:`call` fetches it again on ``interface_mismatch``.
        """
        agent = url.rstrip("/")
        cached = self._cards.get(agent)
        if cached is not None and agent in current().seen:
            return cached  # looked at once in this call already
        if cached is not None and cached.fresh:
            current().unasked.add(agent)
            return self._keep_card(agent, cached, 0)
        stored = self.disk.card(agent) if self.disk is not None and cached is None else None
        if stored is not None:
            try:
                cached = parse_card(agent, stored.body, stored.etag, self.card_keys)
            except SkillCallError:
                cached, stored = None, None  # kept under other keys, or damaged: fetch it
        if stored is not None and cached is not None and stored.fresh:
            cached.fresh_for(stored.fresh_until - time.time())
            current().unasked.add(agent)
            return self._keep_card(agent, cached, len(stored.body))
        headers = {"If-None-Match": cached.etag} if cached and cached.etag else {}
        hint = functools.partial(
            refused_hint, url=agent, presents_certificate=self._presents_certificate(agent)
        )
        async with _transport(f"fetching the Agent Card of {agent}", hint):
            answer = await self._retrying(
                lambda: read_card(self._http, agent, headers, self.bounds.max_card_bytes)
            )
        if answer.status == 304 and cached is not None:
            if self.disk is not None and stored is not None:
                self.disk.refresh_card(agent, stored, answer.fresh_for)
            cached.fresh_for(answer.fresh_for if answer.store else None)
            return self._keep_card(agent, cached, len(stored.body) if stored else 0)
        if answer.status != 200:
            raise SkillCallError(
                ClientCode.TRANSPORT_ERROR,
                f"the Agent Card of {agent} answered HTTP {answer.status}",
            )
        entry = parse_card(agent, answer.body, answer.etag, self.card_keys)
        entry.fresh_for(answer.fresh_for if answer.store else None)
        if self.disk is not None and answer.store:
            self.disk.put_card(agent, answer.body, answer.etag, answer.fresh_for)
        return self._keep_card(agent, entry, len(answer.body))

    def _keep_card(self, agent: str, entry: CachedCard, size: int) -> CachedCard:
        if self._cards.get(agent) is not entry:
            self._cards.put(agent, entry, size)
        current().seen.add(agent)
        return entry

    @one_call
    async def advertisement(self, url: str) -> Advertisement:
        """Steps 1-2 up to selection: the card's checked advertisement."""
        entry = await self._card(url)
        if entry.advertisement is None:
            read_advertisement(entry.card)  # raises the precise error
        assert entry.advertisement is not None
        return entry.advertisement

    # -- steps 2-6: describe and verify ----------------------------------------------------

    @one_call
    async def describe(
        self, url: str, skill_id: str, *, apply_trust: bool = True
    ) -> VerifiedInterface:
        """The verified Skill Interface Document of ``skill_id`` (cached when possible).

        ``apply_trust=False`` returns a verified document even when the schema
        trust policy refuses it: for diagnostics (``skillrack check``) that
        report the refusal beside the other findings, never for a call.
        """
        agent = url.rstrip("/")
        binding = (await self.advertisement(agent)).select(skill_id)
        key = CacheKey(
            agent, skill_id, binding.skill_version, INTERFACE_VERSION, binding.interface_digest
        )
        while (running := self._describing.get(key)) is not None:
            await running.wait()  # another call is fetching it: its document, or our turn
        cached = self.cache.get(key) or self._from_disk(key)
        if cached is not None:
            return self._trusted(agent, cached) if apply_trust else cached
        # The card no longer advertises what may be cached for this skill: drop it.
        self.cache.invalidate(agent, skill_id)
        counted = self.describe_calls.get((agent, skill_id), 0) + 1
        self.describe_calls.put((agent, skill_id), counted, len(agent) + len(skill_id))
        self._describing[key] = done = asyncio.Event()
        try:
            task = await self._send(
                agent, {"skill": DESCRIBE_SKILL, "arguments": {"skill_id": skill_id}}, "sync"
            )
            document, returned_digest = describe_result(task)
            alike = self.cache.alike(key, self.limits)
            verified = verify_described(document, returned_digest, key, self.limits, alike)
            self.cache.put(key, verified, self.limits)  # before the waiters wake
        finally:
            del self._describing[key]
            done.set()
        logger.info(
            "verified %s %s at %s: interface %s, digest %s",
            skill_id,
            binding.skill_version,
            agent,
            INTERFACE_VERSION,
            verified.interface_digest,
        )
        if self.disk is not None:
            self.disk.put_document(key, document)
        return self._trusted(agent, verified) if apply_trust else verified

    def _from_disk(self, key: CacheKey) -> VerifiedInterface | None:
        """A document kept on disk under ``key``, verified again in full; None if none or bad."""
        document = self.disk.document(key) if self.disk is not None else None
        if document is None:
            return None
        try:
            alike = self.cache.alike(key, self.limits)
            verified = verify_described(document, key.interface_digest, key, self.limits, alike)
        except SkillCallError:
            return None
        self.cache.put(key, verified, self.limits)
        return verified

    def _trusted(self, agent: str, interface: VerifiedInterface) -> VerifiedInterface:
        """``interface`` when the schema trust policy accepts it (:func:`refuse_untrusted`)."""
        if self.trust is not None:
            refuse_untrusted(self.trust, agent, interface)
        return interface

    # -- steps 7-10: invoke and validate --------------------------------------------------

    async def call(
        self,
        url: str,
        skill_id: str,
        arguments: Any,
        *,
        mode: Mode = "sync",
        push: PushTarget | None = None,
    ) -> SkillResult:
        """Invoke ``skill_id`` with ``arguments``; return the validated result and records.

        ``push`` asks the agent to POST the task's updates to a webhook as well
        (A2A push notifications; the agent decides whether it may connect there).

        A card taken from a cache (memory or disk) without asking the agent,
        while its ``Cache-Control`` says it is fresh, may be older than the
        agent's documents: when the agent rejects the call with
        ``interface_mismatch``, the card is fetched again and the call made
        once more (the rejected task did nothing).
        """
        # The call's scope entered here rather than by @one_call, and both tries in this
        # frame: a hundred calls in flight each hold two coroutines fewer for the collector.
        async with self._call_scope(url):  # joins the running call, if any (call_scope)
            agent = url.rstrip("/")
            again = False
            while True:
                try:
                    await self._check_security(agent, skill_id)
                    interface = await self.describe(agent, skill_id)
                    check_arguments(interface, arguments)
                    request = {
                        "skill": skill_id,
                        "skill_version": interface.skill_version,
                        "interface_digest": interface.interface_digest,
                        "arguments": arguments,
                    }
                    task = await self._send(agent, request, mode, push=push)
                    return outcome(task, skill_id, interface)
                except SkillCallError as exc:
                    if again or not (exc.remote and exc.code == ErrorCode.INTERFACE_MISMATCH):
                        raise
                    state = current()
                    if agent not in state.unasked:
                        raise
                    if self.disk is not None:
                        self.disk.forget_card(agent)
                    self._cards.pop(agent)
                    state.seen.discard(agent)
                    state.unasked.discard(agent)
                    state.checked = {pair for pair in state.checked if pair[0] != agent}
                    again = True  # the card fetched again, the call made once more

    @one_call
    async def resume(
        self, url: str, skill_id: str, task_id: str, *, mode: Mode = "sync"
    ) -> SkillResult:
        """Continue an existing task of ``skill_id``, and judge it like :meth:`call`'s.

        The task is looked at first (``GetTask``): one waiting for an
        operator's approval (:attr:`SkillResult.approval`) is sent a follow-up
        Message, the agent's cue to look at the decision again (it runs the
        call once granted, rejects it once denied, or parks it again); one
        still working is polled (streamed or synchronous calls too) until it
        ends or waits; an ended one is judged as it is.  A task waiting for the
        handler's own input is returned as it is: answer it with
        :meth:`respond`.
        """
        agent = url.rstrip("/")
        await self._check_security(agent, skill_id)
        interface = await self.describe(agent, skill_id)
        task = await self._get_task(agent, task_id)
        current = outcome(task, skill_id, interface)
        waiting = current.approval
        if waiting is None:
            return current
        nudge = {APPROVAL_KEY: {"approval_id": waiting.get("approval_id"), "check": True}}
        task = await self._send(agent, nudge, mode, task_id=task_id)
        return outcome(task, skill_id, interface)

    async def wait_for_approval(
        self,
        url: str,
        skill_id: str,
        result: SkillResult,
        *,
        interval: float = 1.0,
        max_interval: float = 5.0,
        mode: Mode = "sync",
    ) -> SkillResult:
        """``result`` once no approval parks its task any more: :meth:`resume` until decided.

        Every look sends the task a follow-up Message (the agent learns of a
        decision only when asked), so the looks slow down from ``interval`` to
        ``max_interval`` seconds.  Unbounded in time: each look is bounded by
        ``timeout``, the wait by whoever decides (or by the caller cancelling
        it; the task then goes on waiting, and :meth:`resume` continues it).
        A denial raises :class:`SkillCallError` with ``authorization_failed``.
        """
        delay = interval
        while result.approval is not None:
            await asyncio.sleep(delay)
            delay = min(max_interval, delay * 1.5)
            result = await self.resume(url, skill_id, result.task_id, mode=mode)
        return result

    @one_call
    async def respond(
        self, url: str, skill_id: str, task_id: str, answer: Any, *, mode: Mode = "sync"
    ) -> SkillResult:
        """Answer a task waiting in ``TASK_STATE_INPUT_REQUIRED`` (not validated, per the draft)."""
        agent = url.rstrip("/")
        await self._check_security(agent, skill_id)
        interface = await self.describe(agent, skill_id)
        task = await self._send(agent, answer, mode, task_id=task_id)
        return outcome(task, skill_id, interface)

    async def _check_security(self, agent: str, skill_id: str | None) -> None:
        """Refuse locally, from the card alone, a call whose requirements nothing here meets.

        Run before ``describe_skill`` too: a call that cannot succeed sends nothing.
        """
        checked = current().checked
        if (agent, skill_id) in checked:
            return  # this call already checked it, against the same card
        entry = await self._card(agent)
        check_card_security(entry.security, agent, skill_id, await self._presented(agent))
        checked.add((agent, skill_id))

    @one_call
    async def send_request(self, url: str, data: Any, *, mode: Mode = "sync") -> Task:
        """Send one raw request object and return the remote Task, unjudged.

        For conformance checks that must see how an agent answers a request
        the normal procedure would never send (a stale digest, invalid input).
        """
        return await self._send(url.rstrip("/"), data, mode)

    @one_call
    async def a2a(
        self,
        url: str,
        what: str,
        operation: Callable[[Any, ClientCallContext], Awaitable[_T]],
    ) -> _T:
        """Run an a2a-sdk client method (push configs, :mod:`skillrack.client.push_configs`) under
        the call's rules: origins, bounds, timeout, error codes (``what`` names it in errors)."""
        agent = url.rstrip("/")
        client = await self._sdk_client(agent, streaming=False)
        async with _transport(f"{what} at {agent}"):
            return await operation(client, ClientCallContext(timeout=self.timeout))

    # -- the A2A exchange ------------------------------------------------------------------------

    async def _sdk_client(self, agent: str, *, streaming: bool) -> Any:
        """a2a-sdk's client for ``agent``, on the interfaces the origin rule lets it reach."""
        entry = await self._card(agent)
        bindings = self._bindings()
        if GRPC not in bindings:  # kept: made once per agent and card
            key = (agent, streaming, current_policy())
            kept = self._sdk_clients.find(key, entry)
            if kept is None:
                config = self._sdk_config(streaming, bindings)
                kept = LeanClientFactory(config).create(self._reachable(agent, entry.proto))
                self._sdk_clients.keep(key, entry, kept)
            return kept
        reachable = self._reachable(agent, entry.proto)  # gRPC: a channel per exchange
        named = Origin.of(agent)
        source = self._token_source(named)
        made = self._sdk_config(streaming, bindings)
        made.grpc_channel_factory = channel_factory(
            secure=named.scheme == "https",
            headers=self._headers,
            tls=self.tls.get(named) or self.tls.get(None),
            max_message_bytes=self.bounds.max_response_bytes,
            bearer=source,
            bearer_to=functools.partial(may_receive, named=named, source=source, agent=agent),
        )
        return ClientFactory(made).create(reachable)

    def _sdk_config(self, streaming: bool, bindings: list[str]) -> ClientConfig:
        return ClientConfig(
            streaming=streaming, httpx_client=self._http, supported_protocol_bindings=bindings
        )

    def _reachable(self, agent: str, card: AgentCard) -> AgentCard:
        """The card with only the interfaces this call may reach (:mod:`~.reachable`)."""
        return reachable_card(agent, card, self._bindings(), self._token_source)

    def _bindings(self) -> list[str]:
        """The A2A bindings this client may use: the one asked for, else JSON-RPC and HTTP+JSON."""
        return [self.binding] if self.binding else ["JSONRPC", "HTTP+JSON"]

    def _context(self) -> ClientCallContext:
        """A call's context: the extension activated (a copy of the parameters built once)."""
        return ClientCallContext(service_parameters=dict(_ACTIVATED), timeout=self.timeout)

    async def _get_task(self, agent: str, task_id: str) -> Task:
        """The task once it ended or waits (polled while it is worked on)."""
        client = await self._sdk_client(agent, streaming=False)
        async with _transport(f"looking up task {task_id} at {agent}"):
            return await self._poll(client, task_id, self._context())

    def _send(
        self,
        agent: str,
        data: Any,
        mode: Mode,
        task_id: str = "",
        push: PushTarget | None = None,
    ) -> Coroutine[Any, Any, Task]:
        """Send ``data`` as a request object; its Task (a reply Message is ``output_invalid``).

        :meth:`_exchange`'s own coroutine, no frame of this one: every call in flight
        holds each coroutine of its chain until it ends.
        """
        skill_id = data.get("skill") if isinstance(data, dict) else None
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[data_part(data)],
            extensions=[EXTENSION_URI],
            task_id=task_id,
        )
        answer = self._exchange(agent, message, mode, self._context(), skill_id, push, True)
        return cast("Coroutine[Any, Any, Task]", answer)  # task_only: never a Message

    @one_call
    async def send_message(
        self,
        url: str,
        parts: Sequence[PartLike],
        *,
        skill: str | None = None,
        task_id: str = "",
        mode: Mode = "sync",
        push: PushTarget | None = None,
    ) -> dict[str, Any]:
        """Send a plain A2A Message (no request object) and return the agent's answer as JSON.

        For base-A2A skills (a text help desk, say), which have no interface to
        verify: ``parts`` are ``str``, ``TextPart``, ``FilePart`` or
        ``DataPart``; ``skill`` is named in the Message's metadata (explicit
        routing); ``task_id`` continues a task (answering its question).  The
        answer is ``{"message": {...}}`` (a direct reply) or ``{"task": {...}}``
        in A2A's JSON form, the schema-interface extension not activated.  Only
        the transport's guarantees apply (origins, bounds, timeout): nothing
        is validated, as the draft says no schema may be inferred for it.
        """
        agent = url.rstrip("/")
        message = user_message(parts, message_id=str(uuid.uuid4()), task_id=task_id, skill=skill)
        context = ClientCallContext(timeout=self.timeout)
        answer = await self._exchange(agent, message, mode, context, skill, push)
        key = "message" if isinstance(answer, Message) else "task"
        return {key: json_format.MessageToDict(answer)}

    async def _exchange(
        self,
        agent: str,
        message: Message,
        mode: Mode,
        context: ClientCallContext,
        skill_id: str | None = None,
        push: PushTarget | None = None,
        task_only: bool = False,
    ) -> Task | Message:
        """Send ``message`` (for ``skill_id``); its Task (polled unless ``sync``) or a reply.

        ``task_only``: a reply Message is ``output_invalid`` (a request object's answer).
        """
        client = await self._sdk_client(agent, streaming=mode == "stream")
        await self._check_security(agent, skill_id if isinstance(skill_id, str) else None)
        request = SendMessageRequest(
            message=message,
            configuration=SendMessageConfiguration(return_immediately=mode == "poll"),
        )
        if push is not None:
            request.configuration.task_push_notification_config.CopyFrom(push.config())

        # A refusal before any event is safe to send again (429, 503, their gRPC statuses).
        try:
            if self.retries > 0:
                attempt = functools.partial(self._attempt, agent, client, request, context)
                answer = await self._retrying(attempt)
            else:  # nothing is sent again (retrying's own path): no partial, no retrying frame
                answer = await self._attempt(agent, client, request, context)
        except SkillCallError as exc:  # a refusal that named no scheme: the card's header
            if exc.code != ErrorCode.AUTHORIZATION_FAILED:
                raise
            raise with_card_hint(exc, (await self._card(agent)).security) from None
        if isinstance(answer, Message):
            if task_only:
                raise SkillCallError.local(
                    ErrorCode.OUTPUT_INVALID, "the agent answered with a Message, not a Task"
                )
            return answer
        if mode != "sync" and answer.status.state not in TERMINAL | INTERRUPTED:
            async with _transport(f"calling {agent}"):
                answer = await self._poll(client, answer.id, context)
        return answer

    async def _attempt(
        self, agent: str, client: Any, request: SendMessageRequest, context: ClientCallContext
    ) -> Task | Message:
        """One attempt of :meth:`_exchange`: the events of the answer, up to the Task or a reply.

        A method given its arguments (``functools.partial``), not closures: a
        hundred calls in flight then hold no cells and functions of their own.
        """
        assembler = TaskAssembler()
        try:
            async with _transport(f"calling {agent}"):
                events = client.send_message(request, context=context)
                try:
                    count = 0
                    async for event in events:
                        count += 1
                        if count > self.bounds.max_stream_events:
                            raise exceeded(
                                f"the event stream of {agent}",
                                self.bounds.max_stream_events,
                                "events",
                            )
                        if event.HasField("message"):
                            if assembler.task is not None:
                                raise SkillCallError.local(
                                    ErrorCode.OUTPUT_INVALID,
                                    "the agent sent a Message in the middle of a Task's events",
                                )
                            reply: Message = event.message
                            return reply
                        assembler.apply(event)
                finally:  # close the stream now, not when the generator is collected
                    close = getattr(events, "aclose", None)
                    if close is not None:
                        await close()
        except AgentBusy as exc:
            if assembler.task is None:
                raise
            # Refused once the answer began (a gRPC stream): maybe acted on, never resent.
            message = exc.message.removesuffix(ADVICE)
            raise SkillCallError.local(ErrorCode.RESOURCE_LIMIT_EXCEEDED, message + BEGUN) from None
        if assembler.task is None:
            raise SkillCallError(ClientCode.PROTOCOL_ERROR, "the agent sent no Task")
        return assembler.task

    async def _poll(self, client: Any, task_id: str, context: ClientCallContext) -> Task:
        """Ask for the task until it ends or waits; the call's ``timeout`` stops the loop."""

        async def look() -> Task:
            async with _transport(f"looking up task {task_id}"):
                found: Task = await client.get_task(GetTaskRequest(id=task_id), context=context)
                return found

        while True:
            task = await self._retrying(look)
            if task.status.state in TERMINAL | INTERRUPTED:
                return task
            await asyncio.sleep(self.poll_interval)
