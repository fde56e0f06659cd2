"""The one place the agent is put together: :func:`build_server`.

``skillrack serve`` (one process or ``--workers N``, through
:func:`server_from_environment`), the in-process agents of ``skillrack spec``
and the pytest plugin (:mod:`skillrack.ops.inprocess`), and the tests all call
:func:`build_server`, so what they run is what an operator runs.  It builds,
once: the Agent Card, the stores, the executor and the request handler every
binding calls (:mod:`skillrack.serve.bindings.request_handler`), the routes
(JSON-RPC at ``/`` first, the route of most requests; the card and its JWKS,
``/-/hops``, ``/metrics``, the console; HTTP+JSON last, because its
``/{tenant}`` mount shadows anything added later), the middleware stack every binding shares
(:mod:`skillrack.serve.middleware.stack`), and the lifespan that starts the
stores and, with ``[server] grpc_port``, the gRPC binding over the same
handler and stack.  Tasks are stored per tenant of the authenticated caller,
so another tenant's task answers as if it did not exist.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import PushNotificationConfigStore, TaskStore
from a2a.types import Task
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from skillrack.host.config import Config, ConfigError, load_config
from skillrack.host.registry import Registry
from skillrack.host.secrets import secret_values
from skillrack.host.startup import build_host
from skillrack.serve.bindings.card import (
    CARD_PATH,
    CardEndpoint,
    build_card,
    jwks_endpoint,
    load_card_signer,
)
from skillrack.serve.bindings.event_queues import use_asyncio_queues
from skillrack.serve.bindings.jsonrpc import jsonrpc_routes
from skillrack.serve.bindings.metrics_endpoint import METRICS_PATH, counted_card, metrics_route
from skillrack.serve.bindings.operator_endpoints import (
    HOPS_PATH,
    LIVEZ_PATH,
    READYZ_PATH,
    Check,
    hops_endpoint,
    livez,
    readyz_endpoint,
)
from skillrack.serve.bindings.outbound import delegation_peers
from skillrack.serve.bindings.outbound import push_delivery as outbound_push
from skillrack.serve.bindings.push import load_push_key
from skillrack.serve.bindings.request_handler import (
    ContextBuilder,
    SkillrackRequestHandler,
    caller_scope,
    tenant_scope,
)
from skillrack.serve.bindings.rest import rest_routes
from skillrack.serve.bindings.shutdown import GracefulStop
from skillrack.serve.bindings.stream_events import EventEncodings
from skillrack.serve.bindings.tls import TlsFiles
from skillrack.serve.console import CONSOLE_PATH, Console, ConsoleSources
from skillrack.serve.console.oidc_flow import CodeFlow, OidcClient
from skillrack.serve.console.revocations import open_revocations
from skillrack.serve.console.session import Sessions, load_secret
from skillrack.serve.execution.executor import SkillExecutor
from skillrack.serve.execution.outputs import OutputLimits
from skillrack.serve.execution.restarts import Restarts, restartable
from skillrack.serve.execution.traced_delegation import TracedDelegation
from skillrack.serve.middleware import (
    JSONRPC_PATH,
)
from skillrack.serve.middleware.authentication import Authenticator
from skillrack.serve.middleware.drain import DrainState
from skillrack.serve.middleware.host_allowlist import default_allowed_hosts
from skillrack.serve.middleware.stack import install, middleware_stack
from skillrack.serve.observability.logs import remember_secrets
from skillrack.serve.observability.metrics import Metrics, multiprocess_dir
from skillrack.serve.observability.sdk_spans import drop_sdk_spans
from skillrack.serve.observability.traces import configure as configure_traces
from skillrack.serve.observability.traces import enabled as tracing_enabled
from skillrack.serve.process import freeze_startup_heap, take_signal
from skillrack.serve.scope import HEADER_TIMEOUT_KEY
from skillrack.serve.security.approvals import PENDING, ApprovalStore, open_approvals
from skillrack.serve.security.operator_access import OperatorGuard
from skillrack.serve.security.requirements import skill_requirements
from skillrack.serve.stores.cluster import ClusterTaskStore
from skillrack.serve.stores.counters import RedisCounter, open_counter
from skillrack.serve.stores.leases import LeaseKeeper, replica_name
from skillrack.serve.stores.new_task_notice import NewTaskNotice
from skillrack.serve.stores.outages import watch_outages
from skillrack.serve.stores.storage import (
    SingleProcessTaskStore,
    TaskStorage,
    open_storage,
    parse_store,
)
from skillrack.serve.stores.timed import time_operations

logger = logging.getLogger(__name__)

#: Seconds running gRPC calls get to finish when the agent stops.
GRPC_STOP_GRACE_S = 5.0


async def _json_http_error(request: Request, exc: Exception) -> JSONResponse:
    """Unknown routes and methods answer in the REST error form, not plain text."""
    status = getattr(exc, "status_code", 404)
    reason = "not found" if status == 404 else "method not allowed"
    names = {404: "NOT_FOUND", 405: "UNIMPLEMENTED"}
    return JSONResponse(
        {"error": {"code": status, "status": names.get(status, "NOT_FOUND"), "message": reason}},
        status_code=status,
    )


def build_server(
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
    drain_on_sigterm: bool = False,
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
    ``drain_on_sigterm`` (``skillrack serve``, which owns its process): the first
    ``SIGTERM`` drains the agent before uvicorn stops it
    (:mod:`skillrack.serve.bindings.shutdown`).
    """
    manager = registry.manager
    assert manager is not None, "a registry built from plugins carries its manager"
    signer = load_card_signer(config.signing, config.base_dir) if config.signing else None
    requirements = skill_requirements(config, registry)
    grpc_port = config.server.grpc_port
    card = build_card(registry, config, base_url, signer, requirements, grpc_port=grpc_port)
    peers = delegation_peers(config, base_url)
    storage: TaskStorage | None = None
    if task_store is None:
        spec = parse_store(config.server.store, config.base_dir)
        storage = open_storage(
            spec,
            owner_resolver=tenant_scope,
            push_owner_resolver=caller_scope,
            cluster=cluster,
            memory_max_tasks=config.server.memory_max_tasks,
            memory_task_ttl=config.server.memory_task_ttl,
            push_encryption_key=load_push_key(
                config.server.push_encryption_key_file, config.base_dir
            ),
            task_lease_seconds=config.server.task_lease_seconds,
        )
    elif config.server.push_notifications and push_config_store is None:
        raise ConfigError(
            "[server] push_notifications is on, but the app was given its own task_store "
            "and no push_config_store: pass build_server(push_config_store=...) (configs live "
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
    push_check, push_delivery = outbound_push(config, push_store)
    # Per-caller limits: in this process, or in Redis shared by the replicas.
    limits = open_counter(config)
    if isinstance(limits, RedisCounter):
        limits.on_outage = metrics.limits_store_outage
    executor = SkillExecutor(
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
    )
    handler = SkillrackRequestHandler(
        agent_executor=executor,
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
    # A question asked with a deadline: at the deadline the handler's turn runs through here.
    executor.deadlines.bind(handler.resume_after_deadline)
    builder = ContextBuilder()
    card_endpoint = CardEndpoint.of(card, config.server.card_max_age)
    guard = OperatorGuard(manager)
    oidc_client = OidcClient.from_settings(config.first_party.get("oidc"), config.base_dir)
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
            sessions=Sessions(
                load_secret(config.server.console_secret_file, config.base_dir),
                lifetime=config.server.console_session_seconds,
                path=CONSOLE_PATH,
                revocations=open_revocations(approvals),  # sign-outs, beside the approvals
            ),
            authenticator=Authenticator(manager, metrics),
            base_url=base_url,
            oidc=CodeFlow(oidc_client) if oidc_client is not None else None,
        )
    )
    public = {CARD_PATH, LIVEZ_PATH, READYZ_PATH}
    if signer is not None:  # signing.py is imported (load_card_signer) once a key is configured
        from skillrack.protocol.signing import JWKS_PATH

        public.add(JWKS_PATH)
    drain = DrainState()
    drain.on_outage = metrics.task_store_outage
    drain.on_refusal = metrics.unavailable_refused
    stack_hosts = config.server.allowed_hosts or default_allowed_hosts(base_url, listen_host)
    mcp = None
    if config.server.mcp:  # needs the mcp extra: imported only when served
        from skillrack.serve.bindings.mcp_server import McpBinding

        mcp = McpBinding(
            registry,
            handler,
            allowed_hosts=stack_hosts,
            max_body_bytes=config.server.max_body_bytes,
            resource=base_url.rstrip("/"),
            card=card,
        )
        public |= mcp.public_paths()
    # Every binding's middleware, declared once (skillrack.serve.middleware.stack).
    stack = middleware_stack(
        config.server,
        manager=manager,
        metrics=metrics,
        counter=limits,
        public=public,
        allowed_hosts=stack_hosts,
        traced=tracing_enabled(),
        forms=CONSOLE_PATH + "/",
        signs_in=CONSOLE_PATH,
        drain=drain,
    )
    # [server] a2a_0_3: a2a-sdk's 0.3 layer, the 0.3 JSON-RPC methods at the same endpoint
    # (message/send, ...) and the 0.3 HTTP+JSON routes under /v1, both into this handler.
    legacy = config.server.a2a_0_3
    # JSON-RPC first: every A2A call over it is a POST to "/", which no other route matches,
    # so the router finds it at the first test instead of after the card, health, metrics
    # and console routes (about 1% of an invocation's CPU).
    # Each streamed update encoded once for all the streams of its task, on every binding.
    encodings = EventEncodings()
    routes: list[BaseRoute] = [
        *(
            jsonrpc_routes(
                handler,
                rpc_url=JSONRPC_PATH,
                context_builder=builder,
                enable_v0_3_compat=legacy,
                encodings=encodings,
            )
            if lean
            else create_jsonrpc_routes(
                handler, rpc_url=JSONRPC_PATH, context_builder=builder, enable_v0_3_compat=legacy
            )
        ),
        Route(CARD_PATH, counted_card(card_endpoint.respond, metrics, "card"), methods=["GET"]),
        Route(HOPS_PATH, hops_endpoint(peers.hops.recent, guard), methods=["GET"]),
        Route(LIVEZ_PATH, livez, methods=["GET"]),
        Route(
            READYZ_PATH,
            readyz_endpoint(
                _readiness_checks(storage, limits, registry, drain), lambda: drain.draining
            ),
            methods=["GET"],
        ),
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
    if mcp is not None:
        routes += mcp.routes()
    # Last: see the module docstring.
    routes += rest_routes(handler, builder, encodings, enable_v0_3_compat=legacy)

    cluster_store = (
        storage.task_store
        if storage is not None and isinstance(storage.task_store, ClusterTaskStore)
        else None
    )
    # Orphaned tasks of restartable skills run again here; parked ones get their deadline back.
    restarts = Restarts(
        registry,
        executor.deadlines,
        replica=cluster_store.replica if cluster_store is not None else replica_name(),
        limit=config.server.task_restarts,
        abandon=cluster_store.abandon if cluster_store is not None else None,
    )
    restarts.bind(handler.run_again)
    keeper = (
        LeaseKeeper(
            cluster_store.renew_leases,
            lambda: cluster_store.end_orphans(
                restarts.settle, restarts.took_over, metrics.orphans_ended
            ),
            lease_s=cluster_store.lease_s,
            reachable=lambda problem: (
                drain.store_up() if problem is None else drain.store_down(problem)
            ),
            draining=lambda: drain.draining,
        )
        if cluster_store is not None
        else None
    )
    if cluster_store is not None and storage is not None and storage.engine is not None:
        watch_outages(storage.engine, drain.store_down)
        drain.watched = True

    stopper = GracefulStop(
        drain,
        executor,
        replica=restarts.replica,
        grace=config.server.shutdown_grace,
        commit=cluster_store.commit if cluster_store is not None else None,
        give_up_leases=cluster_store.give_up_leases if cluster_store is not None else None,
    )
    if cluster_store is not None and config.server.task_restarts > 0:
        # A drain hands a restartable skill's running task to a survivor rather than fail it.
        executor.stopping.hands_over = lambda skill_id: restartable(registry, skill_id)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        # One process: the tasks to run again, and those whose deadlines to re-arm.
        taken_over: list[tuple[str, Task]] = []
        again: set[str] = set()

        def settle(task: Task) -> None:
            if restarts.settle_interrupted(task):
                taken_over.append(("", task))
                again.add(task.id)

        if storage is None:
            await approvals.initialize()
        else:
            try:
                await storage.start()
                for endpoint in published:
                    endpoint.published = await storage.first_published(
                        endpoint.etag, endpoint.published
                    )
                migrated = await storage.migrate_metadata_keys()
                settled = await storage.settle_interrupted(settle)
                taken_over += [("", task) for task in await storage.parked_with_deadline()]
                await approvals.initialize()  # after the store: its database exists then
            except BaseException:
                await storage.close()  # the lock and the connections, even on a failed start
                raise
            if migrated:
                logger.info(
                    "task store: %d stored task(s) had their metadata keys renamed "
                    "(skillrack_skill -> skillrackSkill, skillrack_started -> skillrackStarted)",
                    migrated,
                )
            if settled:  # written: counted as a survivor's sweep counts them
                restarted = sum(1 for task_id in settled if task_id in again)
                metrics.orphans_ended(len(settled) - restarted, restarted)
                logger.warning(
                    "task store: %d task(s) left running by a stopped process marked failed"
                    " (output_invalid) or, for restartable skills, run again: %s",
                    len(settled),
                    ", ".join(settled[:10]) + (" ..." if len(settled) > 10 else ""),
                )
        if keeper is not None and cluster_store is not None:
            keeper.start()
            logger.info(
                "task leases: this replica is %s (leases of %g s)",
                cluster_store.replica,
                cluster_store.lease_s,
            )
        grpc_server = None
        release_signal = None
        try:
            if drain_on_sigterm:
                loop = asyncio.get_running_loop()
                release_signal = take_signal(
                    signal.SIGTERM,
                    lambda proceed: loop.call_soon_threadsafe(stopper.begin, proceed),
                )
            if grpc_port:  # needs the grpc extra: imported only when served
                from skillrack.serve.bindings.grpc_server import start_grpc_server

                grpc_server = await start_grpc_server(
                    handler,
                    stack,
                    host=listen_host or "127.0.0.1",
                    port=grpc_port,
                    tls=tls,
                    max_message_bytes=config.server.max_body_bytes,
                    shared_port=workers > 1,
                    encodings=encodings,
                )
            restarts.took_over(taken_over)
            # The MCP transport's task group lives as long as the app (before the handler closes).
            async with mcp.running() if mcp is not None else contextlib.nullcontext():
                # uvicorn hands this state to each connection (serve.bindings.connections).
                yield {HEADER_TIMEOUT_KEY: config.server.header_timeout}
        finally:
            if release_signal is not None:
                release_signal()
            if grpc_server is not None:  # first: its calls use the handler and the stores
                await grpc_server.stop(GRPC_STOP_GRACE_S)
            await restarts.close()
            await executor.deadlines.close()
            await handler.aclose()
            if keeper is not None:
                await keeper.aclose()
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

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: _json_http_error, 405: _json_http_error},
    )
    app.state.metrics = metrics
    app.state.graceful_stop = stopper
    # A POST to a path with a missing or extra slash must not be redirected (307).
    app.router.redirect_slashes = False
    install(app, stack)
    return app


