"""A handler's calls of other agents, each one a CLIENT span when tracing is on.

The executor hands handlers a :class:`TracedDelegation` around the delegation
seam (:class:`~skillrack.serve.execution.skill_context.Delegation`), so that a
trace shows this agent's span as the parent of the peer's.
"""

from __future__ import annotations

from typing import Any

from skillrack.serve.execution.skill_context import Delegation
from skillrack.serve.observability.traces import delegating


class TracedDelegation:
    """The handler's delegation, each call a CLIENT span.

    ``skillrack.delegate`` (child of the handler's span, parent of the peer's
    server span, through the ``traceparent`` skillrack's client sends) with the
    configured peer's name, the skill called and how it ended.  What a peer
    answers is recorded only when it is one of the draft's states and codes
    (or the client's own), so a peer cannot write text of its choosing into
    this agent's trace.  With tracing off the call goes straight through.
    """

    def __init__(self, inner: Delegation) -> None:
        self.inner = inner

    async def delegate(
        self,
        upstream_task_id: str,
        peer: str,
        skill_id: str,
        arguments: Any,
        mode: Any,
        owner: str = "",
    ) -> Any:
        call = self.inner.delegate(upstream_task_id, peer, skill_id, arguments, mode, owner)
        return await delegating(peer, skill_id, call)

    async def compose(
        self,
        upstream_task_id: str,
        upstream: tuple[str, str],
        instance: Any,
        downstream: tuple[str, str],
        domain_checks: Any = None,
        owner: str = "",
    ) -> Any:
        call = self.inner.compose(
            upstream_task_id, upstream, instance, downstream, domain_checks, owner
        )
        return await delegating(downstream[0], downstream[1], call)
