"""Push notifications: a2a-sdk's sender, behind the outbound address guard, retried, in order.

A caller that does not want to hold a stream open gives a webhook
(``TaskPushNotificationConfig``: ``url``, ``token``, ``authentication``) in
``SendMessage``'s configuration or through ``CreateTaskPushNotificationConfig``;
each task event (the StreamResponse JSON of the HTTP+JSON binding) is then
POSTed to it by a2a-sdk's :class:`BasePushNotificationSender`, with
``X-A2A-Notification-Token`` and, when the config has ``authentication``, an
``Authorization: <scheme> <credentials>`` header.  The configs live in the
task store's database (a2a-sdk's push config store), owned by the caller who
set them (:mod:`skillrack.serve.stores.push_configs`), so every replica
delivers for them and no other caller reads or replaces them.

A webhook URL is the caller's choice of where this host connects, so it is
server-side request forgery unless vetted, twice:

- when it is set (:class:`PushUrlCheck`): ``https`` only (plain ``http``
  only when loopback is allowed, and only to loopback: an address literal
  that is loopback, or a name, ``localhost`` and ``*.localhost`` included,
  whose every address is loopback; the outbound guard checks that where it
  resolves the name, at set time and again at each delivery); its host
  name must resolve, and every address to one the operator's policy allows
  (the outbound address guard: never link-local or cloud metadata; loopback
  with ``push_allow_loopback``, the private ranges with
  ``push_allow_private``).  A refusal is ``InvalidParamsError`` naming the URL
  and the reason; nothing is stored, nothing is contacted.  For a host name
  the caller is not told what it resolved to, or why it did not (the
  operator's log is): the refusal must not answer questions about the
  internal DNS.
- when it is delivered: the HTTP client's transport is the address guard, so
  the name is resolved again and the connection is pinned to the address it
  just checked (a name that resolved to a public address at set time and to
  ``10.0.0.1`` now is refused: DNS rebinding).

Delivery never holds up the task: a2a-sdk calls the sender inline while it
consumes the task's events, so :class:`PushDelivery` queues each event and
one worker per task posts them in order.  A failed POST (connection error,
HTTP 5xx or 429) is retried ``push_attempts`` times in all with exponential
backoff (0.5 s, 1 s, 2 s, ...); a refusal or another 4xx is not retried.
A queue holds at most :data:`QUEUE_LIMIT` events per task; beyond that the
event is dropped and logged.

A config's ``authentication`` carries the caller's credentials for its
webhook.  With ``[server] push_encryption_key_file`` the database store
encrypts every config with that Fernet key (a2a-sdk's ``encryption_key``),
so the task store's rows hold no credential in clear
(:func:`load_push_key`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from a2a.server.tasks import BasePushNotificationSender, PushNotificationConfigStore
from a2a.server.tasks.push_notification_sender import PushNotificationEvent, PushNotificationSender
from a2a.utils.errors import InvalidParamsError

from skillrack.errors import ErrorCode, SkillCallError
from skillrack.host.config import ConfigError
from skillrack.serve.middleware.error_sanitizer import OWN_ERROR

logger = logging.getLogger(__name__)

#: Events one task may have waiting for delivery.
QUEUE_LIMIT = 256
#: The first wait before a retry, seconds; it doubles with each attempt.
BACKOFF_S = 0.5
#: A task's worker stops after this many idle seconds (a new event starts another).
IDLE_S = 5.0
#: At shutdown, how long pending deliveries may still run, seconds.
DRAIN_S = 5.0

#: ``vet(url)``: the address guard's check of a URL's host (raises ``SkillCallError``).
Vet = Callable[[httpx.URL], Awaitable[object]]


class PushUrlCheck:
    """Whether a webhook URL may be stored (and later dialled); see the module docstring."""

    def __init__(
        self, vet: Vet, *, allow_loopback: bool, refused_names: frozenset[str] = frozenset()
    ) -> None:
        self._vet = vet
        self._allow_loopback = allow_loopback
        #: Names the guard refuses as such, unresolved (cloud metadata): said in full.
        self._refused_names = refused_names

    def scheme_problem(self, url: str) -> str | None:
        """Why ``url``'s form is refused (scheme, host), or None."""
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, TypeError):
            return "it is not a URL"
        if not parsed.host:
            return "it has no host"
        if parsed.userinfo:
            return "it carries credentials in the URL; use the config's authentication"
        if parsed.scheme == "https":
            return None
        if parsed.scheme != "http":
            return "only https webhooks are accepted"
        if _is_address(parsed.host) and not ipaddress.ip_address(parsed.host).is_loopback:
            return "only https webhooks are accepted (plain http only to loopback)"
        if not self._allow_loopback:
            return (
                "only https webhooks are accepted "
                "(plain http only to loopback, with [server] push_allow_loopback)"
            )
        # A name: the address guard lets plain http reach only loopback addresses.
        return None

    async def problem(self, url: str) -> str | None:
        """Why ``url`` is refused (form, resolution or address), or None."""
        form = self.scheme_problem(url)
        if form is not None:
            return form
        parsed = httpx.URL(url)
        try:
            await self._vet(parsed)
        except (SkillCallError, httpx.HTTPError) as exc:
            detail = exc.message if isinstance(exc, SkillCallError) else str(exc)
            if _is_address(parsed.host) or parsed.host.lower().rstrip(".") in self._refused_names:
                return detail or type(exc).__name__  # nothing the caller did not write itself
            # What a name resolved to (or why not) stays with the operator: told to the
            # caller, it would make this endpoint a probe of the internal DNS.
            logger.warning("push notification URL %s refused: %s", url, detail)
            return "its host name does not resolve to an address webhooks may reach"
        return None

    async def require(self, url: str) -> None:
        """Raise A2A's ``InvalidParamsError`` naming ``url`` and the reason, if refused."""
        problem = await self.problem(url)
        if problem is not None:
            raise InvalidParamsError(
                message=f"push notification URL {url!r} refused: {problem}",
                data={**OWN_ERROR, "code": ErrorCode.INPUT_INVALID.value, "field": "url"},
            )

    async def deliverable(self, url: str) -> bool:
        """a2a-sdk's ``push_url_validator`` at delivery: the form again (addresses: the guard)."""
        problem = self.scheme_problem(url)
        if problem is not None:
            logger.warning("push notification to %s not sent: %s", url, problem)
        return problem is None


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def load_push_key(path: str, base_dir: Path) -> bytes | None:
    """The Fernet key in ``[server] push_encryption_key_file`` (relative to ``base_dir``).

    None when the setting is empty.  A file that cannot be read or does not
    hold a Fernet key (32 bytes, URL-safe base64) is a ``ConfigError`` saying
    how to make one: a server that silently stored credentials in clear
    because its key was unreadable would break the promise the setting makes.
    """
    if not path:
        return None
    from cryptography.fernet import Fernet  # here: cryptography is slow to import

    where = base_dir / path
    try:
        key = where.read_bytes().strip()
    except OSError as exc:
        raise ConfigError(
            f"server.push_encryption_key_file: cannot read {where}: {exc.strerror or exc}"
        ) from None
    try:
        Fernet(key)
    except ValueError:
        raise ConfigError(
            f"server.push_encryption_key_file: {where} does not hold a Fernet key (32 bytes, "
            "URL-safe base64); make one with python -c "
            "'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"
        ) from None
    return key


