"""OpenTelemetry traces (issue 16, item 2): stage spans, attributes, one trace across two agents.

The agents run in this process (uvicorn threads, :mod:`helpers.agent_harness`)
and record into one in-memory exporter, installed with
:func:`skillrack.serve.observability.traces.install` rather than as OpenTelemetry's global
provider (which can be set once per process and would trace every later test).
The test plays the caller: it sends a W3C ``traceparent`` of its own, as a
traced client would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc.aio
import httpx
import pytest
from a2a.types import SendMessageRequest, a2a_pb2_grpc
from google.protobuf import json_format
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.served_process import digests
from helpers.waiting import wait_until
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from skillrack import Authority
from skillrack.errors import SkillCallError
from skillrack.host.config import Config, ServerSettings
from skillrack.serve.execution.traced_delegation import TracedDelegation
from skillrack.serve.observability import traces
from skillrack.testing.serve import CARD_PATH, error_of, free_port, invoke, message, skill_request

#: An argument value no span may carry (nor a result value, nor an exception text).
SECRET = "s3cret-argument-value"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
STAGES = [
    ("skillrack.authorization", "skill"),
    ("skillrack.validation", None),
    ("skillrack.authorization", "call"),
    ("skillrack.approval", None),
    ("skillrack.handler", None),
    ("skillrack.output_validation", None),
]


async def echo(arguments: Any, context: Any) -> Any:
    return {"echo": True, "copy": SECRET}


async def crash(arguments: Any, context: Any) -> Any:
    raise ValueError(f"database said no to {SECRET}")


async def relay(arguments: Any, context: Any) -> Any:
    await context.delegate("downstream", arguments.get("skill", "echo"), {})
    return {"relayed": True}


NOTE = {"type": "object", "properties": {"note": {"type": "string", "maxLength": 40}}}
RELAY = {"type": "object", "properties": {"skill": {"enum": ["echo", "crash"]}}}


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    recorded = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(recorded))
    traces.install(provider)
    try:
        yield recorded
    finally:
        traces.install(None)
        provider.shutdown()


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> InMemorySpanExporter:
    exporter.clear()
    return exporter


def _agent(
    base_dir: Path, *skills: Any, peers: dict[str, str] | None = None, grpc_port: int = 0
) -> Iterator[str]:
    registry = registry_of([("tests", SkillsPlugin(*skills)), ("allow", AllowAll())])
    server = ServerSettings(store="memory", grpc_port=grpc_port)
    config = Config(base_dir=base_dir, server=server, peers=peers or {})
    with running_agent(registry, config) as url:
        yield url


@pytest.fixture(scope="module")
def downstream(
    exporter: InMemorySpanExporter, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Agent B (echo, crash, change), created after the provider: it reads traceparent.

    It serves gRPC too, so that the trace context is read from gRPC metadata as well.
    """
    yield from _agent(
        tmp_path_factory.mktemp("b"),
        simple_skill("echo", input_schema=NOTE, handler=echo),
        simple_skill("crash", handler=crash),
        simple_skill("change", authority=Authority("execute")),  # waits for an operator
        grpc_port=free_port(),
    )


