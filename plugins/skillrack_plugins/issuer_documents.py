"""An identity provider's documents (discovery, JWKS), fetched as HTTP caches fetch them.

An agent that checks every token against its issuer's published keys must
not ask the issuer on every request, must notice a key rotation, and must
keep working when the issuer is briefly down.  :class:`CachedDocument` holds
one JSON document from one URL the operator configured (never a URL a token
names) and:

* keeps it for its freshness lifetime, from ``Cache-Control: max-age`` (less
  ``Age``), else ``Expires`` minus ``Date``, else ``default_seconds``; clamped
  between ``min_interval`` and ``max_seconds`` (``no-cache``, ``no-store`` and
  ``max-age=0`` are read as ``min_interval``: an issuer cannot make every
  request a fetch);
* revalidates a stale copy with ``If-None-Match`` / ``If-Modified-Since``
  (a 304 renews it);
* on :meth:`get` with ``refresh=True`` (a token names a ``kid`` the cached
  set lacks) fetches again, but at most once per ``min_interval``: a stream
  of tokens with made-up ``kid`` values cannot turn into a stream of fetches;
* when a fetch fails (connection refused, timeout, 5xx, a document that does
  not parse), keeps serving the last good copy for ``stale_seconds`` past its
  lifetime (RFC 5861's ``stale-if-error``), and only then fails;
* makes one fetch at a time: concurrent callers wait for it and share it.

Every fetch goes through the :class:`~skillrack.AddressGuard` with the
plugin's :class:`~skillrack.AddressPolicy`, without proxies from the
environment, redirects or content coding, and reads at most ``max_bytes``.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import logging
import ssl
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx

from skillrack import AddressGuard, AddressPolicy

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Bytes one document may have (a JWKS of a few dozen RSA keys is far below).
MAX_DOCUMENT_BYTES = 1 << 20
#: Seconds between attempts while no copy was ever fetched (an issuer down at start-up).
FAILURE_BACKOFF = 5.0


class DocumentUnavailable(Exception):
    """No usable copy: never fetched successfully, or stale beyond ``stale_seconds``."""


@dataclass(frozen=True)
class CachePolicy:
    """How long documents are kept and how often the issuer may be asked (seconds)."""

    min_interval: float = 60.0
    default_seconds: float = 300.0
    max_seconds: float = 86400.0
    stale_seconds: float = 600.0
    timeout: float = 5.0


def freshness(headers: httpx.Headers, policy: CachePolicy) -> float:
    """Seconds a response stays fresh, from its caching headers, clamped by ``policy``."""
    lifetime: float | None = None
    directives = {
        part.strip().split("=", 1)[0].lower(): part.strip().partition("=")[2].strip('"')
        for part in headers.get("cache-control", "").split(",")
        if part.strip()
    }
    if "no-store" in directives or "no-cache" in directives:
        lifetime = 0.0
    elif "max-age" in directives:
        try:
            lifetime = float(int(directives["max-age"]))
        except ValueError:
            lifetime = None
        age = headers.get("age", "0")
        if lifetime is not None and age.isdigit():
            lifetime -= float(age)
    if lifetime is None and "expires" in headers:
        expires = _http_date(headers.get("expires"))
        date = _http_date(headers.get("date")) or time.time()
        lifetime = (expires - date) if expires is not None else 0.0
    if lifetime is None:
        lifetime = policy.default_seconds
    return min(max(lifetime, policy.min_interval), policy.max_seconds)


def _http_date(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


@dataclass
class _Copy(Generic[T]):
    value: T
    fresh_until: float
    etag: str | None
    last_modified: str | None


class CachedDocument(Generic[T]):
    """One JSON document at ``url``, turned into a ``T`` by ``parse`` (see the module docstring).

    ``parse`` raises ``ValueError`` for a document that cannot be used; the
    previous copy is then kept, as for a failed fetch.  ``clock`` is
    monotonic seconds (tests may replace it).
    """

    def __init__(
        self,
        url: str,
        parse: Callable[[Any], T],
        *,
        address_policy: AddressPolicy,
        policy: CachePolicy,
        what: str,
        clock: Callable[[], float] = time.monotonic,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.url = url
        self._tls = tls
        self._parse = parse
        self._address_policy = address_policy
        self._policy = policy
        self._what = what
        self._clock = clock
        self._copy: _Copy[T] | None = None
        self._attempted = float("-inf")
        #: One lock per event loop (a lock belongs to the loop that first waits on it).
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        #: Fetches made (sent to the issuer), for diagnostics and tests.
        self.fetches = 0

    async def get(self, *, refresh: bool = False) -> T:
        """The document; with ``refresh``, fetched again unless fetched within ``min_interval``."""
        copy = self._copy
        now = self._clock()
        if copy is not None and now < copy.fresh_until and not refresh:
            return copy.value
        since = now - self._attempted
        if copy is not None and since < self._policy.min_interval:
            return self._usable(copy, now)
        if copy is None and since < min(self._policy.min_interval, FAILURE_BACKOFF):
            raise DocumentUnavailable(f"{self._what} at {self.url} could not be fetched")
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        attempted = self._attempted
        async with lock:
            if self._attempted != attempted and self._copy is not None:  # fetched meanwhile
                return self._usable(self._copy, self._clock())
            return await self._fetch()

    def _usable(self, copy: _Copy[T], now: float) -> T:
        if now < copy.fresh_until + self._policy.stale_seconds:
            return copy.value
        raise DocumentUnavailable(f"{self._what} at {self.url} is stale and cannot be fetched")

    async def _fetch(self) -> T:
        self._attempted = self._clock()
        self.fetches += 1
        copy = self._copy
        headers: dict[str, str] = {}
        if copy is not None and copy.etag:
            headers["If-None-Match"] = copy.etag
        if copy is not None and copy.last_modified:
            headers["If-Modified-Since"] = copy.last_modified
        try:
            status, response_headers, body = await self._request(headers)
            if status == 304 and copy is not None:
                copy.fresh_until = self._clock() + freshness(response_headers, self._policy)
                return copy.value
            if status != 200:
                raise ValueError(f"answered HTTP {status}")
            value = self._parse(json.loads(body))
        except Exception as exc:  # every failure: keep what we have, for a while
            logger.warning(
                "%s at %s could not be fetched: %s: %s",
                self._what,
                self.url,
                type(exc).__name__,
                exc,
            )
            if copy is None:
                raise DocumentUnavailable(f"{self._what} at {self.url}: {exc}") from None
            return self._usable(copy, self._clock())
        self._copy = _Copy(
            value,
            self._clock() + freshness(response_headers, self._policy),
            response_headers.get("etag"),
            response_headers.get("last-modified"),
        )
        return value

    async def _request(self, headers: dict[str, str]) -> tuple[int, httpx.Headers, bytes]:
        return await guarded_request(
            "GET",
            self.url,
            policy=self._address_policy,
            timeout=self._policy.timeout,
            max_bytes=MAX_DOCUMENT_BYTES,
            headers=headers,
            tls=self._tls,
        )


async def guarded_request(
    method: str,
    url: str,
    *,
    policy: AddressPolicy,
    timeout: float,
    max_bytes: int,
    tls: ssl.SSLContext | None = None,
    **options: Any,
) -> tuple[int, httpx.Headers, bytes]:
    """One request through the address guard: no proxies, redirects or content coding.

    ``(status, headers, body)``, the body read up to ``max_bytes`` (``ValueError`` beyond).
    ``tls``: the CAs to verify the issuer with (``ca_bundle``); by default
    httpx's, which honour ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``.
    """
    guard = (
        AddressGuard(policy)
        if tls is None
        else AddressGuard(policy, transport=functools.partial(httpx.AsyncHTTPTransport, verify=tls))
    )
    headers = {"Accept": "application/json", **options.pop("headers", {})}
    headers["Accept-Encoding"] = "identity"
    async with (
        httpx.AsyncClient(
            transport=guard, timeout=timeout, follow_redirects=False, trust_env=False
        ) as client,
        client.stream(method, url, headers=headers, **options) as response,
    ):
        chunks: list[bytes] = []
        total = 0
        async for chunk in response.aiter_raw():
            total += len(chunk)
            if total > max_bytes:
                raise ValueError(f"the answer of {url} is larger than {max_bytes} bytes")
            chunks.append(chunk)
        if response.headers.get("content-encoding", "identity") != "identity":
            raise ValueError(f"{url} sent a compressed body though none was asked for")
        return response.status_code, response.headers, b"".join(chunks)
