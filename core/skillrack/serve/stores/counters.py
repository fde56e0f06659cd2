"""Where per-caller limits are counted: in this process, or in Redis shared by every replica.

``[server] rate_per_minute`` and ``max_concurrent_tasks`` hold per caller
(:func:`~skillrack.serve.execution.concurrency.slot_key`).  Counted in each process, N
replicas (or ``--workers N``) would give a caller N times its limit; with
``[server] limits_store = "redis://HOST:PORT/DB"`` every process counts in
the same Redis, so the limits hold across all of them:

* **rate**: a sliding one-minute log per caller, a sorted set of request
  times.  One Lua script drops the entries older than the window, counts
  what is left and adds the new request only if the caller is under its
  limit (else it answers the seconds until the oldest entry leaves), then
  sets the key to expire with the window: atomic, and an idle caller costs
  nothing after a minute.  Times are Redis's own (``TIME``), so replicas with
  skewed clocks agree;
* **concurrency**: a sorted set of slot leases per caller.  Taking a slot is
  one Lua script (drop expired leases, count, add a lease if under the
  limit, refresh the key's expiry); giving it back removes the lease.  A
  lease lasts ``LEASE_S`` and the process holding it renews it every third of
  that while its handler runs, so the slots of a replica that dies (no
  release, no renewal) are free again within ``LEASE_S``.

Redis unreachable while serving: the operator chooses (``[server]
limits_on_outage``).  ``allow`` (the default) counts the request in this
process instead (the limits then hold per process, as without Redis);
``deny`` refuses it with :class:`LimitsUnavailable` (a retryable 503 at the
rate limit, ``resource_limit_exceeded`` for a slot), for operators whose
limits protect devices that must not see N times the rate.  Either way the
outage is logged once when it starts and once when Redis answers again, and
counted (``skillrack_limits_store_outages_total``).  ``skillrack serve`` checks
at start-up that Redis answers.
Keys start with ``[server] limits_key_prefix``, so several agents can share
one Redis.  The failed-authentication limit stays per process.

redis-py's asyncio client is the optional extra ``redis``
(``pip install 'skillrack[redis]'``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from skillrack.errors import ConditionError, ErrorCode
from skillrack.host.config import Config, ConfigError
from skillrack.serve.stores.sliding_window import SlidingWindow

logger = logging.getLogger(__name__)

#: Seconds a concurrency lease lasts without renewal (the slots of a dead replica free up then).
LEASE_S = 30.0
#: What a client is told to wait while the limits store is down under ``deny``.
OUTAGE_RETRY_AFTER_S = 2
#: Schemes redis-py's ``from_url`` reads.
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")

_RATE_SCRIPT = """
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local member = ARGV[3]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) >= limit then
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local retry = math.ceil((tonumber(oldest[2]) + window - now) / 1000)
  if retry < 1 then retry = 1 end
  return retry
end
redis.call('ZADD', key, now, member)
redis.call('PEXPIRE', key, window)
return 0
"""

_ACQUIRE_SCRIPT = """
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local lease = tonumber(ARGV[2])
local token = ARGV[3]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
if redis.call('ZCARD', key) >= limit then return 0 end
redis.call('ZADD', key, now + lease, token)
redis.call('PEXPIRE', key, lease)
return 1
"""

_RENEW_SCRIPT = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local lease = tonumber(ARGV[1])
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + lease, ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], lease)
end
return 1
"""


class LimitCounter(Protocol):
    """What the rate limit middleware and the concurrency limiter count with."""

    #: One line for the start-up log and the operator console (no password).
    where: str

    async def rate(self, key: str, limit: int, window_s: float) -> int | None:
        """Count one request of ``key``: ``None`` when allowed, else seconds until it may."""

    async def acquire(self, key: str, limit: int) -> str | None:
        """Take one of ``limit`` slots of ``key``: a token for :meth:`release`, or ``None``."""

    async def release(self, key: str, token: str) -> None:
        """Give back the slot ``token`` (once; unknown tokens are ignored)."""

    async def aclose(self) -> None:
        """Stop renewing leases and close connections."""


