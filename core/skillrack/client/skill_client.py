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

Everything found locally raises :class:`~skillrack.errors.SkillCallError`
with ``remote=False`` and without any task state; remote failures carry the
remote task's error object, state and id.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

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
    TaskState,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH as CARD_PATH
from a2a.utils.errors import A2AError
from google.protobuf import json_format

from skillrack.client.advertisement import Advertisement, read_advertisement
from skillrack.client.cache import CacheKey, InterfaceCache
from skillrack.client.outcome import SkillResult, TaskAssembler, outcome
from skillrack.errors import ClientCode, ErrorCode, SkillCallError
from skillrack.interface.document import (
    DESCRIBE_SKILL,
    InterfaceError,
    VerifiedInterface,
    verify_document,
)
from skillrack.interface.limits import DEFAULT_LIMITS, Limits
from skillrack.interface.versions import INTERFACE_VERSION
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.protocol.signing import CardKeys, CardSignatureError, verify_card_signature
from skillrack.protocol.states import INTERRUPTED, TERMINAL
from skillrack.protocol.wire import UnsafeNumber, check_numbers, data_part, from_value

logger = logging.getLogger(__name__)

Mode = Literal["sync", "stream", "poll"]


@dataclass
class _CachedCard:
    etag: str | None
    card: dict[str, Any]
    advertisement: Advertisement | None
    proto: AgentCard


