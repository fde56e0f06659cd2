"""Where an OAuth token may go: the origin the call named, the agent's own gRPC port, or an origin
the caller named for it.

A bearer token obtained by client credentials (:mod:`skillrack.client.oauth`)
lets whoever holds it act as the caller until it expires, so it goes only
where the caller meant it to.  Over HTTP that is the origin of the URL the
call named.  A2A's gRPC binding is served on another port, so another
origin, and the card that names it is written by the remote side: a card
that points its gRPC interface elsewhere must not collect the token.  So
the token goes to a card's gRPC interface only when it is safe:

* on the **same host** as the named origin (any port), over **TLS** (the
  named agent was ``https``, so the channel is), or on a loopback host,
  where the token never crosses a network; or
* on an origin the caller named for the token: ``--oauth-origin`` (CLI),
  ``origins`` in a peer's ``oauth`` table, ``ClientCredentials(origins=...)``.
  Such an origin may also receive the call's other credentials (it is
  allowed as ``--allow-origin`` would allow it), on any binding.

Anything else is refused before a byte is sent, in one line naming what to
add.  The host is compared as written (``localhost`` is not ``127.0.0.1``):
a name and an address that happen to meet today are not the caller's word.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Collection, Sequence
from typing import Any

from skillrack.client.oauth import TokenSource
from skillrack.client.origin import Origin
from skillrack.errors import ClientCode, SkillCallError

#: The card's protocolBinding of A2A's gRPC binding.
GRPC = "GRPC"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_refusal(
    target: Origin, named: Origin, explicit: Collection[Origin], agent: str
) -> str | None:
    """Why the token of a call naming ``named`` must not go to the gRPC interface ``target``.

    ``explicit``: the origins the caller named for the token; ``agent``: the
    agent's URL, for the message.  None when it may go there.
    """
    if target == named or target in explicit:
        return None
    if target.host == named.host and (target.scheme == "https" or _loopback(target.host)):
        return None
    why = (
        "another host than the agent named"
        if target.host != named.host
        else "the same host, but without TLS"
    )
    return (
        f"the Agent Card of {agent} puts its gRPC interface at {target}, {why}, and the "
        "OAuth token goes only to the named agent's host (over TLS, or on loopback); "
        f"nothing was sent; to send it there: --oauth-origin {target} (CLI), "
        f'origins = ["{target}"] in the peer\'s oauth table, or '
        f'ClientCredentials(origins=["{target}"])'
    )


def may_receive(target: Origin, *, named: Origin, source: TokenSource | None, agent: str) -> bool:
    """Whether ``source``'s token may go to the gRPC interface ``target`` (None: no token)."""
    if source is None:
        return False
    return token_refusal(target, named, source.credentials.token_origins, agent) is None


def token_reachable(
    interfaces: Sequence[Any],
    url_of: Callable[[Any], str],
    named: Origin,
    source: TokenSource | None,
    agent: str,
) -> list[Any]:
    """A card's ``interfaces`` less the gRPC ones a call's token may not reach.

    ``url_of`` gives the URL an interface is judged by; ``source`` is the
    call's token source (None: no token, nothing removed).  When none is
    left, ``origin_refused`` says why for the first, before anything is sent.
    """
    if source is None:
        return list(interfaces)
    explicit = source.credentials.token_origins
    refusals = [
        token_refusal(Origin.of(url_of(i)), named, explicit, agent)
        if i.protocol_binding == GRPC
        else None
        for i in interfaces
    ]
    if interfaces and all(refusals):
        raise SkillCallError.local(ClientCode.ORIGIN_REFUSED, str(refusals[0]))
    return [i for i, why in zip(interfaces, refusals, strict=True) if why is None]


__all__ = ["may_receive", "token_reachable", "token_refusal"]
