"""The ASGI application: the Agent Card, both A2A bindings, and the middleware around them.

Routes come from a2a-sdk's factories (JSON-RPC at ``/``, HTTP+JSON after it,
last, because its ``/{tenant}`` mount shadows anything added later); the card
route is skillrack's own so that its bytes are built once.  The middleware
(:mod:`skillrack.serve.middleware`), outermost first: host allowlist,
trace context (only when a tracer provider is installed), error sanitizer,
extension echo, failed-authentication limit, authentication, rate limit,
body timeout, body guard.  ``GET /metrics`` is the Prometheus exposition of
:mod:`skillrack.serve.observability.metrics`, guarded like ``/-/hops``
(:mod:`skillrack.serve.bindings.metrics_endpoint`).  Tasks are stored per
tenant of the authenticated caller, so another tenant's task answers as if it
did not exist.  Where they are stored (memory, a SQLite file, PostgreSQL shared
by replicas) is ``config.server.store`` (:mod:`skillrack.serve.stores.storage`);
``app_from_environment`` is the app factory ``skillrack serve --workers N`` gives
uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from a2a.compat.v0_3.versions import is_legacy_version
from a2a.server.agent_execution import RequestContextBuilder, SimpleRequestContextBuilder
from a2a.server.cluster.task_store import StoredTask, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import PushNotificationConfigStore, TaskStore
from a2a.types import (
    CancelTaskRequest,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import (
    InternalError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    UnsupportedOperationError,
)
from a2a.utils.task import apply_history_length, validate_history_length
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from skillrack.client.address_guard import (
    METADATA_NAMES,
    AddressGuard,
    AddressPolicy,
    policy_for_url,
)
from skillrack.client.composition import Peers
from skillrack.client.oauth import ClientCredentials
from skillrack.client.origin import Origin
from skillrack.client.skill_client import SkillClient
from skillrack.client.tls import ClientTls
from skillrack.host.compose import compose_host
from skillrack.host.config import Config, ConfigError, PeerAddresses, PeerTls, load_config
from skillrack.host.registry import Registry
from skillrack.protocol.signing import JWKS_PATH
from skillrack.serve.bindings.blocking import (
    TERMINAL,
    BlockingTurn,
    Saves,
    VersionedSaves,
    lacks_required_field,
)
from skillrack.serve.bindings.call_context import bind_call
from skillrack.serve.bindings.card import (
    CARD_PATH,
    LEGACY_PROTOCOL_VERSION,
    CardEndpoint,
    build_card,
    jwks_endpoint,
    load_card_signer,
)
from skillrack.serve.bindings.jsonrpc import jsonrpc_routes
from skillrack.serve.bindings.metrics_endpoint import METRICS_PATH, counted_card, metrics_route
from skillrack.serve.bindings.operator_endpoints import HOPS_PATH, hops_endpoint
from skillrack.serve.bindings.push import PushDelivery, PushUrlCheck, load_push_key
from skillrack.serve.bindings.tls import TlsFiles
from skillrack.serve.console import CONSOLE_PATH, Console, ConsoleSources
from skillrack.serve.execution.executor import SkillExecutor, skill_of
from skillrack.serve.execution.outputs import OutputLimits
from skillrack.serve.execution.traced_delegation import TracedDelegation
from skillrack.serve.middleware import (
    JSONRPC_PATH,
    AuthenticationGate,
    BodyGuard,
    BodyTimeout,
    ErrorSanitizer,
    ExtensionEcho,
    FailedAuthenticationLimit,
    HostAllowlist,
    RateLimit,
    TraceContext,
)
from skillrack.serve.middleware.host_allowlist import default_allowed_hosts
from skillrack.serve.observability.metrics import Metrics, multiprocess_dir
from skillrack.serve.observability.traces import configure as configure_traces
from skillrack.serve.observability.traces import enabled as tracing_enabled
from skillrack.serve.process import freeze_startup_heap
from skillrack.serve.scope import ACTIVATED_EXTENSIONS_KEY, CALLER_KEY, HEADER_TIMEOUT_KEY
from skillrack.serve.security.approvals import PENDING, ApprovalStore, open_approvals
from skillrack.serve.security.caller import ANONYMOUS, owner_of
from skillrack.serve.security.operator_access import OperatorGuard
from skillrack.serve.security.requirements import skill_requirements
from skillrack.serve.stores.cluster import ClusterTaskStore
from skillrack.serve.stores.counters import open_limits
from skillrack.serve.stores.recovery import fail_interrupted
from skillrack.serve.stores.sliding_window import SlidingWindow
from skillrack.serve.stores.storage import (
    NewTaskNotice,
    SingleProcessTaskStore,
    TaskStorage,
    open_storage,
    parse_store,
)
from skillrack.serve.stores.timed import time_operations

logger = logging.getLogger(__name__)

#: Seconds running gRPC calls get to finish when the agent stops.
GRPC_STOP_GRACE_S = 5.0


def tenant_scope(context: ServerCallContext) -> str:
    """The owner of a task: the caller's tenant, else the caller's own identity.

    Taken from the credential (via authentication), never from message content
    or the A2A ``tenant`` field.
    """
    return owner_of(context.state.get(CALLER_KEY, ANONYMOUS))


def is_a2a_0_3(context: ServerCallContext) -> bool:
    """Whether the request came through a2a-sdk's A2A 0.3 layer (``[server] a2a_0_3``).

    A request without ``A2A-Version`` is an A2A 0.3 request (A2A 1.0 section
    3.6.2); the 1.0 routes refuse it (``VersionNotSupportedError``), so one
    that reached the handler came through the 0.3 routes.
    """
    headers = context.state.get("headers", {})
    return is_legacy_version(headers.get("a2a-version") or LEGACY_PROTOCOL_VERSION)


class ContextBuilder(DefaultServerCallContextBuilder):
    """Keeps a2a-sdk's state (headers: the A2A-Version check needs them) and adds ours."""

    def build(self, request: Request) -> ServerCallContext:
        return bind_call(
            super().build(request),
            request.scope.get(CALLER_KEY, ANONYMOUS),
            request.client.host if request.client else None,
            request.scope.setdefault(ACTIVATED_EXTENSIONS_KEY, set()),
        )