class SkillClient:
    """Calls schema-governed skills of any agent that implements the draft.

    ``headers`` (for example ``{"Authorization": "Bearer ..."}`` or an API key
    header) are sent on every request to the agent.  ``card_keys`` pins the
    public keys (a JWKS dict or the path of a JWKS file) the agent's card must
    be signed by.  Use as an async context manager, or call :meth:`aclose`.
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
    ) -> None:
        self.limits = limits
        self.card_keys = CardKeys.load(card_keys) if card_keys is not None else None
        self.cache = cache or InterfaceCache(limits.max_cache_entries)
        self.binding = binding
        self.poll_interval = poll_interval
        self.timeout = timeout
        # ``transport``: e.g. ``httpx.ASGITransport(app)`` to call an in-process agent (tests).
        self._http = httpx.AsyncClient(
            timeout=timeout, headers=dict(headers or {}), transport=transport
        )
        self._cards: dict[str, _CachedCard] = {}
        #: Count of describe_skill exchanges sent, per (agent, skill): diagnostics.
        self.describe_calls: dict[tuple[str, str], int] = {}

    async def __aenter__(self) -> SkillClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- step 1: the card, revalidated with HTTP caching -------------------------------------------

    async def card(self, url: str) -> dict[str, Any]:
        """The agent's card as JSON (fetched, or revalidated with ``If-None-Match``)."""
        return (await self._card(url)).card

    async def _card(self, url: str) -> _CachedCard:
        agent = url.rstrip("/")
        cached = self._cards.get(agent)
        headers = {"If-None-Match": cached.etag} if cached and cached.etag else {}
        async with _transport(f"fetching the Agent Card of {agent}"):
            response = await self._http.get(agent + CARD_PATH, headers=headers)
        if response.status_code == 304 and cached is not None:
            return cached
        if response.status_code != 200:
            raise SkillCallError(
                ClientCode.TRANSPORT_ERROR,
                f"the Agent Card of {agent} answered HTTP {response.status_code}",
            )
        if len(response.content) > self.limits.max_document_bytes:
            raise SkillCallError.local(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED, "the Agent Card is too large"
            )
        try:
            card = response.json()
            proto = json_format.ParseDict(card, AgentCard(), ignore_unknown_fields=True)
        except (ValueError, json_format.ParseError) as exc:
            raise SkillCallError(
                ClientCode.PROTOCOL_ERROR,
                f"the Agent Card of {agent} is not a valid A2A card: {exc}",
            ) from None
        if self.card_keys is not None:
            try:
                verify_card_signature(proto, self.card_keys)
            except CardSignatureError as exc:
                raise SkillCallError.local(
                    ClientCode.CARD_SIGNATURE_INVALID,
                    f"the Agent Card of {agent} is refused: {exc}",
                ) from None
        try:
            advertisement: Advertisement | None = read_advertisement(card)
        except SkillCallError:
            advertisement = None
        entry = _CachedCard(response.headers.get("etag"), card, advertisement, proto)
        self._cards[agent] = entry
        return entry

    async def advertisement(self, url: str) -> Advertisement:
        """Steps 1-2 up to selection: the card's checked advertisement."""
        entry = await self._card(url)
        if entry.advertisement is None:
            read_advertisement(entry.card)  # raises the precise error
        assert entry.advertisement is not None
        return entry.advertisement

    # -- steps 2-6: describe and verify ----------------------------------------------------

    async def describe(self, url: str, skill_id: str) -> VerifiedInterface:
        """The verified Skill Interface Document of ``skill_id`` (cached when possible)."""
        agent = url.rstrip("/")
        binding = (await self.advertisement(agent)).select(skill_id)
        key = CacheKey(
            agent, skill_id, binding.skill_version, INTERFACE_VERSION, binding.interface_digest
        )
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        # The card no longer advertises what may be cached for this skill: drop it.
        self.cache.invalidate(agent, skill_id)
        self.describe_calls[(agent, skill_id)] = self.describe_calls.get((agent, skill_id), 0) + 1
        task = await self._send(
            agent, {"skill": DESCRIBE_SKILL, "arguments": {"skill_id": skill_id}}, "sync"
        )
        document, returned_digest = self._describe_result(task)
        if returned_digest != binding.interface_digest:
            raise SkillCallError.local(
                ErrorCode.INTERFACE_INVALID,
                f"describe_skill returned digest "
                f"{returned_digest} but the card advertises {binding.interface_digest}",
            )
        try:
            verified = verify_document(document, self.limits)
        except InterfaceError as exc:
            raise SkillCallError.local(
                exc.code,
                f"the document of {skill_id!r} is not acceptable "
                f"({exc.rule} at {exc.pointer or '/'}): {exc.message}",
            ) from None
        if verified.interface_digest != binding.interface_digest:
            raise SkillCallError.local(
                ErrorCode.INTERFACE_INVALID,
                f"the document's computed digest "
                f"{verified.interface_digest} differs from the advertised "
                f"{binding.interface_digest}",
            )
        if verified.skill_id != skill_id or verified.skill_version != binding.skill_version:
            raise SkillCallError.local(
                ErrorCode.INTERFACE_INVALID,
                f"describe_skill returned the document of "
                f"{verified.skill_id!r} {verified.skill_version}, not of {skill_id!r} "
                f"{binding.skill_version}",
            )
        logger.info(
            "verified %s %s at %s: interface %s, digest %s",
            skill_id,
            binding.skill_version,
            agent,
            INTERFACE_VERSION,
            verified.interface_digest,
        )
        self.cache.put(key, verified)
        return verified

    def _describe_result(self, task: Task) -> tuple[Any, str]:
        completed = task.status.state == TaskState.TASK_STATE_COMPLETED
        if not completed and task.status.state in TERMINAL:
            outcome(task, DESCRIBE_SKILL, None)  # raises the remote task's error
        artifacts = list(task.artifacts)
        if not completed or len(artifacts) != 1 or artifacts[0].name != DESCRIBE_SKILL:
            raise SkillCallError.local(
                ErrorCode.INTERFACE_INVALID,
                "describe_skill must complete with exactly one Artifact named describe_skill",
            )
        parts = artifacts[0].parts
        if len(parts) != 1 or not parts[0].HasField("data"):
            raise SkillCallError.local(
                ErrorCode.INTERFACE_INVALID,
                "the describe_skill Artifact must hold exactly one Data Part",
            )
        value = from_value(parts[0].data)
        result = value.get("result") if isinstance(value, dict) else None
        if (
            not isinstance(value, dict)
            or value.get("skill") != DESCRIBE_SKILL
            or not isinstance(result, dict)
            or set(result) != {"interface_digest", "interface"}
        ):
            raise SkillCallError.local(
                ErrorCode.INTERFACE_INVALID,
                "the describe_skill result is not "
                '{"skill": "describe_skill", "result": {"interface_digest", "interface"}}',
            )
        return result["interface"], result["interface_digest"]

    # -- steps 7-10: invoke and validate --------------------------------------------------

    async def call(
        self, url: str, skill_id: str, arguments: Any, *, mode: Mode = "sync"
    ) -> SkillResult:
        """Invoke ``skill_id`` with ``arguments``; return the validated result and records."""
        agent = url.rstrip("/")
        interface = await self.describe(agent, skill_id)
        self._check_arguments(interface, arguments)
        request = {
            "skill": skill_id,
            "skill_version": interface.skill_version,
            "interface_digest": interface.interface_digest,
            "arguments": arguments,
        }
        task = await self._send(agent, request, mode)
        return outcome(task, skill_id, interface)

    async def respond(
        self, url: str, skill_id: str, task_id: str, answer: Any, *, mode: Mode = "sync"
    ) -> SkillResult:
        """Answer a task waiting in ``TASK_STATE_INPUT_REQUIRED`` (not validated, per the draft)."""
        agent = url.rstrip("/")
        interface = await self.describe(agent, skill_id)
        task = await self._send(agent, answer, mode, task_id=task_id)
        return outcome(task, skill_id, interface)

    def _check_arguments(self, interface: VerifiedInterface, arguments: Any) -> None:
        try:
            check_numbers(arguments)
        except UnsafeNumber as exc:
            raise SkillCallError.local(
                ErrorCode.INPUT_INVALID,
                f"{exc}; A2A carries numbers as doubles, send such values as strings",
            ) from None
        try:
            details = interface.input.validate(arguments)
        except Exception as exc:  # resource limits
            code = getattr(exc, "code", ErrorCode.RESOURCE_LIMIT_EXCEEDED)
            raise SkillCallError.local(code, str(getattr(exc, "message", exc))) from None
        if details:
            raise SkillCallError.local(
                ErrorCode.INPUT_INVALID,
                "the arguments do not validate against the "
                f"input_schema of {interface.skill_id!r}; nothing was sent",
                details,
            )

    async def send_request(self, url: str, data: Any, *, mode: Mode = "sync") -> Task:
        """Send one raw request object and return the remote Task, unjudged.

        For conformance checks that must see how an agent answers a request
        the normal procedure would never send (a stale digest, invalid input).
        """
        return await self._send(url.rstrip("/"), data, mode)

    # -- the A2A exchange ------------------------------------------------------------------------

    async def _send(self, agent: str, data: Any, mode: Mode, task_id: str = "") -> Task:
        entry = await self._card(agent)
        config = ClientConfig(
            streaming=mode == "stream",
            httpx_client=self._http,
            supported_protocol_bindings=[self.binding]
            if self.binding
            else ["JSONRPC", "HTTP+JSON"],
        )
        client = ClientFactory(config).create(entry.proto)
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[data_part(data)],
            extensions=[EXTENSION_URI],
            task_id=task_id,
        )
        request = SendMessageRequest(
            message=message,
            configuration=SendMessageConfiguration(return_immediately=mode == "poll"),
        )
        context = ClientCallContext(
            service_parameters=ServiceParametersFactory.create(
                [with_a2a_extensions([EXTENSION_URI])]
            ),
            timeout=self.timeout,
        )
        assembler = TaskAssembler()
        async with _transport(f"calling {agent}"):
            async for event in client.send_message(request, context=context):
                if event.HasField("message"):
                    raise SkillCallError.local(
                        ErrorCode.OUTPUT_INVALID, "the agent answered with a Message, not a Task"
                    )
                assembler.apply(event)
            task = assembler.task
            if task is None:
                raise SkillCallError(ClientCode.PROTOCOL_ERROR, "the agent sent no Task")
            if mode != "sync" and task.status.state not in TERMINAL | INTERRUPTED:
                task = await self._poll(client, task.id, context)
        return task

    async def _poll(self, client: Any, task_id: str, context: ClientCallContext) -> Task:
        deadline = time.monotonic() + self.timeout
        while True:
            task: Task = await client.get_task(GetTaskRequest(id=task_id), context=context)
            if task.status.state in TERMINAL | INTERRUPTED:
                return task
            if time.monotonic() > deadline:
                raise SkillCallError(
                    ClientCode.TRANSPORT_ERROR,
                    f"task {task_id} did not finish in {self.timeout} s",
                    task_id=task_id,
                )
            await asyncio.sleep(self.poll_interval)


@asynccontextmanager
async def _transport(what: str) -> AsyncIterator[None]:
    """Turn transport and protocol failures into SkillCallError with the client's codes."""
    try:
        yield
    except SkillCallError:
        raise
    except A2AError as exc:
        name = type(exc).__name__
        if name.startswith("A2AClient") or name == "AgentCardResolutionError":
            raise SkillCallError(ClientCode.TRANSPORT_ERROR, f"{what}: {exc}") from None
        raise SkillCallError(ClientCode.PROTOCOL_ERROR, f"{what}: {name}: {exc}") from None
    except httpx.HTTPError as exc:
        raise SkillCallError(
            ClientCode.TRANSPORT_ERROR, f"{what}: {type(exc).__name__}: {exc}"
        ) from None
