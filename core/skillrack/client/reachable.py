"""The card a call's a2a-sdk client is given: only the interfaces this call may reach.

a2a-sdk chooses an interface from the card it is given; the card is written
by the remote side.  So the client gives it a copy holding only the
interfaces of a binding the client speaks that the origin rule
(:mod:`skillrack.client.origin`) lets this call reach, and, when the call
carries an OAuth token, that the token may reach
(:mod:`skillrack.client.token_reach`).  When every interface of a binding
the client speaks is refused, ``origin_refused`` names the first of them,
before any request goes there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection

from a2a.types import AgentCard

from skillrack.client.grpc_channel import judged_url
from skillrack.client.oauth import TokenSource
from skillrack.client.origin import Origin
from skillrack.client.token_reach import token_reachable
from skillrack.client.transport import current_policy


def reachable_card(
    agent: str,
    card: AgentCard,
    bindings: Collection[str],
    token_source: Callable[[Origin], TokenSource | None],
) -> AgentCard:
    """``card`` with only the interfaces of ``bindings`` this call may reach (module docstring)."""
    policy = current_policy()
    assert policy is not None, "an exchange runs inside a public call"
    usable = [i for i in card.supported_interfaces if i.protocol_binding in bindings]
    scheme = policy.named.scheme
    reachable = [i for i in usable if policy.refusal(judged_url(i, scheme), "") is None]
    if usable and not reachable:
        what = f"the Agent Card of {agent} names an interface on"
        policy.check(judged_url(usable[0], scheme), what)
    source = token_source(policy.named)  # a token goes to gRPC only where safe
    judge = functools.partial(judged_url, named_scheme=scheme)
    reachable = token_reachable(reachable, judge, policy.named, source, agent)
    trimmed = AgentCard()
    trimmed.CopyFrom(card)
    del trimmed.supported_interfaces[:]
    trimmed.supported_interfaces.extend(reachable)
    return trimmed