class SkillrackRequestHandler(DefaultRequestHandler):
    """a2a-sdk's request handler, with skillrack's checks and its blocking path.

    CancelTask is refused for non-cancellable skills before a2a-sdk touches
    the task: a2a-sdk cancels the executor and marks the task FAILED even when
    the executor refuses to cancel; refusing here leaves the task running to
    its normal end, as A2A's TaskNotCancelableError promises.

    A blocking SendMessage that starts a task runs on the blocking path
    (:mod:`skillrack.serve.bindings.blocking`) when nothing else needs a2a-sdk's event
    machinery: no push sender, no versioned store but skillrack's cluster
    store (whose event log it keeps as a2a-sdk would), no push config in the
    request, not ``returnImmediately``, no required field missing.  Every
    other request takes a2a-sdk's path, as before.
    """

    def __init__(
        self,
        *args: Any,
        registry: Registry,
        push_check: PushUrlCheck | None = None,
        blocking: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._registry = registry
        self._push_check = push_check
        store = self.task_store
        plain = kwargs.get("event_stream") is None and not isinstance(store, VersionedTaskStore)
        self._blocking = (
            blocking
            and kwargs.get("push_sender") is None
            and not kwargs.get("validate_input_modes", False)
            # Cluster mode: only skillrack's store, whose saves of every event cost no
            # transaction of their own (skillrack.serve.bindings.blocking, VersionedSaves).
            and (plain or isinstance(store, ClusterTaskStore))
        )
        # a2a-sdk's own default when none is given.
        self._context_builder: RequestContextBuilder = kwargs.get(
            "request_context_builder"
        ) or SimpleRequestContextBuilder(should_populate_referred_tasks=False, task_store=None)
        #: The blocking turns running now, by task id.
        self._turns: dict[str, BlockingTurn] = {}

    async def _check_push_config(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> None:
        """A webhook given with the message must pass the push URL check before anything runs."""
        configuration = params.configuration
        if configuration.HasField("task_push_notification_config"):
            await self._push_allowed(configuration.task_push_notification_config.url, context)

    async def _push_allowed(self, url: str, context: ServerCallContext) -> None:
        """The webhook's URL passes the check, and the caller speaks A2A 1.0.

        a2a-sdk's sender posts A2A 1.0 ``StreamResponse`` objects whoever set the
        webhook; an A2A 0.3 receiver expects 0.3 objects, so a 0.3 caller is told
        push is not offered to it rather than sent what it cannot read.
        """
        if self._push_check is None:
            return
        if is_a2a_0_3(context):
            raise PushNotificationNotSupportedError(
                message="push notifications are offered to A2A 1.0 callers only (webhooks "
                "receive A2A 1.0 objects); set the webhook with A2A-Version: 1.0"
            )
        await self._push_check.require(url)

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        await self._push_allowed(params.url, context)
        result: TaskPushNotificationConfig = await super().on_create_task_push_notification_config(
            params, context
        )
        return result

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        stored = await self.task_store.get(params.id, context)
        task = stored.task if isinstance(stored, StoredTask) else stored
        if task is not None:
            skill_id = skill_of(task) or ""
            skill = self._registry.get(skill_id)
            base = self._registry.base_skills.get(skill_id)
            if (skill is not None and not skill.skill.interaction.cancellable) or (
                base is not None and not base.skill.cancellable
            ):
                raise TaskNotCancelableError(message=f"skill {skill_id!r} is not cancellable")
            turn = self._turns.get(params.id)
            if turn is not None and turn.executing:  # running on the blocking path
                return await self._cancel_blocking(turn, context)
            if turn is not None:
                # The executor has returned and its last save is under way: a cancel
                # now would change the answer but not the stored task.  Wait for the
                # save, then cancel the stored task as a2a-sdk does.
                await asyncio.wait({turn.done})
        result: Task | None = await super().on_cancel_task(params, context)
        return result

    @staticmethod
    async def _cancel_blocking(turn: BlockingTurn, context: ServerCallContext) -> Task:
        """What a2a-sdk's cancel of a task it runs answers: the task, CANCELED."""
        current = turn.events.task
        if current is not None and current.status.state in TERMINAL:
            raise TaskNotCancelableError
        try:
            result = await turn.cancel(context)
        except UnsupportedOperationError as exc:
            raise TaskNotCancelableError from exc
        if not isinstance(result, Task):  # as a2a-sdk's _cancel_local
            raise InternalError(message="Cancellation returned a message instead of a task.")
        return result

    async def _continue_context(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> None:
        """A follow-up Message that names its task but no context continues the task's context.

        a2a-sdk binds a task it loads from the store (after a restart, or on
        another replica than the one that started it) to a freshly generated
        context id when the Message names none, then refuses the executor's
        events, which carry the task's own context id.
        """
        message = params.message
        if message.task_id and not message.context_id:
            stored = await self.task_store.get(message.task_id, context)
            task = stored.task if isinstance(stored, StoredTask) else stored
            if task is not None:
                message.context_id = task.context_id

    async def _after_blocking_turn(self, task_id: str) -> None:
        """A request about a task still running on the blocking path waits for its end."""
        turn = self._turns.get(task_id) if task_id else None
        if turn is not None:
            await asyncio.wait({turn.done})

    def _takes_blocking_path(self, params: SendMessageRequest) -> bool:
        configuration = params.configuration
        return (
            self._blocking
            and not params.message.task_id
            and not configuration.return_immediately
            and not configuration.HasField("task_push_notification_config")
            and not lacks_required_field(params)
        )

    async def _send_blocking(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        """Run the turn on the blocking path (:mod:`~skillrack.serve.bindings.blocking`).

        Answers its final Task.
        """
        validate_history_length(params.configuration)
        request = await self._context_builder.build(
            params=params,
            task_id=None,
            context_id=params.message.context_id or None,
            task=None,
            context=context,
        )
        task_id = request.task_id
        assert task_id is not None
        store = self.task_store
        saves: Saves
        if isinstance(store, ClusterTaskStore):
            saves = VersionedSaves(store, context)
        else:
            assert isinstance(store, TaskStore)  # no other versioned store takes this path
            saves = Saves(store, context)
        turn = BlockingTurn(self.agent_executor, request, context, saves)
        self._turns[task_id] = turn
        run = turn.start()

        def finished(run: asyncio.Task[Task | Message]) -> None:
            self._turns.pop(task_id, None)
            if not run.cancelled():
                run.exception()  # retrieved even when the caller has gone

        run.add_done_callback(finished)
        # Shielded: a caller that goes away does not stop the task, as on a2a-sdk's path.
        result = await asyncio.shield(run)
        if isinstance(result, Message):  # a direct reply, returned as a2a-sdk returns it
            return result
        # Cluster mode: what the answer shows is committed first (a settled state is
        # normally committed by its own save; this also waits for a commit under way).
        await self._publish_pending()
        # A copy, as a2a-sdk answers with a copy of its task: upb lays a copied map (a Data
        # Part's members) out anew, and the answer must list them in the same order.
        answer = Task()
        answer.CopyFrom(result)
        return apply_history_length(answer, params.configuration)

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        if self._takes_blocking_path(params):
            return await self._send_blocking(params, context)
        await self._check_push_config(params, context)
        await self._after_blocking_turn(params.message.task_id)
        await self._continue_context(params, context)
        result: Message | Task = await super().on_message_send(params, context)
        await self._publish_pending()
        return result

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        await self._check_push_config(params, context)
        await self._after_blocking_turn(params.message.task_id)
        await self._continue_context(params, context)
        first = True
        async for event in super().on_message_send_stream(params, context):
            if first:
                await self._publish_pending()
                first = False
            yield event

    async def _publish_pending(self) -> None:
        """Commit a cluster store's in-progress saves before a client hears of the task.

        A client told of a task (``returnImmediately``, a stream's first
        event) may ask any replica about it next; a settled state is
        committed anyway (:class:`~skillrack.serve.stores.cluster.ClusterTaskStore`).
        """
        if isinstance(self.task_store, ClusterTaskStore):
            await self.task_store.commit()

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        turn = self._turns.get(params.id)
        if turn is not None and await self.task_store.get(params.id, context) is not None:
            # Running on the blocking path (the store lookup: the caller may see the task):
            # the task as it is, then its events until the run ends, as a2a-sdk streams them.
            tapped = turn.tap()
            if tapped is not None:
                snapshot, queue = tapped
                try:
                    yield snapshot
                    while (event := await queue.get()) is not None:
                        yield event
                finally:
                    turn.untap(queue)
                return
        await self._after_blocking_turn(params.id)
        async for event in super().on_subscribe_to_task(params, context):
            yield event


async def _json_http_error(request: Request, exc: Exception) -> JSONResponse:
    """Unknown routes and methods answer in the REST error form, not plain text."""
    status = getattr(exc, "status_code", 404)
    reason = "not found" if status == 404 else "method not allowed"
    names = {404: "NOT_FOUND", 405: "UNIMPLEMENTED"}
    return JSONResponse(
        {"error": {"code": status, "status": names.get(status, "NOT_FOUND"), "message": reason}},
        status_code=status,
    )


def _peer_tls(config: Config) -> dict[str, ClientTls]:
    """Each peer URL's TLS (``client_cert``, ``client_key``, ``ca_bundle``), checked to load.

    Connections are pooled per origin, so peers naming one origin must say the
    same: one with a certificate and one without would share it.
    """
    found: dict[str, ClientTls] = {}
    by_origin: dict[Origin, tuple[str, PeerTls]] = {}
    for name, url in config.peers.items():
        settings = config.peer_tls.get(name, PeerTls())
        seen = by_origin.setdefault(Origin.of(url), (name, settings))
        if seen[1] != settings:
            raise ConfigError(
                f"[peers.{seen[0]}] and [peers.{name}] name the same origin with different "
                "client_cert, client_key or ca_bundle: give both the same settings"
            )
        if name not in config.peer_tls:
            continue
        tls = ClientTls(
            settings.client_cert or None, settings.client_key or None, settings.ca_bundle or None
        )
        try:
            tls.context()
        except ValueError as exc:
            raise ConfigError(f"[peers.{name}]: {exc}") from None
        found[url] = tls
    return found


def _address_guard(config: Config, tls: Mapping[str, ClientTls] | None = None) -> AddressGuard:
    """Delegation connects only to vetted addresses (:mod:`skillrack.client.address_guard`).

    Each peer's URL, each origin its table allows, and its OAuth token URL, may
    reach what the operator's own address choice or its ``allow_loopback`` /
    ``allow_private`` allow.
    A peer's ``tls`` (its client certificate, its CA bundle) applies to its own
    origin only: another origin its card leads to gets no certificate.
    """
    destinations: list[tuple[str, AddressPolicy]] = []
    for name, url in config.peers.items():
        allowed = config.peer_addresses.get(name, PeerAddresses())
        oauth = config.peer_oauth.get(name)
        token_url = (oauth.token_url,) if oauth is not None else ()
        for destination in (url, *config.peer_allow_origins.get(name, ()), *token_url):
            policy = policy_for_url(
                destination,
                allow_loopback=allowed.allow_loopback,
                allow_private=allowed.allow_private,
                where=f"[peers.{name}]",
            )
            destinations.append((destination, policy))
    return AddressGuard.for_destinations(
        destinations,
        AddressPolicy(where="the [peers] table of the peer that led there"),
        tls={Origin.of(url): one.context() for url, one in (tls or {}).items()},
    )


def _peer_credentials(config: Config) -> dict[str, ClientCredentials]:
    """Each peer's ``oauth`` table as client credentials, by the peer's URL; secrets read here."""
    found: dict[str, ClientCredentials] = {}
    for name, oauth in config.peer_oauth.items():
        where = f"peers.{name}.oauth"
        if oauth.client_secret_file:
            path = config.base_dir / oauth.client_secret_file
            try:
                secret = path.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ConfigError(
                    f"{where}.client_secret_file: cannot read {path}: {exc.strerror or exc}"
                ) from None
        else:
            secret = os.environ.get(oauth.client_secret_env, "").strip()
        if not secret:
            raise ConfigError(f"{where}: the client secret is empty")
        try:
            creds = ClientCredentials(oauth.token_url, oauth.client_id, secret, oauth.scopes)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        url = config.peers[name]
        for other, known in found.items():  # tokens are per origin: one client per origin
            if Origin.of(other) == Origin.of(url) and known != creds:
                raise ConfigError(
                    f"{where}: peers {url} and {other} share the origin {Origin.of(url)} "
                    "but not their oauth table; give them the same one"
                )
        found[url] = creds
    return found


def _push(
    config: Config, store: PushNotificationConfigStore | None
) -> tuple[PushUrlCheck | None, PushDelivery | None]:
    """Push notifications when ``[server] push_notifications`` is on.

    See :mod:`skillrack.serve.bindings.push`.

    The webhook's address goes through the same outbound guard as delegation,
    with the ranges ``push_allow_loopback`` / ``push_allow_private`` allow (and
    plain ``http`` to loopback addresses only); the configs live in ``store``,
    beside the tasks.
    """
    server = config.server
    if not server.push_notifications or store is None:
        return None, None
    guard = AddressGuard(
        AddressPolicy(
            allow_loopback=server.push_allow_loopback,
            allow_private=server.push_allow_private,
            where="[server] (push_allow_loopback / push_allow_private)",
            http_loopback_only=True,
        )
    )
    check = PushUrlCheck(
        guard.vet, allow_loopback=server.push_allow_loopback, refused_names=METADATA_NAMES
    )
    delivery = PushDelivery(
        store,
        guard,
        check,
        attempts=server.push_attempts,
        timeout=server.push_timeout,
    )
    return check, delivery


def create_app(
    registry: Registry,
    config: Config,
    base_url: str,
    task_store: TaskStore | None = None,
    *,
    cluster: bool = False,
    listen_host: str | None = None,
    push_config_store: PushNotificationConfigStore | None = None,
    tls: TlsFiles | None = None,
    workers: int = 1,
    lean: bool = True,
) -> Starlette:
    """The composed agent as an ASGI app.

    Tasks go to ``task_store`` when one is given (the caller owns it), else to
    the store ``config.server.store`` names, opened here, initialized in the
    lifespan and disposed of at shutdown.  Push configs live beside the tasks:
    with a ``task_store`` of its own and ``[server] push_notifications`` on, the
    caller gives ``push_config_store`` too, or the app refuses to be built
    (a ``ConfigError``) rather than advertise push and deliver nothing.
    ``cluster`` runs a SQLite store in a2a-sdk's cluster mode, for several
    processes on one file; PostgreSQL always runs in it.  ``listen_host``
    (where uvicorn listens) chooses the default ``[server] allowed_hosts``
    (:func:`~skillrack.serve.middleware.host_allowlist.default_allowed_hosts`).
    With ``[server] grpc_port``, the lifespan also serves the gRPC binding on
    that port of ``listen_host`` (:mod:`skillrack.serve.bindings.grpc_server`), over
    the same request handler, with ``tls`` (the HTTPS files) when given;
    ``workers`` processes share that port.
    ``lean=False`` answers every SendMessage through a2a-sdk's own event path and
    JSON-RPC dispatcher (:mod:`skillrack.serve.bindings.blocking`,
    :mod:`skillrack.serve.bindings.jsonrpc`):
    the wire answer is the same, which the tests hold by comparing the two.
    """
    manager = registry.manager
    assert manager is not None, "a registry built from plugins carries its manager"
    signer = load_card_signer(config.signing, config.base_dir) if config.signing else None
    requirements = skill_requirements(config, registry)
    grpc_port = config.server.grpc_port
    card = build_card(registry, config, base_url, signer, requirements, grpc_port=grpc_port)
    peer_credentials = _peer_credentials(config)
    # Each peer's own origin, plus what its [peers] table allows (allow_origins).
    peer_origins = {config.peers[name]: o for name, o in config.peer_allow_origins.items()}
    peer_tls = _peer_tls(config)  # a certificate that does not load stops start-up here
    peers = Peers(
        config.peers,
        base_url,
        lambda: SkillClient(
            limits=config.limits,
            allow_origins=peer_origins,
            transport=_address_guard(config, peer_tls),
            tls=peer_tls,
            oauth=peer_credentials,
            oauth_transport=_address_guard(config, peer_tls),
        ),
    )
    storage: TaskStorage | None = None
    if task_store is None:
        spec = parse_store(config.server.store, config.base_dir)
        storage = open_storage(
            spec,
            owner_resolver=tenant_scope,
            cluster=cluster,
            memory_max_tasks=config.server.memory_max_tasks,
            memory_task_ttl=config.server.memory_task_ttl,
            push_encryption_key=load_push_key(
                config.server.push_encryption_key_file, config.base_dir
            ),
        )
    elif config.server.push_notifications and push_config_store is None:
        raise ConfigError(
            "[server] push_notifications is on, but the app was given its own task_store "
            "and no push_config_store: pass create_app(push_config_store=...) (configs live "
            "beside the tasks) or turn push notifications off"
        )
    # Approvals live where the tasks do when that is PostgreSQL, on the same connections.
    approvals = open_approvals(config, storage.engine if storage is not None else None)
    metrics = Metrics(registry)
    time_operations(storage.task_store if storage is not None else task_store, metrics)
    if isinstance(approvals, ApprovalStore):  # a file: counted at each scrape, synchronously
        metrics.count_at_scrape(
            "skillrack_approvals_waiting",
            "Approvals waiting for an operator (skillrack approvals list)",
            lambda: approvals.count(PENDING),
        )
    push_store = storage.push_config_store if storage is not None else push_config_store
    push_check, push_delivery = _push(config, push_store)
    # Per-caller limits: in this process, or in Redis shared by the replicas.
    limits = open_limits(config)
    handler = SkillrackRequestHandler(
        agent_executor=SkillExecutor(
            registry,
            manager,
            TracedDelegation(peers),  # a CLIENT span per call when tracing is on
            max_concurrent=config.server.max_concurrent_tasks,
            approvals=approvals,
            limits=limits,
            handler_timeout=config.server.handler_timeout,
            output_limits=OutputLimits(
                max_count=config.server.max_task_outputs,
                max_bytes=config.server.max_task_output_bytes,
            ),
            metrics=metrics,
            requirements=requirements,
        ),
        task_store=storage.task_store if storage is not None else task_store,
        event_stream=storage.event_stream if storage is not None else None,
        request_context_builder=(
            NewTaskNotice(storage.task_store)
            if storage is not None
            and isinstance(storage.task_store, SingleProcessTaskStore | ClusterTaskStore)
            else None
        ),
        agent_card=card,
        registry=registry,
        push_config_store=push_store if push_delivery else None,
        push_sender=push_delivery,
        push_check=push_check,
        blocking=lean,
    )
    builder = ContextBuilder()
    # Failed authentications per address, counted by the HTTP middleware and gRPC alike.
    failures = SlidingWindow(config.server.failed_auth_per_minute)
    card_endpoint = CardEndpoint.of(card, config.server.card_max_age)
    guard = OperatorGuard(manager)
    console = Console(
        ConsoleSources(
            registry=registry,
            config=config,
            card=card,
            signer_kid=signer.kid if signer is not None else None,
            store=(
                storage.spec.describe(cluster=storage.cluster)
                if storage is not None
                else "given by the embedding application"
            ),
            task_store=handler.task_store,
            approvals=approvals,
            guard=guard,
            hops=peers.hops.recent,
        )
    )
    routes: list[BaseRoute] = [
        Route(CARD_PATH, counted_card(card_endpoint.respond, metrics, "card"), methods=["GET"]),
        Route(HOPS_PATH, hops_endpoint(peers.hops.recent, guard), methods=["GET"]),
        Route(METRICS_PATH, metrics_route(metrics, guard), methods=["GET"]),
        *console.routes(),
    ]
    published = [card_endpoint]  # each gets its Last-Modified from the store at start-up
    if signer is not None:  # the card's jku: public, like the card
        jwks = jwks_endpoint(signer, config.server.card_max_age)
        routes.append(
            Route(JWKS_PATH, counted_card(jwks.respond, metrics, "jwks"), methods=["GET"])
        )
        published.append(jwks)
    # [server] a2a_0_3: a2a-sdk's 0.3 layer, the 0.3 JSON-RPC methods at the same endpoint
    # (message/send, ...) and the 0.3 HTTP+JSON routes under /v1, both into this handler.
    legacy = config.server.a2a_0_3
    routes += (jsonrpc_routes if lean else create_jsonrpc_routes)(
        handler, rpc_url=JSONRPC_PATH, context_builder=builder, enable_v0_3_compat=legacy
    )
    # Last: see the module docstring.
    routes += create_rest_routes(handler, context_builder=builder, enable_v0_3_compat=legacy)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        if storage is None:
            await approvals.initialize()
        else:
            try:
                await storage.start()
                for endpoint in published:
                    endpoint.published = await storage.first_published(
                        endpoint.etag, endpoint.published
                    )
                settled = await storage.settle_interrupted(fail_interrupted)
                await approvals.initialize()  # after the store: its database exists then
            except BaseException:
                await storage.close()  # the lock and the connections, even on a failed start
                raise
            if settled:
                logger.warning(
                    "task store: %d task(s) left running by a stopped process marked failed"
                    " (output_invalid): %s",
                    len(settled),
                    ", ".join(settled[:10]) + (" ..." if len(settled) > 10 else ""),
                )
        grpc_server = None
        try:
            if grpc_port:  # needs the grpc extra: imported only when served
                from skillrack.serve.bindings.grpc_server import GrpcLimits, start_grpc_server

                grpc_server = await start_grpc_server(
                    handler,
                    GrpcLimits(
                        manager=manager,
                        rate_per_minute=config.server.rate_per_minute,
                        counter=limits,
                        failures=failures,
                        max_parts=config.server.max_parts,
                        metrics=metrics,
                    ),
                    host=listen_host or "127.0.0.1",
                    port=grpc_port,
                    tls=tls,
                    max_message_bytes=config.server.max_body_bytes,
                    shared_port=workers > 1,
                )
            # uvicorn hands this state to each connection (skillrack.serve.bindings.connections).
            yield {HEADER_TIMEOUT_KEY: config.server.header_timeout}
        finally:
            if grpc_server is not None:  # first: its calls use the handler and the stores
                await grpc_server.stop(GRPC_STOP_GRACE_S)
            await handler.aclose()
            if push_delivery is not None:
                await push_delivery.aclose()
            await peers.aclose()
            await approvals.aclose()
            await limits.aclose()
            if storage is not None:
                await storage.close()
            if multiprocess_dir() is not None:  # this worker's live gauges end with it
                from prometheus_client import multiprocess

                multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

    public = {CARD_PATH, JWKS_PATH} if signer is not None else {CARD_PATH}
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: _json_http_error, 405: _json_http_error},
    )
    app.state.metrics = metrics
    # A POST to a path with a missing or extra slash must not be redirected (307).
    app.router.redirect_slashes = False
    # add_middleware wraps: the last added runs first.
    app.add_middleware(
        BodyGuard,
        max_bytes=config.server.max_body_bytes,
        max_depth=config.server.max_json_depth,
        max_parts=config.server.max_parts,
        forms=CONSOLE_PATH + "/",
    )
    app.add_middleware(BodyTimeout, seconds=config.server.body_timeout)
    app.add_middleware(
        RateLimit,
        per_minute=config.server.rate_per_minute,
        public=public,
        metrics=metrics,
        counter=limits,
    )
    app.add_middleware(AuthenticationGate, manager=manager, public=public, metrics=metrics)
    app.add_middleware(
        FailedAuthenticationLimit,
        per_minute=config.server.failed_auth_per_minute,
        public=public,
        metrics=metrics,
        failures=failures,
    )
    app.add_middleware(ExtensionEcho)
    app.add_middleware(ErrorSanitizer)
    if tracing_enabled():  # the caller's traceparent; not even read when nothing records spans
        app.add_middleware(TraceContext)
    allowed = config.server.allowed_hosts or default_allowed_hosts(base_url, listen_host)
    app.add_middleware(HostAllowlist, allowed=allowed)  # first: before the card, before all
    return app


#: Set by ``skillrack serve`` for the processes uvicorn starts (``--workers``): a JSON
#: object with ``config`` (a path or null), ``host``, ``port``, ``scheme``,
#: ``insecure_allow_all``, ``store`` (absolute, or null) and ``cluster``; and for gRPC
#: ``grpc_port``, ``workers``, ``ssl_certfile``, ``ssl_keyfile`` and ``ssl_client_ca``
#: (absolute, or null), ``ssl_client_auth``.
SERVE_ENV = "SKILLRACK_SERVE"


def app_from_environment() -> Starlette:
    """The app of one ``skillrack serve --workers N`` process (uvicorn's ``factory=True``).

    Rebuilds what ``cmd_serve`` built from the settings it left in
    ``SKILLRACK_SERVE``: the same configuration file, plugins and store, so
    every worker assembles the same documents and digests.
    """
    settings = json.loads(os.environ[SERVE_ENV])
    config = load_config(Path(settings["config"]) if settings["config"] else None)
    if settings.get("store"):
        config = with_store(config, settings["store"])
    host = compose_host(
        config,
        listen_host=settings["host"],
        insecure_allow_all=bool(settings["insecure_allow_all"]),
    )
    base_url = config.public_url(settings["host"], int(settings["port"]), settings["scheme"])
    configure_traces(
        os.environ
    )  # each worker exports its own spans (skillrack.serve.observability.traces)
    if settings.get("grpc_port"):
        config = with_grpc_port(config, int(settings["grpc_port"]))
    certfile = settings.get("ssl_certfile")
    app = create_app(
        host.registry,
        config,
        base_url,
        cluster=bool(settings["cluster"]),
        listen_host=settings["host"],
        tls=(
            TlsFiles(
                certfile,
                settings.get("ssl_keyfile"),
                settings.get("ssl_client_ca"),
                settings.get("ssl_client_auth", "required"),
            )
            if certfile
            else None
        ),
        workers=int(settings.get("workers", 1)),
    )
    freeze_startup_heap()  # a worker is a process skillrack serve owns, as the parent is
    return app


def with_store(config: Config, store: str) -> Config:
    """``config`` with another task store (``--store``, already resolved to an absolute path)."""
    return dataclasses.replace(config, server=dataclasses.replace(config.server, store=store))


def with_grpc_port(config: Config, port: int) -> Config:
    """``config`` serving gRPC on ``port`` (``--grpc-port``)."""
    return dataclasses.replace(config, server=dataclasses.replace(config.server, grpc_port=port))