#: Set by ``skillrack serve`` for the processes uvicorn starts (``--workers``): a JSON
#: object with ``config`` (a path or null), ``host``, ``port``, ``scheme``,
#: ``insecure_allow_all``, ``store`` (absolute, or null) and ``cluster``; and for gRPC
#: ``grpc_port``, ``mcp``, ``workers``, ``ssl_certfile``, ``ssl_keyfile`` and ``ssl_client_ca``
#: (absolute, or null), ``ssl_client_auth``.
SERVE_ENV = "SKILLRACK_SERVE"


def _readiness_checks(
    storage: TaskStorage | None, limits: object, registry: Registry, drain: DrainState
) -> dict[str, Check]:
    """What ``/-/readyz`` asks: the task store, the limits store (Redis), the plugins.

    A task store that answers is marked up at once (``drain``), so that the
    replica serves as soon as it says it is ready, not at the lease keeper's
    next round.
    """
    checks: dict[str, Check] = {}
    engine = storage.engine if storage is not None else None
    if engine is not None:

        async def task_store() -> str | None:
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
            drain.store_up()
            return None

        checks["task_store"] = task_store
    if isinstance(limits, RedisCounter):
        counter = limits

        async def limits_store() -> str | None:
            await counter.ping()
            return None

        checks["limits_store"] = limits_store

    async def plugins() -> str | None:
        if not list(registry) and registry.failures:
            return f"no skill is served: {len(registry.failures)} plugin(s) failed to load"
        return None

    checks["plugins"] = plugins
    return checks


