"""Step 1 of the client procedure: the Agent Card, read within bounds, parsed, signature checked.

:func:`read_card` fetches the card in chunks up to ``max_card_bytes``
(revalidating with ``If-None-Match`` when an ETag is known) and reports how
long the agent says it stays fresh (``Cache-Control``, :func:`fresh_for`);
an HTTP 429 or 503 is :class:`~skillrack.client.busy.AgentBusy`.
:func:`parse_card` turns the bytes into the card as JSON and as a2a-sdk's
``AgentCard``, verifies the signature against pinned keys, and reads the
schema-interface advertisement.  The same parsing applies to a card read
back from the on-disk cache (:mod:`skillrack.client.disk_cache`): a stored
card is trusted no more than a fetched one.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
from a2a.types import AgentCard
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH as CARD_PATH
from google.protobuf import json_format

from skillrack.client.advertisement import Advertisement, read_advertisement
from skillrack.client.bounds import declared_length, exceeded
from skillrack.client.busy import BUSY, busy_error
from skillrack.client.card_security import security_members
from skillrack.errors import ClientCode, SkillCallError

if TYPE_CHECKING:  # imported when keys are pinned: PyJWT and cryptography cost a client
    # about 6,600 objects the garbage collector tracks, for nothing when no card is verified
    from skillrack.protocol.signing import CardKeys

#: Bytes of a refusal's body read for its message (the rest is not wanted).
MAX_REFUSAL_BYTES = 16 * 1024
_MAX_AGE = re.compile(r"(?:^|,)\s*(s-maxage|max-age)\s*=\s*\"?(\d+)\"?\s*(?=,|$)", re.IGNORECASE)


@dataclass
class CachedCard:
    """A parsed card, with what revalidating it takes.

    Kept as its bytes, the members the security check reads, the checked
    advertisement and a2a-sdk's ``AgentCard``, not as the whole JSON: a
    card's dozens of lists and dicts would stay tracked by the garbage
    collector, per agent, for as long as the card is cached (an
    orchestrator keeps a hundred).  :attr:`card` parses the bytes again.
    """

    etag: str | None
    body: bytes
    #: The members of the card :func:`~skillrack.client.card_security.check_card_security` reads.
    security: Mapping[str, Any]
    advertisement: Advertisement | None
    proto: AgentCard
    #: ``time.monotonic()`` until which the agent said the card stays fresh (``Cache-Control``):
    #: until then it is used without a request; 0: revalidate before each use.
    fresh_until: float = 0.0

    @property
    def card(self) -> dict[str, Any]:
        """The card as JSON (a new copy each time)."""
        card: dict[str, Any] = json.loads(self.body)
        return card

    @property
    def fresh(self) -> bool:
        return time.monotonic() < self.fresh_until

    def fresh_for(self, seconds: float | None) -> None:
        """Fresh for ``seconds`` from now (None or 0: revalidate before the next use)."""
        self.fresh_until = time.monotonic() + seconds if seconds else 0.0


@dataclass(frozen=True)
class CardAnswer:
    """What a card request returned: 200 with the body, or 304."""

    status: int
    etag: str | None
    body: bytes
    #: Seconds the answer stays fresh (``Cache-Control``); None: revalidate each time;
    #: ``no-store``: ``store`` is False.
    fresh_for: float | None
    store: bool


def fresh_for(headers: httpx.Headers) -> tuple[float | None, bool]:
    """``(seconds fresh, may be stored)`` from ``Cache-Control`` and ``Age`` (RFC 9111).

    ``no-store``: not kept at all; ``no-cache``: kept, revalidated every
    time; ``max-age=N``: fresh for N seconds less the ``Age`` it already has.
    """
    control = headers.get("cache-control", "").lower()
    directives = {part.strip().split("=")[0] for part in control.split(",")}
    if "no-store" in directives:
        return None, False
    if "no-cache" in directives:
        return None, True
    ages = {name.lower(): int(value) for name, value in _MAX_AGE.findall(control)}
    max_age = ages.get("max-age")
    if max_age is None:
        return None, True
    age = headers.get("age", "0").strip()
    return max(0.0, float(max_age) - (float(age) if age.isdigit() else 0.0)), True


async def read_card(
    http: httpx.AsyncClient, agent: str, headers: Mapping[str, str], limit: int
) -> CardAnswer:
    """The card's answer, read in chunks up to ``limit`` bytes."""
    what = f"the Agent Card of {agent}"
    async with http.stream("GET", agent + CARD_PATH, headers=headers) as response:
        if response.status_code in BUSY:
            raise busy_error(response, f"fetching {what}", await _read_some(response))
        fresh, store = fresh_for(response.headers)
        if response.status_code != 200:
            # Read to its end (a 304 has no body): a response closed unread closes its
            # connection, and every revalidation would then cost the next request a new one.
            await _read_some(response)
            return CardAnswer(response.status_code, None, b"", fresh, store)
        length = declared_length(response)
        if length is not None and length > limit:
            raise exceeded(what, limit)
        chunks: list[bytes] = []
        total = 0
        async for chunk in response.aiter_bytes():
            total += len(chunk)
            if total > limit:
                raise exceeded(what, limit)
            chunks.append(chunk)
        return CardAnswer(200, response.headers.get("etag"), b"".join(chunks), fresh, store)


async def _read_some(response: httpx.Response) -> bytes | None:
    """A refusal's body, so its message can be shown; None past :data:`MAX_REFUSAL_BYTES`."""
    body = b""
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_REFUSAL_BYTES:
            return None
    return body


def parse_card(agent: str, body: bytes, etag: str | None, card_keys: CardKeys | None) -> CachedCard:
    """The card in ``body``: JSON, an A2A card, signed by ``card_keys`` when they are pinned."""
    try:
        card = json.loads(body)
        proto = json_format.ParseDict(card, AgentCard(), ignore_unknown_fields=True)
    except (ValueError, json_format.ParseError) as exc:
        raise SkillCallError(
            ClientCode.PROTOCOL_ERROR,
            f"the Agent Card of {agent} is not a valid A2A card: {exc}",
        ) from None
    if card_keys is not None:
        from skillrack.protocol.signing import CardSignatureError, verify_card_signature

        try:
            verify_card_signature(proto, card_keys)
        except CardSignatureError as exc:
            raise SkillCallError.local(
                ClientCode.CARD_SIGNATURE_INVALID,
                f"the Agent Card of {agent} is refused: {exc}",
            ) from None
    try:
        advertisement: Advertisement | None = read_advertisement(card)
    except SkillCallError:
        advertisement = None
    return CachedCard(etag, body, security_members(card), advertisement, proto)
