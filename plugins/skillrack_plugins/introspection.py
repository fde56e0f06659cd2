"""OAuth 2.0 token introspection (RFC 7662) for opaque tokens, with a bounded cache.

An identity provider may hand out tokens that are not JWTs (reference
tokens): only the issuer can say what they mean.  :class:`Introspection`
POSTs such a token to the issuer's introspection endpoint, authenticated as
the agent's own client (HTTP Basic, RFC 6749 section 2.3.1), and returns the
response's claims when ``active`` is true.

Each answer is cached under the token's SHA-256 (never the token itself) for
``cache_seconds``, and an active token never past its own ``exp``; the cache
holds at most ``max_entries`` tokens, least recently used first out, so a
flood of made-up tokens costs one request each and a bounded amount of
memory.  A failed request is not cached (the next call asks again) and
refuses the token.  Requests go through the address guard like every other
fetch of the plugin.
"""

from __future__ import annotations

import hashlib
import json
import ssl
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from skillrack import AddressPolicy
from skillrack_plugins.issuer_documents import guarded_request

#: Bytes an introspection response may have.
MAX_RESPONSE_BYTES = 64 * 1024


class Introspection:
    """Asks ``endpoint()`` (a coroutine: it may come from the discovery document) about tokens."""

    def __init__(
        self,
        endpoint: Callable[[], Awaitable[str]],
        *,
        client_id: str,
        client_secret: str,
        address_policy: AddressPolicy,
        timeout: float,
        cache_seconds: float,
        max_entries: int,
        clock: Callable[[], float] = time.time,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._tls = tls
        self._auth = httpx.BasicAuth(client_id, client_secret)
        self._address_policy = address_policy
        self._timeout = timeout
        self._cache_seconds = cache_seconds
        self._max_entries = max_entries
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, dict[str, Any] | None]] = OrderedDict()
        #: Requests sent to the endpoint, for diagnostics and tests.
        self.requests = 0

    async def claims(self, token: str) -> dict[str, Any] | None:
        """The token's claims when the issuer says it is active, else None (inactive)."""
        key = hashlib.sha256(token.encode("utf-8")).hexdigest()
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None and now < cached[0]:
            self._cache.move_to_end(key)
            return cached[1]
        answer = await self._ask(token)
        active = answer if answer.get("active") is True else None
        until = now + self._cache_seconds
        exp = answer.get("exp")
        if active is not None and isinstance(exp, int | float) and not isinstance(exp, bool):
            until = min(until, float(exp))
        self._cache[key] = (until, active)
        self._cache.move_to_end(key)
        while len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)
        return active

    async def _ask(self, token: str) -> dict[str, Any]:
        self.requests += 1
        status, _, body = await guarded_request(
            "POST",
            await self._endpoint(),
            policy=self._address_policy,
            timeout=self._timeout,
            max_bytes=MAX_RESPONSE_BYTES,
            data={"token": token, "token_type_hint": "access_token"},
            auth=self._auth,
            tls=self._tls,
        )
        if status != 200:
            raise ValueError(f"the introspection endpoint answered HTTP {status}")
        answer = json.loads(body)
        if not isinstance(answer, dict):
            raise ValueError("the introspection answer is not a JSON object")
        return answer