@pytest.fixture(scope="module")
def upstream(downstream: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Agent A: ``relay`` delegates to B's ``echo`` through skillrack's client."""
    yield from _agent(
        tmp_path_factory.mktemp("a"),
        simple_skill("relay", input_schema=RELAY, handler=relay),
        peers={"downstream": downstream},
    )


def call(url: str, skill: str, arguments: Any, **kwargs: Any) -> Any:
    return invoke(url, skill_request(skill, arguments, "1.0", digests(url)[skill]), **kwargs)


def wait_for(
    exporter: InMemorySpanExporter, done: Callable[[list[ReadableSpan]], bool]
) -> list[ReadableSpan]:
    """The finished spans once ``done`` says enough are there (a span ends after the answer)."""

    def enough() -> list[ReadableSpan] | None:
        finished = list(exporter.get_finished_spans())
        return finished if done(finished) else None

    return wait_until(enough, "the finished spans")


def invocations(finished: list[ReadableSpan]) -> list[ReadableSpan]:
    return [s for s in finished if s.name.startswith(traces.INVOKE_SPAN)]


def children(finished: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    found = [s for s in finished if s.parent is not None and s.parent.span_id == _id(parent)]
    return sorted(found, key=lambda s: s.start_time or 0)


def _id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def _trace(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id


def carries_no_value(finished: list[ReadableSpan]) -> bool:
    """No attribute, status, event or name of any span holds an argument or result value."""
    for span in finished:
        texts = [span.name, span.status.description or "", *map(str, span.attributes.values())]
        texts += [e.name for e in span.events] + [str(e.attributes) for e in span.events]
        if any(SECRET in text for text in texts):
            return False
    return True


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_an_invocation_is_a_server_span_with_one_child_per_stage(
    downstream: str, spans: InMemorySpanExporter, binding: str
) -> None:
    task = call(downstream, "echo", {"note": SECRET}, binding=binding)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    finished = wait_for(spans, lambda f: len(invocations(f)) == 1)
    (server,) = invocations(finished)
    assert server.name == "skillrack.invoke echo"
    assert server.kind is SpanKind.SERVER
    assert server.parent is None  # the caller sent no traceparent: a new trace
    assert dict(server.attributes) == {
        traces.TASK_ID: task["id"],
        traces.SKILL_ID: "echo",
        traces.SKILL_VERSION: "1.0",
        traces.INTERFACE_DIGEST: digests(downstream)["echo"],
        traces.PLUGIN: "tests",
        traces.TASK_STATE: "TASK_STATE_COMPLETED",
    }
    assert server.status.status_code is StatusCode.UNSET
    stages = children(finished, server)
    assert [(s.name, s.attributes.get(traces.AUTHORIZATION_SCOPE)) for s in stages] == STAGES
    assert all(_trace(s) == _trace(server) for s in stages)
    assert carries_no_value(finished)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_the_callers_traceparent_is_the_parent_on_both_bindings(
    downstream: str, spans: InMemorySpanExporter, binding: str
) -> None:
    headers = {"traceparent": TRACEPARENT, "tracestate": "vendor=opaque"}
    call(downstream, "echo", {}, binding=binding, headers=headers)
    (server,) = invocations(wait_for(spans, lambda f: len(invocations(f)) == 1))
    assert server.parent is not None and server.parent.is_remote
    assert format(server.parent.span_id, "016x") == PARENT_ID
    assert format(_trace(server), "032x") == TRACE_ID
    assert server.context is not None
    assert server.context.trace_state.get("vendor") == "opaque"


def test_the_callers_traceparent_is_the_parent_over_grpc(
    downstream: str, spans: InMemorySpanExporter
) -> None:
    card = httpx.get(downstream + CARD_PATH, timeout=10).json()
    [target] = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    data = skill_request("echo", {}, "1.0", digests(downstream)["echo"])
    request = json_format.ParseDict({"message": message(data)}, SendMessageRequest())
    metadata = [
        ("a2a-version", "1.0"),
        ("traceparent", TRACEPARENT),
        ("tracestate", "vendor=opaque"),
    ]

    async def send() -> None:
        async with grpc.aio.insecure_channel(target) as channel:
            await a2a_pb2_grpc.A2AServiceStub(channel).SendMessage(request, metadata=metadata)

    asyncio.run(send())
    (server,) = invocations(wait_for(spans, lambda f: len(invocations(f)) == 1))
    assert server.parent is not None and server.parent.is_remote
    assert format(server.parent.span_id, "016x") == PARENT_ID
    assert format(_trace(server), "032x") == TRACE_ID
    assert server.context is not None
    assert server.context.trace_state.get("vendor") == "opaque"


@pytest.mark.parametrize(
    "traceparent",
    [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # all-zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # all-zero parent
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # forbidden version
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  # upper case
        "not a traceparent at all",
        "00-" + "a" * 4000,
    ],
)
def test_a_malformed_traceparent_starts_a_new_trace(
    downstream: str, spans: InMemorySpanExporter, traceparent: str
) -> None:
    headers = {"traceparent": traceparent, "tracestate": "x" * 600 + "=y,,;;"}
    task = call(downstream, "echo", {}, headers=headers)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    (server,) = invocations(wait_for(spans, lambda f: len(invocations(f)) == 1))
    assert server.parent is None
    assert format(_trace(server), "032x") != TRACE_ID


def test_a_refusal_ends_the_span_with_its_state_and_code(
    downstream: str, spans: InMemorySpanExporter
) -> None:
    task = call(downstream, "echo", {"note": SECRET * 3})  # past maxLength: input_invalid
    assert error_of(task)["code"] == "input_invalid"
    finished = wait_for(spans, lambda f: len(invocations(f)) == 1)
    (server,) = invocations(finished)
    assert server.attributes[traces.TASK_STATE] == "TASK_STATE_REJECTED"
    assert server.attributes[traces.CONDITION] == "input_invalid"
    assert server.status.status_code is StatusCode.ERROR
    stages = children(finished, server)
    assert [s.name for s in stages] == ["skillrack.authorization", "skillrack.validation"]
    assert stages[1].status.status_code is StatusCode.ERROR
    assert stages[1].status.description == "input_invalid"
    assert carries_no_value(finished)  # the validation details stay out of the trace


def test_a_failing_handler_leaves_its_exception_text_out(
    downstream: str, spans: InMemorySpanExporter
) -> None:
    task = call(downstream, "crash", {})
    assert error_of(task)["code"] == "output_invalid"
    finished = wait_for(spans, lambda f: len(invocations(f)) == 1)
    (server,) = invocations(finished)
    assert server.attributes[traces.TASK_STATE] == "TASK_STATE_FAILED"
    assert server.attributes[traces.CONDITION] == "output_invalid"
    (handler,) = [s for s in children(finished, server) if s.name == "skillrack.handler"]
    assert handler.status.status_code is StatusCode.ERROR
    assert handler.status.description == "ValueError"
    assert not handler.events  # no exception event, whose message would carry the text
    assert carries_no_value(finished)


def test_a_delegation_is_one_trace_across_two_agents(
    upstream: str, downstream: str, spans: InMemorySpanExporter
) -> None:
    task = call(upstream, "relay", {}, headers={"traceparent": TRACEPARENT})
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    finished = wait_for(spans, lambda f: len(invocations(f)) == 2)
    by_name = {s.name: s for s in invocations(finished)}
    a, b = by_name["skillrack.invoke relay"], by_name["skillrack.invoke echo"]
    # One trace: the caller's; every span of both agents belongs to it.
    assert {format(_trace(s), "032x") for s in finished} == {TRACE_ID}
    assert a.parent is not None and format(a.parent.span_id, "016x") == PARENT_ID
    # A's handler calls B in a CLIENT span; B's server span continues from it (traceparent).
    (handler,) = [s for s in children(finished, a) if s.name == "skillrack.handler"]
    (delegation,) = children(finished, handler)
    assert delegation.name == traces.DELEGATE_SPAN and delegation.kind is SpanKind.CLIENT
    assert dict(delegation.attributes) == {
        traces.PEER: "downstream",
        traces.SKILL_ID: "echo",
        traces.TASK_STATE: "TASK_STATE_COMPLETED",
    }
    assert b.parent is not None and b.parent.is_remote and b.parent.span_id == _id(delegation)
    assert [
        (s.name, s.attributes.get(traces.AUTHORIZATION_SCOPE)) for s in children(finished, b)
    ] == STAGES
    assert b.attributes[traces.TASK_STATE] == a.attributes[traces.TASK_STATE]
    assert carries_no_value(finished)


def test_describe_skill_is_its_own_span(downstream: str, spans: InMemorySpanExporter) -> None:
    task = invoke(downstream, {"skill": "describe_skill", "arguments": {"skill_id": "echo"}})
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    finished = wait_for(spans, lambda f: any(s.name == traces.DESCRIBE_SPAN for s in f))
    (server,) = [s for s in finished if s.name == traces.DESCRIBE_SPAN]
    assert server.attributes[traces.SKILL_ID] == "echo"
    assert server.attributes[traces.TASK_STATE] == "TASK_STATE_COMPLETED"
    assert children(finished, server) == []


@pytest.mark.parametrize(
    ("kind", "asked"),
    [("invoke", "x" * 2000), ("invoke", "echo\nforged"), ("describe", "y" * 2000)],
)
def test_a_caller_cannot_mint_span_names_or_skill_attributes(
    downstream: str, spans: InMemorySpanExporter, kind: str, asked: str
) -> None:
    """A skill name that is not advertised names no span and sets no skill attribute."""
    if kind == "describe":
        request = {"skill": "describe_skill", "arguments": {"skill_id": asked}}
    else:
        request = skill_request(asked, {}, "1.0", digests(downstream)["echo"])
    assert error_of(invoke(downstream, request))["code"] == "skill_not_advertised"
    (server,) = wait_for(spans, lambda f: len(f) >= 1)
    assert server.name == (traces.DESCRIBE_SPAN if kind == "describe" else traces.INVOKE_SPAN)
    assert traces.SKILL_ID not in server.attributes
    assert server.attributes[traces.TASK_STATE] == "TASK_STATE_REJECTED"
    assert server.attributes[traces.CONDITION] == "skill_not_advertised"


def test_a_call_parked_for_an_operator_ends_its_turn_at_the_approval_stage(
    downstream: str, spans: InMemorySpanExporter
) -> None:
    task = call(downstream, "change", {"note": SECRET})
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    finished = wait_for(spans, lambda f: len(invocations(f)) == 1)
    (server,) = invocations(finished)
    assert server.name == "skillrack.invoke change"
    assert server.attributes[traces.TASK_STATE] == "TASK_STATE_INPUT_REQUIRED"
    assert traces.CONDITION not in server.attributes
    assert [s.name for s in children(finished, server)] == [name for name, _ in STAGES[:4]]
    assert carries_no_value(finished)


def test_a_failed_delegation_records_the_peers_state_and_code(
    upstream: str, downstream: str, spans: InMemorySpanExporter
) -> None:
    task = call(upstream, "relay", {"skill": "crash"})
    assert task["status"]["state"] == "TASK_STATE_FAILED"  # the relay's handler raised
    finished = wait_for(spans, lambda f: len(invocations(f)) == 2)
    (delegation,) = [s for s in finished if s.name == traces.DELEGATE_SPAN]
    assert delegation.attributes[traces.TASK_STATE] == "TASK_STATE_FAILED"
    assert delegation.attributes[traces.CONDITION] == "output_invalid"
    assert delegation.status.status_code is StatusCode.ERROR
    assert len({_trace(s) for s in finished}) == 1
    assert carries_no_value(finished)


class HostilePeer:
    """A delegation whose peer answers with a code and a state of its own invention."""

    async def delegate(self, *args: Any, **kwargs: Any) -> Any:
        raise SkillCallError(
            code=f"pwned {SECRET}", message=SECRET, remote=True, state=f"TASK_STATE_{SECRET}"
        )

    async def compose(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")


async def test_a_peer_cannot_write_its_own_text_into_the_trace(
    spans: InMemorySpanExporter,
) -> None:
    with pytest.raises(SkillCallError):
        await TracedDelegation(HostilePeer()).delegate("t-1", "peer", "echo", {}, "sync")
    (delegation,) = spans.get_finished_spans()
    assert delegation.status.description == "SkillCallError"
    assert traces.CONDITION not in delegation.attributes
    assert traces.TASK_STATE not in delegation.attributes
    assert carries_no_value([delegation])
