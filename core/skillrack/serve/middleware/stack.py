"""The middleware in front of every binding, declared once, outermost first.

Each :class:`Layer` is one middleware: the ASGI class and its settings for the
HTTP bindings (JSON-RPC, HTTP+JSON, the card, the console), and what the gRPC
binding does in its place.  The HTTP app installs the layers in this order
(:func:`install`); the gRPC servicer
(:class:`~skillrack.serve.bindings.grpc_server.SkillrackGrpcHandler`) runs its
admission step of each layer in the same order, with the same settings, and
refuses to start when a layer that applies to gRPC has no step there.  A layer
that cannot apply to gRPC says why (:attr:`Layer.not_on_grpc`), and
``tests/serve/middleware/test_stack.py`` fails when one neither applies nor
says why.  So a new middleware is one entry here, and it cannot silently miss
a binding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pluggy
from starlette.applications import Starlette
from starlette.types import ASGIApp

from skillrack.host.config import ServerSettings
from skillrack.serve.middleware.authentication import AuthenticationGate
from skillrack.serve.middleware.body_guard import BodyGuard
from skillrack.serve.middleware.body_timeout import BodyTimeout
from skillrack.serve.middleware.drain import Drain, DrainState
from skillrack.serve.middleware.error_sanitizer import ErrorSanitizer
from skillrack.serve.middleware.extension_echo import ExtensionEcho
from skillrack.serve.middleware.failed_auth_limit import FailedAuthenticationLimit
from skillrack.serve.middleware.host_allowlist import HostAllowlist
from skillrack.serve.middleware.rate_limit import RateLimit
from skillrack.serve.middleware.trace_context import TraceContext
from skillrack.serve.observability.metrics import Metrics
from skillrack.serve.stores.counters import LimitCounter
from skillrack.serve.stores.sliding_window import SlidingWindow

#: The names of the layers, outermost first: what the gRPC admission's steps are keyed by.
HOST_ALLOWLIST = "host_allowlist"
TRACE_CONTEXT = "trace_context"
ERROR_SANITIZER = "error_sanitizer"
EXTENSION_ECHO = "extension_echo"
FAILED_AUTHENTICATION_LIMIT = "failed_authentication_limit"
AUTHENTICATION = "authentication"
RATE_LIMIT = "rate_limit"
BODY_TIMEOUT = "body_timeout"
BODY_GUARD = "body_guard"
DRAIN = "drain"


@dataclass(frozen=True)
class Layer:
    """One middleware, for every binding."""

    name: str
    #: The ASGI middleware class (``__init__(app, **options)``).
    middleware: Callable[..., ASGIApp]
    #: Its settings; the gRPC step reads the same ones.
    options: Mapping[str, Any] = field(default_factory=dict)
    #: Why the gRPC binding has no step for this layer; empty when it has one.
    not_on_grpc: str = ""
    #: False when the deployment leaves the layer out on every binding (tracing off).
    enabled: bool = True

    @property
    def on_grpc(self) -> bool:
        return self.enabled and not self.not_on_grpc


@dataclass(frozen=True)
class Stack:
    """The layers, outermost first, and the state they share across bindings."""

    layers: tuple[Layer, ...]

    def __iter__(self) -> Iterator[Layer]:
        return iter(self.layers)

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise LookupError(f"no middleware layer {name!r}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(layer.name for layer in self.layers)


def middleware_stack(
    server: ServerSettings,
    *,
    manager: pluggy.PluginManager,
    metrics: Metrics,
    counter: LimitCounter,
    public: set[str],
    allowed_hosts: Sequence[str],
    traced: bool,
    forms: str,
    signs_in: str = "",
    drain: DrainState | None = None,
) -> Stack:
    """Every middleware of the agent, outermost first, with the settings of ``[server]``.

    ``public`` are the paths any caller reads (the card, its JWKS); ``forms`` the
    path prefix whose POST bodies are HTML forms (the console); ``signs_in`` the path
    under which a request without credentials reaches the console's sign-in
    (:class:`~skillrack.serve.middleware.authentication.AuthenticationGate`); ``traced`` whether
    a tracer provider records spans (the caller's trace context is not even read
    otherwise); ``drain`` the state a stopping replica sets (a fresh one, never set,
    when not given).  Failed authentications are counted in one window that both
    bindings share, so failures on one block the address on both.
    """
    failures = SlidingWindow(server.failed_auth_per_minute)
    return Stack(
        (
            Layer(
                HOST_ALLOWLIST,
                HostAllowlist,
                {"allowed": tuple(allowed_hosts)},
                not_on_grpc=(
                    "a gRPC call's :authority is not checked against allowed_hosts: DNS "
                    "rebinding is a browser's attack and browsers do not speak gRPC "
                    "(docs/known-limits.md)"
                ),
            ),
            Layer(TRACE_CONTEXT, TraceContext, enabled=traced),
            Layer(ERROR_SANITIZER, ErrorSanitizer),
            Layer(EXTENSION_ECHO, ExtensionEcho),
            Layer(
                FAILED_AUTHENTICATION_LIMIT,
                FailedAuthenticationLimit,
                {
                    "per_minute": server.failed_auth_per_minute,
                    "public": public,
                    "metrics": metrics,
                    "failures": failures,
                },
            ),
            Layer(
                AUTHENTICATION,
                AuthenticationGate,
                {"manager": manager, "public": public, "metrics": metrics, "signs_in": signs_in},
            ),
            Layer(
                RATE_LIMIT,
                RateLimit,
                {
                    "per_minute": server.rate_per_minute,
                    "public": public,
                    "metrics": metrics,
                    "counter": counter,
                },
            ),
            Layer(
                BODY_TIMEOUT,
                BodyTimeout,
                {"seconds": server.body_timeout},
                not_on_grpc=(
                    "grpcio reads a request message whole before the servicer runs; a slow "
                    "sender is bounded by gRPC's own keepalive, not by body_timeout "
                    "(docs/known-limits.md)"
                ),
            ),
            Layer(
                BODY_GUARD,
                BodyGuard,
                {
                    "max_bytes": server.max_body_bytes,
                    "max_depth": server.max_json_depth,
                    "max_parts": server.max_parts,
                    "forms": forms,
                },
            ),
            Layer(DRAIN, Drain, {"state": drain if drain is not None else DrainState()}),
        )
    )


def install(app: Starlette, stack: Stack) -> None:
    """Wrap ``app`` in the stack's enabled layers, the first layer outermost."""
    for layer in reversed(stack.layers):  # add_middleware wraps: the last added runs first
        if layer.enabled:
            app.add_middleware(layer.middleware, **layer.options)
