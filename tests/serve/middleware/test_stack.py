"""The middleware stack: declared once, installed on HTTP, run in the same order on gRPC."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pluggy
import pytest
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack.errors import StartupError
from skillrack.host.config import Config, ServerSettings
from skillrack.host.registry import Registry
from skillrack.serve.bindings import grpc_server
from skillrack.serve.bindings.grpc_server import GRPC_STEPS, SkillrackGrpcHandler
from skillrack.serve.middleware.stack import Layer, Stack, middleware_stack
from skillrack.serve.observability.metrics import Metrics
from skillrack.serve.server import build_server
from skillrack.serve.stores.counters import LocalCounter


def _manager() -> pluggy.PluginManager:
    """A real plugin manager, with one skill and no authentication plugin."""
    manager = registry_of([("tests", SkillsPlugin(simple_skill("echo")))]).manager
    assert manager is not None
    return manager


def stack(*, traced: bool = True) -> Stack:
    return middleware_stack(
        ServerSettings(),
        manager=_manager(),
        metrics=Metrics(),
        counter=LocalCounter(),
        public={"/.well-known/agent-card.json"},
        allowed_hosts=["localhost"],
        traced=traced,
        forms="/-/console/",
    )


def test_every_layer_applies_to_grpc_or_says_why() -> None:
    for layer in stack():
        if layer.not_on_grpc:
            assert layer.name not in GRPC_STEPS, f"{layer.name} says it is not on gRPC, has a step"
            assert len(layer.not_on_grpc) > 40, f"{layer.name}: say why, in a sentence"
        else:
            assert layer.name in GRPC_STEPS, f"{layer.name} applies to gRPC but has no step there"
    assert set(GRPC_STEPS) <= set(stack().names), "a gRPC step for a layer that does not exist"


def test_a_layer_without_a_grpc_step_stops_the_grpc_binding_from_being_built() -> None:
    class Audit:
        def __init__(self, app: Any) -> None:
            self.app = app

    layers = (*stack().layers, Layer("audit", Audit))
    with pytest.raises(StartupError, match=r"no step for middleware audit.*not_on_grpc"):
        SkillrackGrpcHandler(object(), Stack(layers))  # type: ignore[arg-type]


def test_a_layer_that_says_why_is_left_out_of_grpc() -> None:
    class Audit:
        def __init__(self, app: Any) -> None:
            self.app = app

    why = "an audit header that only HTTP callers send; gRPC callers send it as metadata"
    layers = (*stack().layers, Layer("audit", Audit, not_on_grpc=why))
    handler = SkillrackGrpcHandler(object(), Stack(layers))  # type: ignore[arg-type]
    assert "audit" not in [layer.name for layer in handler._layers]


@pytest.fixture
def registry() -> Registry:
    return registry_of([("tests", SkillsPlugin(simple_skill("echo")))])


def test_the_http_app_installs_the_stack_outermost_first(
    registry: Registry, tmp_path: Path
) -> None:
    config = Config(base_dir=tmp_path, server=ServerSettings(store="memory"))
    app = build_server(registry, config, "http://127.0.0.1:8000", listen_host="127.0.0.1")
    installed = [m.cls for m in app.user_middleware]  # Starlette keeps them outermost first
    expected = [layer.middleware for layer in stack(traced=False) if layer.enabled]
    assert installed == expected


class _Context:
    """What the admission reads of a grpc.aio.ServicerContext."""

    def peer(self) -> str:
        return "ipv4:127.0.0.1:5000"

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return [("a2a-version", "1.0"), ("traceparent", "00-" + "1" * 32 + "-" + "2" * 16 + "-01")]

    def auth_context(self) -> dict[str, Any]:
        return {}


async def test_grpc_admission_runs_each_layers_step_in_the_stacks_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[str] = []

    def recording(name: str) -> Any:
        real = GRPC_STEPS[name]

        async def step(handler: Any, layer: Layer, call: Any) -> None:
            ran.append(layer.name)
            await real(handler, layer, call)

        return step

    recorded = {name: recording(name) for name in GRPC_STEPS}
    monkeypatch.setattr(grpc_server, "GRPC_STEPS", recorded)
    the_stack = stack()
    handler = SkillrackGrpcHandler(object(), the_stack)  # type: ignore[arg-type]
    call = await handler._admit(_request(), _Context())  # type: ignore[arg-type]
    assert ran == [layer.name for layer in the_stack if layer.on_grpc]
    assert call.caller is not None and call.echo
    assert call.trace_carrier == {"traceparent": [_Context().invocation_metadata()[1][1]]}


def _request() -> Any:
    from a2a.types import GetTaskRequest

    return GetTaskRequest(id="t-1")


async def test_with_tracing_off_the_grpc_binding_leaves_the_trace_context_unread() -> None:
    handler = SkillrackGrpcHandler(object(), stack(traced=False))  # type: ignore[arg-type]
    call = await handler._admit(_request(), _Context())  # type: ignore[arg-type]
    assert call.trace_carrier == {}


async def test_a_refusal_on_one_binding_counts_on_the_other() -> None:
    """The failed-authentication window is the stack's: HTTP and gRPC count into one."""
    the_stack = stack()
    failures = the_stack.layer("failed_authentication_limit").options["failures"]
    for _ in range(ServerSettings().failed_auth_per_minute):
        failures.record("127.0.0.1")  # as the HTTP middleware records its 401s
    handler = SkillrackGrpcHandler(object(), the_stack)  # type: ignore[arg-type]
    with pytest.raises(grpc_server.CallRefused) as refused:
        await handler._admit(_request(), _Context())  # type: ignore[arg-type]
    assert refused.value.status == 429


def test_the_stack_settings_come_from_server_settings() -> None:
    settings = replace(ServerSettings(), rate_per_minute=7, max_parts=3)
    the_stack = middleware_stack(
        settings,
        manager=_manager(),
        metrics=Metrics(),
        counter=LocalCounter(),
        public=set(),
        allowed_hosts=["*"],
        traced=False,
        forms="/-/console/",
    )
    assert the_stack.layer("rate_limit").options["per_minute"] == 7
    assert the_stack.layer("body_guard").options["max_parts"] == 3