class LocalCounter:
    """This process's counters: a sliding window per key, and running slots per key."""

    where = "this process"

    def __init__(self) -> None:
        self._windows: dict[tuple[int, float], SlidingWindow] = {}
        self._running: dict[str, set[str]] = {}
        #: Slot tokens: unique within this process is all they need (no uuid4 per call).
        self._tokens = itertools.count()

    async def rate(self, key: str, limit: int, window_s: float) -> int | None:
        window = self._windows.get((limit, window_s))
        if window is None:
            window = self._windows[(limit, window_s)] = SlidingWindow(limit, window_s)
        retry_after = window.retry_after(key)
        if retry_after is None:
            window.record(key)
        return retry_after

    async def acquire(self, key: str, limit: int) -> str | None:
        held = self._running.setdefault(key, set())
        if len(held) >= limit:
            if not held:
                del self._running[key]
            return None
        token = str(next(self._tokens))
        held.add(token)
        return token

    async def release(self, key: str, token: str) -> None:
        held = self._running.get(key)
        if held is not None:
            held.discard(token)
            if not held:
                del self._running[key]  # idle callers cost nothing

    async def aclose(self) -> None:
        """Nothing to close."""


class LimitsUnavailable(ConditionError):
    """Redis is unreachable and ``limits_on_outage = "deny"``: the request is not counted."""

    def __init__(self, where: str) -> None:
        super().__init__(
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            f"the limits store ({where}) is unreachable and the operator chose to refuse "
            'requests meanwhile ([server] limits_on_outage = "deny"); retry shortly',
        )


