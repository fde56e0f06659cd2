"""``skillrack serve``: the installed skills as an A2A 1.0 agent, under uvicorn.

Everything that can fail is done before the start-up banner: the
configuration, the plugins, the task store, the app (a missing signing key
fails there), the TLS files, and the listening socket, which this module
binds itself so that a taken port is one line naming it (exit 1) rather than
uvicorn's log line and its exit status 3.  The banner ("skillrack serving
at ...") is printed once uvicorn has run the app's start-up (the task store
opened) on that socket: a line that says the agent serves is true when it
appears.  With ``--workers N`` each worker builds its own app and, once its
start-up is complete, leaves a mark in a directory the parent made
(:class:`WorkerMarks`); the parent prints the banner when every worker it
runs has marked itself ready and the shared socket is listening, and stops
with one line (exit 1) when a worker's start-up failed.

Under ``--workers N`` on Linux each worker listens on a socket of its own
(:class:`ReusePortSockets`): ``SO_REUSEPORT`` lets the kernel spread new
connections over the workers by their address hash.  On one shared
listening socket (uvicorn's way), the worker that wakes first accepts every
connection waiting, so a burst of keep-alive clients all landed on one
worker while the other idled.  The parent keeps its bound socket (not
listening) so that the port stays claimed while workers restart.

``--metrics-port`` binds its port before the banner too, and serves
``GET /metrics`` from a thread
(:func:`~skillrack.serve.bindings.metrics_endpoint.serve_metrics_port`);
under ``--workers`` the parent serves it, adding up every worker's values
(a fresh ``PROMETHEUS_MULTIPROC_DIR``: :func:`~skillrack.serve.process.metrics_directory`).
``--log-format`` chooses text or JSON lines (:mod:`skillrack.serve.observability.logs`).

A start-up that fails inside the app's lifespan (the task store cannot be
opened) is reported as one line too: :class:`QuietStartup` keeps Starlette's
traceback out of uvicorn's log.  Exit statuses: :mod:`skillrack.cli.exits`.
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillrack.cli.exits import EXIT_OK, fail

if TYPE_CHECKING:
    import socket

    import uvicorn
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from skillrack.host.config import Config
    from skillrack.serve.bindings.tls import TlsFiles

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
#: ``--ssl-client-auth`` values (the same as [server] ssl_client_auth; host/config.py).
CLIENT_AUTH_MODES = ("required", "optional")
#: Seconds uvicorn waits for open connections once the agent has drained (SIGTERM).
STREAMS_CLOSED_AFTER_S = 5


def port_number(text: str) -> int:
    """A TCP port, 1 to 65535 (argparse type: anything else is a usage error)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (1 to 65535)")
    return value


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


class _ListenError(OSError):
    """The socket or TLS files could not be set up; the message names them (never leaves here)."""


