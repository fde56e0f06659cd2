"""``GET /metrics``: the Prometheus exposition, who may read it, and ``--metrics-port``.

The exposition is the text format, or OpenMetrics when the scraper's
``Accept`` asks for it (prometheus-client's ``choose_encoder``).  With several
worker processes (``PROMETHEUS_MULTIPROC_DIR`` set) every scrape adds up the
files of all of them, so whichever worker answers, the numbers are the agent's.

Who may read it on the agent's own port is the rule of the operations
endpoints (:class:`~skillrack.serve.security.operator_access.OperatorGuard`): without an
authentication plugin, loopback clients only (a development agent on
``127.0.0.1``); with one, a caller with the ``operator`` role.  The metrics
carry no tenant, caller or argument, only agent-wide counts by skill, so
every operator reads the same page.  The page is rendered in a worker
thread, not on the event loop, so a scrape does not stall the requests being
served (prometheus-client's values are read under their own locks).
``--metrics-port`` (or ``[server]
metrics_port``) serves ``/metrics`` alone on another port of the same host,
without authentication, for a scraper the network lets in: see
:func:`serve_metrics_port`.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import ThreadingWSGIServer, choose_encoder, make_wsgi_app
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from skillrack.serve.observability.metrics import Metrics, multiprocess_dir
from skillrack.serve.security.operator_access import OperatorGuard


def metrics_access(registry: Any) -> str:
    """Who may read ``/metrics`` on the agent's port, for ``serve``'s banner."""
    manager = registry.manager
    if manager is not None and manager.hook.authenticate.get_hookimpls():
        return "callers with the operator role, authenticated as any call"
    return "loopback clients only, no authentication plugin configured"


#: Where the exposition is served, on the agent's port and on ``--metrics-port``.
METRICS_PATH = "/metrics"


def exposition_registry(metrics: Metrics | None) -> Any:
    """What a scrape reads: this process's registry, or every process's files.

    A multiprocess scrape also reads ``metrics``' collectors computed at
    scrape time (the approvals waiting), which are not kept in files.
    """
    path = multiprocess_dir()
    if path is None and metrics is not None:
        return metrics.registry
    registry = CollectorRegistry()
    if path is not None:
        MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]
    for collector in metrics.at_scrape if metrics is not None else ():
        registry.register(collector)
    return registry


def render(registry: Any, accept: str | None) -> tuple[bytes, str]:
    """The exposition of ``registry`` in the format ``accept`` asks for, and its media type."""
    encoder, media_type = choose_encoder(accept or "")
    return encoder(registry), media_type


def metrics_route(
    metrics: Metrics, guard: OperatorGuard
) -> Callable[[Request], Awaitable[Response]]:
    """``GET /metrics`` on the agent's port, guarded like the operations endpoints."""

    async def endpoint(request: Request) -> Response:
        refusal = guard.refusal(request)
        if refusal is not None:
            return refusal
        # Off the event loop: a scrape walks every series (and, under --workers, reads
        # every worker's files), which must not hold up the invocations meanwhile.
        body, media_type = await run_in_threadpool(
            lambda: render(exposition_registry(metrics), request.headers.get("accept"))
        )
        return Response(body, headers={"Content-Type": media_type})

    return endpoint


def counted_card(
    respond: Callable[[Request], Awaitable[Response]], metrics: Metrics, document: str
) -> Callable[[Request], Awaitable[Response]]:
    """The card (or JWKS) endpoint, counting full answers and 304s."""

    async def endpoint(request: Request) -> Response:
        response = await respond(request)
        metrics.card_requested(document, not_modified=response.status_code == 304)
        return response

    return endpoint


class _QuietHandler(WSGIRequestHandler):
    """No access line on stderr per scrape."""

    def log_message(self, format: str, *args: Any) -> None:
        return


def serve_metrics_port(
    host: str, port: int, registry: Callable[[], Any]
) -> tuple[ThreadingWSGIServer, threading.Thread]:
    """Serve ``/metrics`` (and nothing else: 404) on ``host``:``port`` from a daemon thread.

    ``registry`` is called per scrape (a multiprocess scrape reads the files
    anew).  A thread, not another uvicorn server, so that the parent of
    ``--workers`` (which serves no request itself) can run it too.  Raises
    ``OSError`` when the port cannot be bound.
    """

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != METRICS_PATH or environ.get("REQUEST_METHOD") not in (
            "GET",
            "HEAD",
        ):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found\n"]
        exposition: Callable[..., Iterable[bytes]] = make_wsgi_app(registry())
        return exposition(environ, start_response)

    server = make_server(host, port, app, ThreadingWSGIServer, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="skillrack-metrics", daemon=True)
    thread.start()
    return server, thread


__all__ = [
    "METRICS_PATH",
    "exposition_registry",
    "metrics_access",
    "metrics_route",
    "render",
    "serve_metrics_port",
]