class RetryingTransport(httpx.AsyncBaseTransport):
    """Retries a request on connection errors, HTTP 5xx and 429, with exponential backoff.

    Anything else (a 2xx-4xx answer, the address guard's refusal) is final.
    """

    def __init__(
        self, inner: httpx.AsyncBaseTransport, attempts: int, backoff: float = BACKOFF_S
    ) -> None:
        self._inner = inner
        self._attempts = max(1, attempts)
        self._backoff = backoff

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        for attempt in range(1, self._attempts + 1):
            last = attempt == self._attempts
            try:
                response = await self._inner.handle_async_request(request)
            except httpx.TransportError:
                if last:
                    raise
            else:
                if last or (response.status_code < 500 and response.status_code != 429):
                    return response
                await response.aclose()
            await asyncio.sleep(self._backoff * 2 ** (attempt - 1))
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def aclose(self) -> None:
        await self._inner.aclose()


class PushDelivery(PushNotificationSender):
    """a2a-sdk's sender behind a per-task queue, so that delivery never blocks the task."""

    def __init__(
        self,
        config_store: PushNotificationConfigStore,
        transport: httpx.AsyncBaseTransport,
        check: PushUrlCheck,
        *,
        attempts: int,
        timeout: float,
        backoff: float = BACKOFF_S,
    ) -> None:
        self._client = httpx.AsyncClient(
            transport=RetryingTransport(transport, attempts, backoff),
            timeout=timeout,
            follow_redirects=False,
        )
        self._sender = BasePushNotificationSender(
            self._client, config_store, push_url_validator=check.deliverable
        )
        self._queues: dict[str, asyncio.Queue[PushNotificationEvent]] = {}
        self._workers: set[asyncio.Task[None]] = set()
        #: Events queued or being delivered (what a shutdown waits for).
        self._pending = 0

    async def send_notification(self, task_id: str, event: PushNotificationEvent) -> None:
        copy: PushNotificationEvent = type(event)()
        copy.MergeFrom(event)  # type: ignore[arg-type]  # the same type; it may change later
        queue = self._queues.get(task_id)
        if queue is None:
            queue = self._queues[task_id] = asyncio.Queue(QUEUE_LIMIT)
            worker = asyncio.get_running_loop().create_task(self._work(task_id, queue))
            self._workers.add(worker)
            worker.add_done_callback(self._workers.discard)
        try:
            queue.put_nowait(copy)
            self._pending += 1
        except asyncio.QueueFull:
            logger.warning(
                "push notifications for task %s: %d events wait already; one is dropped",
                task_id,
                QUEUE_LIMIT,
            )

    async def _work(self, task_id: str, queue: asyncio.Queue[PushNotificationEvent]) -> None:
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), IDLE_S)
            except TimeoutError:
                if queue.empty():  # nothing can be put between this check and the removal
                    self._queues.pop(task_id, None)
                    return
                continue
            try:
                await self._sender.send_notification(task_id, event)  # logs its own failures
            finally:
                self._pending -= 1

    async def aclose(self, drain: float = DRAIN_S) -> None:
        """Let pending deliveries run for up to ``drain`` seconds, then stop and close."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(drain):
                while self._pending:
                    await asyncio.sleep(0.05)
        for worker in list(self._workers):
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        await self._client.aclose()