def spread_by_kernel() -> bool:
    """Whether ``--workers`` gives each worker its own ``SO_REUSEPORT`` socket (Linux).

    Elsewhere ``SO_REUSEPORT`` either does not exist or does not balance
    (BSD and macOS hand every connection to one socket), so the workers
    share the parent's socket as uvicorn does.
    """
    import socket

    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def bind_listener(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A bound (not yet listening) TCP socket on ``host``:``port``, as uvicorn would bind it.

    ``reuse_port``: with ``SO_REUSEPORT``, so that the ``--workers``
    processes can bind sockets of their own to the same address
    (:class:`ReusePortSockets`); the kernel allows that only to sockets of
    the same user that set the option too.
    """
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise _ListenError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise _ListenError(
                f"port {port} on {host} is already in use: stop the server that holds it, "
                "or choose another --port"
            ) from None
        raise _ListenError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)  # --workers: the worker processes serve on this socket
    return sock


def client_tls(args: argparse.Namespace, config: Config) -> tuple[str | None, str]:
    """``(CA bundle path or None, "required" | "optional")``: options first, then ``[server]``."""
    if args.ssl_client_ca:
        ca: str | None = args.ssl_client_ca
    elif config.server.ssl_client_ca:
        ca = str(config.base_dir / config.server.ssl_client_ca)
    else:
        ca = None
    return ca, args.ssl_client_auth or config.server.ssl_client_auth


def tls_files(args: argparse.Namespace, config: Config) -> TlsFiles | None:
    """The HTTPS files and client CA, for the listeners that serve them besides uvicorn (gRPC)."""
    from skillrack.serve.bindings.tls import TlsFiles

    if not args.ssl_certfile:
        return None
    client_ca, client_auth = client_tls(args, config)
    return TlsFiles(
        certfile=args.ssl_certfile,
        keyfile=args.ssl_keyfile,
        client_ca=client_ca,
        client_auth=client_auth,
    )


def _absolute(path: str | None) -> str | None:
    return str(Path(path).resolve()) if path else None


def _grpc_problem(grpc_port: int, port: int, metrics_port: int) -> str | None:
    """Why the gRPC binding cannot be served as asked (one line), or None."""
    if grpc_port == port:
        return f"--grpc-port {grpc_port} is --port too: give gRPC another port"
    if grpc_port == metrics_port:
        return f"--grpc-port {grpc_port} is the metrics port too: give gRPC another port"
    import importlib.util

    if importlib.util.find_spec("grpc") is None:
        return (
            f"--grpc-port {grpc_port} needs gRPC support, which is not installed: "
            "pip install 'skillrack[grpc]'"
        )
    return None


def _check_tls(args: argparse.Namespace, client_ca: str | None) -> None:
    """Load the TLS files once here: a bad one is one line, not uvicorn's traceback."""
    import ssl

    if not args.ssl_certfile:
        if args.ssl_keyfile:
            raise _ListenError("--ssl-keyfile needs --ssl-certfile")
        if client_ca:
            raise _ListenError(
                "client certificates (--ssl-client-ca or [server] ssl_client_ca) need TLS: "
                "give --ssl-certfile and --ssl-keyfile"
            )
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(args.ssl_certfile, args.ssl_keyfile)
    except (OSError, ssl.SSLError) as exc:
        raise _ListenError(
            f"cannot load the TLS certificate {args.ssl_certfile}"
            f"{' or key ' + args.ssl_keyfile if args.ssl_keyfile else ''}: "
            f"{getattr(exc, 'strerror', None) or exc}"
        ) from None
    if client_ca:
        try:
            context.load_verify_locations(cafile=client_ca)
        except (OSError, ssl.SSLError) as exc:
            raise _ListenError(
                f"cannot load the client CA bundle {client_ca} (--ssl-client-ca or "
                f"[server] ssl_client_ca): {getattr(exc, 'strerror', None) or exc}"
            ) from None


class QuietStartup:
    """ASGI wrapper: a failed lifespan start-up is kept as one line, not logged as a traceback.

    Starlette sends ``lifespan.startup.failed`` with the formatted traceback,
    which uvicorn logs; this keeps the exception's last line (``Type: text``)
    for ``serve`` to print and sends the message without it.  ``on_startup``,
    if given, is called with ``None`` once start-up is complete, or with that
    line when it failed (a ``--workers`` worker tells the parent so).
    """

    def __init__(
        self, app: ASGIApp, on_startup: Callable[[str | None], None] | None = None
    ) -> None:
        self.app = app
        self.failure: str | None = None
        self.on_startup = on_startup

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def quiet(message: Message) -> None:
            if message["type"] in ("lifespan.startup.failed", "lifespan.shutdown.failed"):
                lines = [line for line in str(message.get("message", "")).splitlines() if line]
                self.failure = lines[-1].strip() if lines else "the app's start-up failed"
                message = {**message, "message": ""}
            if self.on_startup is not None and message["type"] == "lifespan.startup.complete":
                self.on_startup(None)
            elif self.on_startup is not None and message["type"] == "lifespan.startup.failed":
                self.on_startup(self.failure)
            await send(message)

        await self.app(scope, receive, quiet)


class WorkerMarks:
    """How ``serve --workers N`` workers tell the parent that their start-up is over.

    A directory the parent creates; each worker writes a file named after its
    process id once its lifespan start-up is complete (empty) or failed (the
    failure's one line).  Files, not a pipe: uvicorn starts the workers with
    ``multiprocessing``'s spawn, which passes them only what uvicorn chooses.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def mark(self, failure: str | None) -> None:
        """In a worker: this process's start-up is over (``failure`` is None when it succeeded)."""
        path = self.directory / str(os.getpid())
        path.with_suffix(".tmp").write_text(failure or "", encoding="utf-8")
        path.with_suffix(".tmp").replace(path)  # the parent never reads half a line

    def ready(self, pids: list[int | None]) -> bool:
        """In the parent: every one of ``pids`` has started successfully."""
        return all(pid is not None and self._read(pid) == "" for pid in pids)

    def failure(self) -> str | None:
        """In the parent: the first failed start-up's line, if a worker's start-up failed."""
        for path in sorted(self.directory.iterdir()):
            if path.suffix != ".tmp":
                text = path.read_text(encoding="utf-8")
                if text:
                    return text
        return None

    def _read(self, pid: int) -> str | None:
        try:
            return (self.directory / str(pid)).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None


def worker_app() -> ASGIApp:
    """The app of one ``serve --workers N`` process (uvicorn's factory), start-up kept quiet."""
    from skillrack.serve.process import pause_collector

    pause_collector()  # the imports and the app: server_from_environment freezes the heap
    from skillrack.errors import SkillrackError
    from skillrack.serve.server import SERVE_ENV, server_from_environment

    marks = json.loads(os.environ[SERVE_ENV]).get("marks")
    try:
        app = server_from_environment()
    except Exception as exc:  # the parent says why, in one line: no traceback from here
        if not marks:
            raise
        why = str(exc) if isinstance(exc, SkillrackError) else f"{type(exc).__name__}: {exc}"
        WorkerMarks(Path(marks)).mark(why)
        raise SystemExit(3) from None  # uvicorn's status for a worker that failed to start
    return QuietStartup(app, WorkerMarks(Path(marks)).mark if marks else None)


class ReusePortSockets:
    """A fresh ``SO_REUSEPORT`` socket on the parent's address for each worker started.

    uvicorn's supervisor hands every worker process it starts (at start-up,
    after a crash, on SIGHUP) the list it reads from its ``sockets``
    attribute; :func:`_supervise` makes that attribute this object's
    :meth:`take`.  The worker listens on the socket it was given; the
    parent closes its copy once the worker has it (:meth:`release`), so
    the socket dies with its worker and the kernel stops sending it
    connections.
    """

    def __init__(self, parent: socket.socket) -> None:
        self.parent = parent
        self._handed: list[socket.socket] = []

    def take(self) -> list[socket.socket]:
        import socket

        sock = socket.socket(self.parent.family, self.parent.type, self.parent.proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(self.parent.getsockname())
        except OSError:
            sock.close()
            raise
        sock.set_inheritable(True)
        self._handed.append(sock)
        return [sock]

    def release(self) -> None:
        """Close the parent's copies of the sockets handed out (each started worker has its own)."""
        for sock in self._handed:
            sock.close()
        self._handed.clear()


def _listening(sock: socket.socket) -> bool:
    """Whether a worker has started listening on the socket the parent bound and shares."""
    import socket

    option = getattr(socket, "SO_ACCEPTCONN", None)
    if option is None:  # pragma: no cover - not on Linux or macOS
        return True
    return bool(sock.getsockopt(socket.SOL_SOCKET, option))


def _supervise(
    config: uvicorn.Config,
    sock: socket.socket,
    marks: WorkerMarks,
    announce: Callable[[], None],
    *,
    spread: bool = False,
) -> str | None:
    """Run the workers until stopped; None if they all started, else why they did not.

    With ``spread`` (:func:`spread_by_kernel`) each worker gets a socket of
    its own (:class:`ReusePortSockets`); a worker is then listening once
    uvicorn's health check says its server has started.
    """
    from uvicorn.supervisors import Multiprocess

    own = ReusePortSockets(sock) if spread else None

    class AnnouncingSupervisor(Multiprocess):
        """uvicorn's supervisor, announcing once, when every worker is ready."""

        announced = False
        failure: str | None = None

        @property
        def sockets(self) -> list[socket.socket]:
            # Read once for each worker it starts, just before it starts it.
            return own.take() if own is not None else [sock]

        @sockets.setter
        def sockets(self, value: list[socket.socket]) -> None:
            pass  # the parent's socket, known already

        def keep_subprocess_alive(self) -> None:
            if own is not None:
                own.release()  # every socket handed out went to a worker started since
            super().keep_subprocess_alive()  # uvicorn's loop calls this every 0.5 s
            if self.announced or self.should_exit.is_set():
                return
            self.failure = marks.failure()
            if self.failure is not None:  # every restart would fail the same way
                self.should_exit.set()
            elif marks.ready([process.pid for process in self.processes]) and (
                all(process.is_ready(timeout=1) for process in self.processes)
                if own is not None
                else _listening(sock)
            ):
                self.announced = True
                announce()

    supervisor = AnnouncingSupervisor(config, sockets=[sock])
    try:
        supervisor.run()
    finally:
        if own is not None:
            own.release()
    if supervisor.announced:
        return None
    return supervisor.failure or marks.failure() or "the workers stopped before they were ready"


def _announcing_server(config: uvicorn.Config, announce: Callable[[], None]) -> uvicorn.Server:
    """uvicorn's server, calling ``announce`` once start-up is complete on the bound socket."""
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if not self.should_exit:
                announce()

    return AnnouncingServer(config)


def cmd_serve(args: argparse.Namespace) -> int:
    from skillrack.host.config import load_config

    config = load_config(Path(args.config) if args.config else None)
    if args.workers > 1:  # before any worker starts: they add their values up in it
        import contextlib

        from skillrack.serve.process import console_secret_file, metrics_directory

        with metrics_directory(os.environ), contextlib.ExitStack() as shared:
            if not config.server.console_secret_file:  # one secret for every worker's console
                shared.enter_context(console_secret_file(os.environ))
            return _serve(args, config)
    return _serve(args, config)


def _serve(args: argparse.Namespace, config: Config) -> int:
    import asyncio
    import contextlib
    import logging.config
    import ssl

    import uvicorn

    from skillrack.errors import StartupError
    from skillrack.host.secrets import secret_values
    from skillrack.host.startup import build_host
    from skillrack.serve.bindings.card import load_card_signer
    from skillrack.serve.bindings.connections import HeaderDeadlineProtocol
    from skillrack.serve.bindings.metrics_endpoint import exposition_registry, serve_metrics_port
    from skillrack.serve.middleware.host_allowlist import default_allowed_hosts
    from skillrack.serve.observability.logs import log_config, remember_secrets
    from skillrack.serve.observability.metrics import Metrics
    from skillrack.serve.observability.traces import configure as configure_traces
    from skillrack.serve.observability.traces import describe as describe_traces
    from skillrack.serve.process import describe_tracing, raise_open_files
    from skillrack.serve.security.approvals import PENDING, ApprovalStore, approvals_location
    from skillrack.serve.server import (
        SERVE_ENV,
        build_server,
        own_process,
        with_grpc_port,
        with_mcp,
        with_store,
    )
    from skillrack.serve.stores.counters import check_counter_store, counter_location
    from skillrack.serve.stores.storage import parse_store, prepare

    client_ca, client_auth = client_tls(args, config)
    if "mtls" in config.first_party and not client_ca:
        return fail(
            "[plugins.mtls] maps client certificates, but serve asks for none: set [server] "
            "ssl_client_ca (or --ssl-client-ca) and serve TLS with --ssl-certfile"
        )
    try:  # the TLS files first: a bad one is one line before anything slow starts
        _check_tls(args, client_ca)
    except _ListenError as exc:
        return fail(str(exc))
    log_format = args.log_format or config.server.log_format
    # Now, so that the lines of start-up (plugins, store) are in the chosen format too.
    logging.config.dictConfig(log_config(log_format, args.log_level))
    if args.store:  # a relative path on the command line is relative to the working directory
        config = with_store(config, parse_store(args.store, Path.cwd()).canonical)
    if args.grpc_port:
        config = with_grpc_port(config, args.grpc_port)
    if args.mcp:
        config = with_mcp(config)
    if config.server.mcp and importlib.util.find_spec("mcp") is None:
        return fail(
            "--mcp ([server] mcp) needs the MCP SDK, which is not installed: "
            "pip install 'skillrack[mcp]'"
        )
    # From here no log line holds a secret of the configuration (the log filter masks them).
    remember_secrets(secret_values(config, extra_files=[args.ssl_keyfile or ""]))
    grpc_port = config.server.grpc_port
    if grpc_port:
        problem = _grpc_problem(
            grpc_port, args.port, args.metrics_port or config.server.metrics_port
        )
        if problem:
            return fail(problem)
    store = parse_store(config.server.store, config.base_dir)
    if args.workers > 1 and not store.shareable:
        return fail(
            f"--workers {args.workers} needs a store the workers share (sqlite:///PATH or "
            "postgresql+asyncpg://...): with --store memory each worker would hold its own tasks"
        )
    cluster = args.workers > 1 or store.kind == "postgresql"
    host = build_host(config, listen_host=args.host, insecure_allow_all=args.insecure_allow_all)
    registry = host.registry
    asyncio.run(prepare(store, cluster=cluster))
    asyncio.run(check_counter_store(config))  # a Redis limits store answers, or one line
    scheme = "https" if args.ssl_certfile else "http"
    base_url = config.public_url(args.host, args.port, scheme)
    try:  # the OTEL_* variables; each worker configures its own (server_from_environment)
        traces = configure_traces(os.environ) if args.workers == 1 else describe_traces(os.environ)
    except StartupError as exc:
        return fail(str(exc))
    app: QuietStartup | None = None
    served_metrics: Metrics | None = None
    if args.workers == 1:
        agent = build_server(
            registry,
            config,
            base_url,
            cluster=cluster,
            listen_host=args.host,
            tls=tls_files(args, config),
            drain_on_sigterm=True,
        )
        served_metrics = agent.state.metrics
        app = QuietStartup(agent)
    elif config.signing:  # each worker builds its app; a missing key must fail here, once
        load_card_signer(config.signing, config.base_dir)
    metrics_port = args.metrics_port or config.server.metrics_port
    if metrics_port and metrics_port == args.port:
        return fail(f"--metrics-port {metrics_port} is --port too: give the metrics another port")
    if served_metrics is None:  # the parent of the workers: their files, the approval store
        served_metrics = Metrics()
        if store.kind != "postgresql":  # a file (in PostgreSQL they are not counted yet)
            approvals = ApprovalStore(config.base_dir / config.server.approvals_store)
            served_metrics.count_at_scrape(
                "skillrack_approvals_waiting",
                "Approvals waiting for an operator (skillrack approvals list)",
                lambda: approvals.count(PENDING),
            )
    try:
        spread = args.workers > 1 and spread_by_kernel()
        sock = bind_listener(args.host, args.port, reuse_port=spread)
    except _ListenError as exc:
        return fail(str(exc))
    metrics_server = None
    if metrics_port:
        try:
            metrics_server, _ = serve_metrics_port(
                args.host, metrics_port, lambda: exposition_registry(served_metrics)
            )
        except OSError as exc:
            sock.close()
            reason = (
                "is already in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
            )
            return fail(
                f"--metrics-port {metrics_port} on {args.host}: {reason}; choose another port"
            )

    from skillrack.serve.bindings.metrics_endpoint import metrics_access
    from skillrack.serve.observability.logs import banner_printer

    open_files = raise_open_files(config.server.max_connections)  # workers inherit it
    say = banner_printer(log_format)

    def announce() -> None:
        say(f"skillrack serving at {base_url} (card: {base_url}/.well-known/agent-card.json)")
        for skill in registry:
            say(
                f"  advertised {skill.skill_id} {skill.skill.version} {skill.interface_digest}"
                f" (plugin {skill.plugin})"
            )
        for refused in registry.refused:
            say(f"  REFUSED {refused}")
        for failure in registry.failures:
            say(f"  FAILED plugin {failure.name}: {failure.reason}")
        if host.development_policy:
            say(f"  WARNING: development policy: {host.development_policy}")
        say(f"  task store: {store.describe(cluster=cluster)}")
        # Beside the tasks in PostgreSQL; else a SQLite file, even under --store memory:
        # pending approvals must survive a restart.
        say(f"  approvals store: {approvals_location(config)}")
        say(f"  limits counted in: {counter_location(config)} ([server] limits_store)")
        say(f"  a2a-sdk tracing: {describe_tracing()}")
        if open_files:
            say(f"  {open_files}")
        say(f"  traces: {traces}")
        allowed = config.server.allowed_hosts or default_allowed_hosts(base_url, args.host)
        say(f"  allowed hosts: {', '.join(allowed)} (others get 421; [server] allowed_hosts)")
        proxies = ", ".join(config.server.forwarded_allow_ips) or "nobody"
        say(f"  X-Forwarded-For trusted from: {proxies} ([server] forwarded_allow_ips)")
        if config.server.a2a_0_3:
            say("  A2A versions: 1.0 and 0.3 (a2a-sdk's compatibility layer; [server] a2a_0_3)")
        if config.server.push_notifications:
            sealed = config.server.push_encryption_key_file
            say(
                "  push notifications: on, configs "
                + (f"encrypted with {sealed}" if sealed else "stored in clear")
                + " ([server] push_encryption_key_file)"
            )
        if client_ca:
            say(f"  client certificates: {client_auth}, verified against {client_ca}")
        if args.workers > 1:
            how = "SO_REUSEPORT: the kernel spreads connections" if spread else "one shared socket"
            say(f"  workers: {args.workers} ({how})")
        if grpc_port:
            shown = f"[{args.host}]" if ":" in args.host else args.host
            secured = "TLS, the HTTPS certificate" if args.ssl_certfile else "plaintext"
            say(f"  gRPC: {shown}:{grpc_port} ({secured}; [server] grpc_port)")
        if config.server.mcp:
            say(f"  MCP: {base_url}/mcp (Streamable HTTP, same authentication; [server] mcp)")
        if metrics_port:
            say(f"  metrics: http://{args.host}:{metrics_port}/metrics (no authentication)")
        else:
            say(f"  metrics: {base_url}/metrics ({metrics_access(registry)})")
        sys.stdout.flush()  # start-up lines reach a piped log at once

    options: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
        "log_config": log_config(log_format, args.log_level),
        "ssl_certfile": args.ssl_certfile,
        "ssl_keyfile": args.ssl_keyfile,
        # OpenSSL verifies client certificates in the handshake; HeaderDeadlineProtocol hands
        # the verified one to the app (uvicorn puts none in the scope).
        "ssl_ca_certs": client_ca,
        "ssl_cert_reqs": (
            ssl.CERT_NONE
            if not client_ca
            else ssl.CERT_REQUIRED
            if client_auth == "required"
            else ssl.CERT_OPTIONAL
        ),
        # Only [server] forwarded_allow_ips name the client (uvicorn's default trusts loopback).
        "proxy_headers": bool(config.server.forwarded_allow_ips),
        "forwarded_allow_ips": list(config.server.forwarded_allow_ips),
        # uvicorn logs access lines at INFO: below it, skip building them at all.
        "access_log": args.log_level in ("info", "debug"),
        # h11 with a deadline on request headers, which uvicorn lacks ([server] header_timeout).
        "http": HeaderDeadlineProtocol,
        # After the drain (skillrack.serve.bindings.shutdown) only streams of tasks other
        # replicas run are left open: they are cut this long after (clients resubscribe).
        "timeout_graceful_shutdown": STREAMS_CLOSED_AFTER_S,
        # [server] max_connections: one more request (or connection) is answered 503.
        "limit_concurrency": config.server.max_connections,
    }
    own_process()  # a2a-sdk lighter, and the collector on again (launch.py paused it); workers too
    try:
        if app is None:
            import tempfile

            with tempfile.TemporaryDirectory(prefix="skillrack-workers-") as marks:
                # Each worker is a process of its own that builds the app again (same
                # configuration, plugins and store) from what is left here.
                os.environ[SERVE_ENV] = json.dumps(
                    {
                        "config": str(Path(args.config).resolve()) if args.config else None,
                        "host": args.host,
                        "port": args.port,
                        "scheme": scheme,
                        "insecure_allow_all": args.insecure_allow_all,
                        "store": store.canonical,
                        "cluster": cluster,
                        "marks": marks,
                        "grpc_port": grpc_port,
                        "mcp": config.server.mcp,
                        "workers": args.workers,
                        "ssl_certfile": _absolute(args.ssl_certfile),
                        "ssl_keyfile": _absolute(args.ssl_keyfile),
                        "ssl_client_ca": _absolute(client_ca),
                        "ssl_client_auth": client_auth,
                    }
                )
                workers = uvicorn.Config(
                    f"{__name__}:worker_app", factory=True, workers=args.workers, **options
                )
                failure = _supervise(
                    workers, sock, WorkerMarks(Path(marks)), announce, spread=spread
                )
            if failure is not None:
                return fail(f"the agent did not start: {failure}")
            return EXIT_OK
        server = _announcing_server(uvicorn.Config(app, **options), announce)
        try:
            server.run(sockets=[sock])
        except SystemExit:  # uvicorn's own exit when the app's start-up failed
            pass
        except KeyboardInterrupt:  # Ctrl-C is how a server is stopped
            return EXIT_OK
        if not server.started:
            return fail(f"the agent did not start: {app.failure or 'see the log above'}")
        return EXIT_OK
    finally:
        sock.close()
        if metrics_server is not None:
            with contextlib.suppress(Exception):
                metrics_server.shutdown()
                metrics_server.server_close()


def add_commands(sub: Any) -> None:
    """Add ``serve`` to the ``skillrack`` sub-command parser."""
    p = sub.add_parser("serve", help="serve the installed skills as an A2A 1.0 agent")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on; off loopback, a policy or --insecure-allow-all is needed",
    )
    p.add_argument("--port", type=port_number, default=8000, help="TCP port to listen on")
    p.add_argument("--config", help="TOML configuration (default: embedded defaults)")
    p.add_argument("--ssl-certfile", metavar="PEM", help="TLS certificate; serves HTTPS")
    p.add_argument("--ssl-keyfile", metavar="PEM", help="TLS private key of --ssl-certfile")
    p.add_argument(
        "--ssl-client-ca",
        metavar="PEM",
        help="ask TLS clients for a certificate and verify it against the CAs in PEM "
        "(default: [server] ssl_client_ca, else none is asked for)",
    )
    p.add_argument(
        "--ssl-client-auth",
        choices=CLIENT_AUTH_MODES,
        help="required: refuse a TLS client without a valid certificate in the handshake; "
        "optional: let it authenticate otherwise (default: [server] ssl_client_auth, "
        "else required)",
    )
    p.add_argument(
        "--insecure-allow-all",
        action="store_true",
        help="without a policy, allow every call even on a non-loopback address",
    )
    p.add_argument("--log-level", default="info", choices=LOG_LEVELS, help="the log's level")
    p.add_argument(
        "--log-format",
        choices=("text", "json"),
        help="text, or one JSON object per line (default: [server] log_format, else text)",
    )
    p.add_argument(
        "--metrics-port",
        type=port_number,
        metavar="PORT",
        help="also serve GET /metrics alone, without authentication, on this port of --host "
        "(default: [server] metrics_port, else none: /metrics on the agent's port, operators only)",
    )
    p.add_argument(
        "--grpc-port",
        type=port_number,
        metavar="PORT",
        help="also serve A2A's gRPC binding on this port of --host, with the same "
        "authentication, limits and TLS (default: [server] grpc_port, else none; "
        "needs pip install 'skillrack[grpc]')",
    )
    p.add_argument(
        "--mcp",
        action="store_true",
        help="also serve every skill as a Model Context Protocol tool at /mcp (Streamable "
        "HTTP), with the same authentication, policy, approvals and limits (default: "
        "[server] mcp; needs pip install 'skillrack[mcp]')",
    )
    p.add_argument(
        "--store",
        metavar="URL",
        help="where tasks are kept: sqlite:///PATH (default: [server] store, else "
        "sqlite:///skillrack-tasks.db), memory, or postgresql+asyncpg://USER@HOST:PORT/DB",
    )
    p.add_argument(
        "--workers",
        type=positive,
        default=1,
        metavar="N",
        help="serve from N processes sharing the store (a SQLite file or PostgreSQL)",
    )
    p.set_defaults(func=cmd_serve)


__all__ = [
    "QuietStartup", "ReusePortSockets", "WorkerMarks", "add_commands", "bind_listener",
    "client_tls", "cmd_serve", "tls_files", "port_number", "positive", "spread_by_kernel",
    "worker_app",
]  # fmt: skip
