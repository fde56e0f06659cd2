"""Composition of consecutive skills, and the record of every delegation hop.

Direct composition (the draft's "Composition of consecutive skills") is
decided without understanding the domain: the upstream output's Schema
Reference and the downstream input's must be the same in ``schema_uri``,
``version``, ``dialect`` and ``digest``, and both inline schemas were already
verified against their digests when the two documents were retrieved.  The
transferred instance is then validated against the downstream input schema
before anything is sent.  A domain-aware check, keyed by schema URI as the
draft suggests, may still find the instance unfit (too old, wrong window) and
reject the delegation with ``constraint_rejected``.

Every delegation creates a new downstream task; the upstream task id is never
reused, and each hop is recorded (log record and :class:`HopLog`).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from skillrack.errors import ClientCode, ErrorCode, SkillCallError
from skillrack.interface.document import VerifiedInterface
from skillrack.interface.json_value import JsonValue
from skillrack.protocol.clock import utc_now_millis

if TYPE_CHECKING:
    from skillrack.client.outcome import SkillResult
    from skillrack.client.skill_client import Mode, SkillClient

logger = logging.getLogger("skillrack.hops")

#: ``check(instance) -> None`` when fit, else a reason string (constraint_rejected).
DomainCheck = Callable[[Any], "str | None"]


def check_eligibility(upstream: VerifiedInterface, downstream: VerifiedInterface) -> None:
    """Raise ``composition_ineligible`` unless output and input references match exactly."""
    output = upstream.references["output"]
    given = downstream.references["input"]
    if not output.same_as(given):
        raise SkillCallError(
            ClientCode.COMPOSITION_INELIGIBLE,
            f"{upstream.skill_id!r} output {output.identity()} and {downstream.skill_id!r} "
            f"input {given.identity()} are different Schema References: direct composition "
            "is not allowed (transform the payload out of band first)",
        )


def check_transfer(
    downstream: VerifiedInterface,
    instance: Any,
    domain_checks: Mapping[str, DomainCheck] | None = None,
) -> None:
    """Validate the transferred instance, then apply any domain-aware check for its schema."""
    details = downstream.input.validate(instance)
    if details:
        raise SkillCallError.local(
            ErrorCode.INPUT_INVALID,
            f"the transferred instance does not validate against {downstream.skill_id!r}'s "
            "input_schema",
            details,
        )
    check = (domain_checks or {}).get(downstream.references["input"].schema_uri)
    reason = check(instance) if check is not None else None
    if reason:
        raise SkillCallError.local(ErrorCode.CONSTRAINT_REJECTED, reason)


@dataclass(frozen=True)
class Hop:
    """One delegation: both agents, both task ids (never equal), what was called, how it ended."""

    upstream_agent: str
    upstream_task_id: str
    downstream_agent: str
    downstream_task_id: str | None
    skill_id: str
    skill_version: str
    interface_digest: str
    started_at: str
    ended_at: str
    terminal_state: str
    #: Whose upstream task this was (``tenant:...`` or ``identity:...``): the serving
    #: agent shows a tenant only its own hops.  Not part of the hop's JSON.
    owner: str = ""

    def to_json(self) -> dict[str, Any]:
        shown = asdict(self)
        del shown["owner"]
        return shown


class HopLog:
    """The most recent hops, for the diagnostics view; every hop is also logged."""

    def __init__(self, capacity: int = 1000) -> None:
        self._hops: deque[Hop] = deque(maxlen=capacity)

    def record(self, hop: Hop) -> None:
        self._hops.append(hop)
        if logger.isEnabledFor(logging.INFO):  # the hop's JSON costs 14 us: not built unlogged
            logger.info("delegation hop %s", hop.to_json())

    def recent(self) -> list[Hop]:
        return list(self._hops)


async def delegate(
    client: SkillClient,
    hops: HopLog,
    *,
    upstream_agent: str,
    upstream_task_id: str,
    downstream_agent: str,
    skill_id: str,
    arguments: JsonValue,
    mode: Mode = "sync",
    owner: str = "",
) -> SkillResult:
    """Call a skill of another agent as a new downstream task, and record the hop.

    The interface (for the hop) and the call are one call of the client: one
    deadline, one look at the card, its security checked once.  The hop is
    recorded once the call's scope has ended, so a deadline that ran out
    mid-call is recorded as the ``resource_limit_exceeded`` it became, not as
    an interrupted send.  Nothing is recorded when the interface could not be
    had (nothing was sent).
    """
    started = utc_now_millis()
    interface: VerifiedInterface | None = None
    state = "not_sent"
    task_id: str | None = None
    try:
        async with client._call_scope(downstream_agent):
            interface = await client.describe(downstream_agent, skill_id)
            result = await client.call(downstream_agent, skill_id, arguments, mode=mode)
        state, task_id = result.state, result.task_id
        return result
    except SkillCallError as exc:
        state, task_id = exc.state or f"local:{exc.code}", exc.task_id
        raise
    finally:
        if interface is not None:
            if task_id == upstream_task_id:  # pragma: no cover - agents issue their own ids
                logger.warning("downstream agent reused the upstream task id %s", task_id)
            hops.record(
                Hop(
                    upstream_agent=upstream_agent,
                    upstream_task_id=upstream_task_id,
                    downstream_agent=downstream_agent,
                    downstream_task_id=task_id,
                    skill_id=skill_id,
                    skill_version=interface.skill_version,
                    interface_digest=interface.interface_digest,
                    started_at=started,
                    ended_at=utc_now_millis(),
                    terminal_state=state,
                    owner=owner,
                )
            )


async def compose(
    client: SkillClient,
    hops: HopLog,
    *,
    upstream_agent: str,
    upstream_skill: str,
    upstream_task_id: str,
    instance: JsonValue,
    downstream_agent: str,
    downstream_skill: str,
    domain_checks: Mapping[str, DomainCheck] | None = None,
    mode: Mode = "sync",
    delegating_agent: str | None = None,
    owner: str = "",
) -> SkillResult:
    """Feed an upstream skill's output into a downstream skill, if and only if eligible.

    The hop is recorded from ``delegating_agent`` (the agent whose task
    ``upstream_task_id`` is) to the downstream agent; a client composing on
    its own behalf leaves it out, and the upstream skill's agent stands in.
    """
    upstream = await client.describe(upstream_agent, upstream_skill)
    downstream = await client.describe(downstream_agent, downstream_skill)
    check_eligibility(upstream, downstream)
    check_transfer(downstream, instance, domain_checks)
    return await delegate(
        client,
        hops,
        upstream_agent=delegating_agent or upstream_agent,
        upstream_task_id=upstream_task_id,
        downstream_agent=downstream_agent,
        skill_id=downstream_skill,
        arguments=instance,
        mode=mode,
        owner=owner,
    )


class Peers:
    """The agents a skill may delegate to, by the names the operator configured.

    Handlers name a peer (``context.delegate("observer", ...)``) instead of
    passing a URL, so that a caller can never make this agent contact an
    address the operator did not list (server-side request forgery).
    What the peer's card then names is checked twice by the client
    ``client()`` makes: the origin rule (:mod:`skillrack.client.origin`) and,
    since ``serve/server.py`` gives it an
    :class:`~skillrack.client.address_guard.AddressGuard` as its transport, the
    addresses it may connect to.

    ``delegate`` and ``compose`` implement the handler context's delegation
    protocol (``Delegation`` in :mod:`skillrack.serve.execution.skill_context`,
    the one statement of their signature), against which mypy checks this class
    where ``serve/server.py`` hands it to the executor.
    """

    def __init__(
        self,
        urls: Mapping[str, str],
        self_url: str,
        client: Callable[[], SkillClient],
        hops: HopLog | None = None,
    ) -> None:
        self.urls = {name: url.rstrip("/") for name, url in urls.items()}
        self.self_url = self_url
        self.hops = hops or HopLog()
        self._client_factory = client
        self._client: SkillClient | None = None

    def url(self, peer: str) -> str:
        try:
            return self.urls[peer]
        except KeyError:
            raise SkillCallError(
                ClientCode.UNKNOWN_PEER,
                f"no peer agent named {peer!r} is configured ([peers] table)",
            ) from None

    @property
    def client(self) -> SkillClient:
        if self._client is None:
            self._client = self._client_factory()
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def delegate(
        self,
        upstream_task_id: str,
        peer: str,
        skill_id: str,
        arguments: JsonValue,
        mode: Mode,
        owner: str = "",
    ) -> SkillResult:
        return await delegate(
            self.client,
            self.hops,
            upstream_agent=self.self_url,
            upstream_task_id=upstream_task_id,
            downstream_agent=self.url(peer),
            skill_id=skill_id,
            arguments=arguments,
            mode=mode,
            owner=owner,
        )

    async def compose(
        self,
        upstream_task_id: str,
        upstream: tuple[str, str],
        instance: JsonValue,
        downstream: tuple[str, str],
        domain_checks: Mapping[str, DomainCheck] | None = None,
        owner: str = "",
    ) -> SkillResult:
        return await compose(
            self.client,
            self.hops,
            upstream_agent=self.url(upstream[0]),
            upstream_skill=upstream[1],
            upstream_task_id=upstream_task_id,
            instance=instance,
            downstream_agent=self.url(downstream[0]),
            downstream_skill=downstream[1],
            domain_checks=domain_checks,
            delegating_agent=self.self_url,
            owner=owner,
        )