def server_from_environment() -> Starlette:
    """The app of one ``skillrack serve --workers N`` process (uvicorn's ``factory=True``).

    Rebuilds what ``cmd_serve`` built from the settings it left in
    ``SKILLRACK_SERVE``: the same configuration file, plugins and store, so
    every worker assembles the same documents and digests.
    """
    settings = json.loads(os.environ[SERVE_ENV])
    config = load_config(Path(settings["config"]) if settings["config"] else None)
    if settings.get("store"):
        config = with_store(config, settings["store"])
    remember_secrets(secret_values(config, extra_files=[settings.get("ssl_keyfile") or ""]))
    host = build_host(
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
    if settings.get("mcp"):
        config = with_mcp(config)
    certfile = settings.get("ssl_certfile")
    app = build_server(
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
        drain_on_sigterm=True,
    )
    own_process()  # a worker is a process skillrack serve owns, as the parent is
    return app


def own_process() -> None:
    """What ``skillrack serve`` makes of a process it owns, its app built (parent or worker).

    a2a-sdk's event queues on ``asyncio.Queue`` (:mod:`~skillrack.serve.bindings.event_queues`),
    its span wrappers off while its tracing is
    (:mod:`~skillrack.serve.observability.sdk_spans`), the start-up heap frozen and the
    collector on again (:func:`~skillrack.serve.process.freeze_startup_heap`).  A library
    embedding skillrack keeps a2a-sdk and its collector as they are.
    """
    use_asyncio_queues()
    drop_sdk_spans()
    freeze_startup_heap()


def with_store(config: Config, store: str) -> Config:
    """``config`` with another task store (``--store``, already resolved to an absolute path)."""
    return dataclasses.replace(config, server=dataclasses.replace(config.server, store=store))


def with_mcp(config: Config) -> Config:
    """``config`` serving the MCP endpoint too (``--mcp``)."""
    return dataclasses.replace(config, server=dataclasses.replace(config.server, mcp=True))


def with_grpc_port(config: Config, port: int) -> Config:
    """``config`` serving gRPC on ``port`` (``--grpc-port``)."""
    return dataclasses.replace(config, server=dataclasses.replace(config.server, grpc_port=port))