class RedisCounter:
    """Counters in Redis (see the module docstring), this process's as the fallback."""

    def __init__(
        self,
        url: str,
        prefix: str,
        *,
        lease_s: float = LEASE_S,
        deny_on_outage: bool = False,
        on_outage: Callable[[], None] = lambda: None,
    ) -> None:
        try:
            import redis.asyncio as aioredis
        except ImportError:
            raise ConfigError(
                "[server] limits_store names Redis, and redis-py is not installed: "
                "pip install 'skillrack[redis]'"
            ) from None
        self._redis: Any = aioredis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self.prefix = prefix
        self.lease_ms = int(lease_s * 1000)
        self.where = _redis_where(url, prefix)
        self._rate = self._redis.register_script(_RATE_SCRIPT)
        self._acquire = self._redis.register_script(_ACQUIRE_SCRIPT)
        self._renew = self._redis.register_script(_RENEW_SCRIPT)
        self._fallback = LocalCounter()
        #: Leases this process holds: (Redis key, token); renewed until released.
        self._held: set[tuple[str, str]] = set()
        #: Tokens handed out by the fallback (Redis was down when they were taken).
        self._local_tokens: set[str] = set()
        self._renewer: asyncio.Task[None] | None = None
        self.deny_on_outage = deny_on_outage
        #: Called once at the start of each outage (the metric).
        self.on_outage = on_outage
        #: Since when (monotonic) Redis has been unreachable; None while it answers.
        self.down_since: float | None = None

    def _warn(self, exc: Exception) -> None:
        """Redis failed: log and count the outage once, when it starts."""
        if self.down_since is not None:
            return
        self.down_since = time.monotonic()
        self.on_outage()
        logger.warning(
            "limits store %s unreachable (%s: %s): %s until it answers again",
            self.where,
            type(exc).__name__,
            exc,
            "refusing requests (limits_on_outage = deny)"
            if self.deny_on_outage
            else "counting in this process",
        )

    def _answered(self) -> None:
        if self.down_since is not None:
            logger.warning(
                "limits store %s answers again after %.1f s",
                self.where,
                time.monotonic() - self.down_since,
            )
            self.down_since = None

    async def ping(self) -> None:
        """Raise when Redis does not answer (the start-up check)."""
        await self._redis.ping()

    async def rate(self, key: str, limit: int, window_s: float) -> int | None:
        try:
            retry = await self._rate(
                keys=[f"{self.prefix}rate:{key}"],
                args=[limit, int(window_s * 1000), uuid.uuid4().hex],
            )
        except Exception as exc:  # any failure of the counter: the operator's choice
            self._warn(exc)
            if self.deny_on_outage:
                raise LimitsUnavailable(self.where) from None
            return await self._fallback.rate(key, limit, window_s)
        self._answered()
        return int(retry) or None

    async def acquire(self, key: str, limit: int) -> str | None:
        token = uuid.uuid4().hex
        redis_key = f"{self.prefix}slots:{key}"
        try:
            taken = await self._acquire(keys=[redis_key], args=[limit, self.lease_ms, token])
        except Exception as exc:
            self._warn(exc)
            if self.deny_on_outage:
                raise LimitsUnavailable(self.where) from None
            local = await self._fallback.acquire(key, limit)
            if local is not None:
                self._local_tokens.add(local)
            return local
        self._answered()
        if not int(taken):
            return None
        self._held.add((redis_key, token))
        self._start_renewing()
        return token

    async def release(self, key: str, token: str) -> None:
        if token in self._local_tokens:
            self._local_tokens.discard(token)
            await self._fallback.release(key, token)
            return
        redis_key = f"{self.prefix}slots:{key}"
        self._held.discard((redis_key, token))
        try:
            await self._redis.zrem(redis_key, token)
        except Exception as exc:  # the lease expires by itself
            self._warn(exc)

    def _start_renewing(self) -> None:
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.get_running_loop().create_task(self._renew_leases())

    async def _renew_leases(self) -> None:
        """Every third of a lease, extend the leases still held; stop when none is."""
        while self._held:
            await asyncio.sleep(self.lease_ms / 3000)
            for redis_key, token in list(self._held):
                try:
                    await self._renew(keys=[redis_key], args=[self.lease_ms, token])
                except Exception as exc:
                    self._warn(exc)

    async def aclose(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            await asyncio.gather(self._renewer, return_exceptions=True)
        await self._redis.aclose()


def _without_password(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user + ':***' if ':' in credentials else user}@{host}"


def _redis_where(url: str, prefix: str) -> str:
    """The line naming a Redis counter (:attr:`RedisCounter.where`, :func:`counter_location`)."""
    return f"redis {_without_password(url)} (keys {prefix}*)"


def counter_location(config: Config) -> str:
    """Where ``config`` counts per-caller limits, in one line (no password), opening nothing."""
    url = config.server.limits_store.strip()
    if not url:
        return LocalCounter.where
    return _redis_where(url, config.server.limits_key_prefix)


def open_counter(config: Config) -> LimitCounter:
    """The counter ``[server] limits_store`` names: Redis, or (empty) this process."""
    url = config.server.limits_store.strip()
    if not url:
        return LocalCounter()
    if not url.startswith(REDIS_SCHEMES):
        raise ConfigError(
            f"[server] limits_store {url!r}: give a redis:// (or rediss://, unix://) URL, "
            "or leave it empty to count in each process"
        )
    return RedisCounter(
        url,
        config.server.limits_key_prefix,
        deny_on_outage=config.server.limits_on_outage == "deny",
    )


async def check_counter_store(config: Config) -> None:
    """Start-up check: a Redis limits store answers (one line of ConfigError otherwise)."""
    counter = open_counter(config)
    try:
        if isinstance(counter, RedisCounter):
            try:
                await counter.ping()
            except Exception as exc:
                raise ConfigError(
                    f"[server] limits_store {counter.where} does not answer: "
                    f"{type(exc).__name__}: {exc}"
                ) from None
    finally:
        await counter.aclose()
