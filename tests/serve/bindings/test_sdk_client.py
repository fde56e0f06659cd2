"""a2a-sdk's own client, every operation on every binding, against a real ``skillrack serve``.

SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask and
SubscribeToTask, each through ``a2a.client`` over JSON-RPC, HTTP+JSON and
gRPC (``serve --grpc-port``), with and without an A2A ``tenant`` (over HTTP+JSON the SDK puts it
in the path, ``/{tenant}/tasks/{id}:cancel``).  The SDK's HTTP+JSON client
sends ``:cancel`` and ``:subscribe`` with no body (``:subscribe``) or a body
it chose (``:cancel``); the body guard reads an empty body on those two task
actions as ``{}`` and keeps refusing empty bodies everywhere else.

The A2A JavaScript SDK's client (``@a2a-js/sdk``, installed with npm; the
test skips without Node or network) makes the same six calls on both
bindings.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc.aio
import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from google.protobuf import json_format, struct_pb2
from helpers.a2a_js import entry_point, install_a2a_js
from helpers.served_process import probe_request, serving

from skillrack.protocol.messages import EXTENSION_URI
from skillrack.testing.serve import HEADERS, ServedAgent, free_port, get_task, wait_for_state

BINDINGS = [TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON, TransportProtocol.GRPC]
TENANTS = ["", "acme"]
TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    grpc_port = str(free_port())  # the gRPC binding too (tests/serve/bindings/test_grpc.py)
    with serving(tmp_path_factory.mktemp("sdk-client"), args=("--grpc-port", grpc_port)) as served:
        yield served


@pytest.fixture(scope="module")
def card(agent: ServedAgent) -> AgentCard:
    import asyncio

    async def resolve() -> AgentCard:
        async with httpx.AsyncClient(timeout=10) as http:
            return await A2ACardResolver(http, agent.url).get_agent_card()

    return asyncio.run(resolve())


async def _client(card: AgentCard, binding: str, *, streaming: bool) -> AsyncIterator[Client]:
    http = httpx.AsyncClient(timeout=30, headers={"A2A-Extensions": EXTENSION_URI})
    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        use_client_preference=True,
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    client = ClientFactory(config).create(card)
    try:
        yield client
    finally:
        await client.close()
        await http.aclose()


@pytest.fixture(params=BINDINGS)
async def client(request: pytest.FixtureRequest, card: AgentCard) -> AsyncIterator[Client]:
    async for made in _client(card, request.param, streaming=False):
        yield made


@pytest.fixture(params=BINDINGS)
async def streaming_client(
    request: pytest.FixtureRequest, card: AgentCard
) -> AsyncIterator[Client]:
    async for made in _client(card, request.param, streaming=True):
        yield made


def _request(
    agent: ServedAgent, skill: str, arguments: Any, *, immediately: bool = False, tenant: str = ""
) -> SendMessageRequest:
    data = struct_pb2.Value()
    json_format.ParseDict(probe_request(agent.url, skill, arguments), data)
    return SendMessageRequest(
        tenant=tenant,
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(data=data)],
            extensions=[EXTENSION_URI],
        ),
        configuration=SendMessageConfiguration(return_immediately=immediately),
    )


async def _send(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


def _data(task: Task) -> Any:
    return json_format.MessageToDict(task.artifacts[-1].parts[0].data)


async def _start_ticker(client: Client, agent: ServedAgent, ticks: int, tenant: str = "") -> Task:
    [event] = await _send(
        client, _request(agent, "ticker", {"ticks": ticks, "interval": 0.1}, immediately=True)
    )
    assert event.WhichOneof("payload") == "task", event
    assert event.task.status.state not in TERMINAL
    return event.task


async def test_send_message(client: Client, agent: ServedAgent) -> None:
    [event] = await _send(client, _request(agent, "echo", {"text": "hello"}))
    assert event.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert _data(event.task) == {"skill": "echo", "result": {"echo": "hello"}}


async def test_send_streaming_message(streaming_client: Client, agent: ServedAgent) -> None:
    events = await _send(streaming_client, _request(agent, "ticker", {"ticks": 3, "interval": 0}))
    kinds = [event.WhichOneof("payload") for event in events]
    assert kinds[0] == "task", kinds
    assert "artifact_update" in kinds, kinds
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED, events[-1]


@pytest.mark.parametrize("tenant", TENANTS)
async def test_get_task_and_list_tasks(client: Client, agent: ServedAgent, tenant: str) -> None:
    [event] = await _send(client, _request(agent, "echo", {"text": "kept"}))
    got = await client.get_task(GetTaskRequest(id=event.task.id, tenant=tenant))
    assert got.id == event.task.id and got.status.state == TaskState.TASK_STATE_COMPLETED
    listed = await client.list_tasks(ListTasksRequest(tenant=tenant, page_size=100))
    assert event.task.id in {task.id for task in listed.tasks}


@pytest.mark.parametrize("tenant", TENANTS)
async def test_cancel_task(client: Client, agent: ServedAgent, tenant: str) -> None:
    started = await _start_ticker(client, agent, ticks=200)
    canceled = await client.cancel_task(CancelTaskRequest(id=started.id, tenant=tenant))
    assert canceled.id == started.id
    final = wait_for_state(agent.url, started.id, {"TASK_STATE_CANCELED"})
    assert final["status"]["state"] == "TASK_STATE_CANCELED", final


@pytest.mark.parametrize("tenant", TENANTS)
async def test_subscribe_to_task(streaming_client: Client, agent: ServedAgent, tenant: str) -> None:
    started = _raw_ticker(agent, ticks=30)  # 3 s: still running when a loaded machine subscribes
    request = SubscribeToTaskRequest(id=started, tenant=tenant)
    events = [event async for event in streaming_client.subscribe(request)]
    assert events[0].WhichOneof("payload") == "task", events[0]
    assert events[0].task.id == started
    last = events[-1]
    state = last.status_update.status.state if last.HasField("status_update") else None
    assert state == TaskState.TASK_STATE_COMPLETED, events
    assert get_task(agent.url, started)["status"]["state"] == "TASK_STATE_COMPLETED"


# The body guard on the wire ----------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "/acme"])
def test_empty_body_cancel_is_read_as_empty_object(agent: ServedAgent, prefix: str) -> None:
    started = _raw_ticker(agent)
    answer = httpx.post(f"{agent.url}{prefix}/tasks/{started}:cancel", headers=HEADERS, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["id"] == started
    assert wait_for_state(agent.url, started, {"TASK_STATE_CANCELED"})["status"]["state"] == (
        "TASK_STATE_CANCELED"
    )


@pytest.mark.parametrize("prefix", ["", "/acme"])
def test_empty_body_subscribe_is_read_as_empty_object(agent: ServedAgent, prefix: str) -> None:
    started = _raw_ticker(agent, ticks=3)
    url = f"{agent.url}{prefix}/tasks/{started}:subscribe"
    with httpx.stream("POST", url, headers=HEADERS, timeout=30) as answer:
        assert answer.status_code == 200, answer.read()
        assert answer.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in answer.iter_lines() if line.startswith("data:")]
    assert '"task"' in lines[0] and "TASK_STATE_COMPLETED" in lines[-1], lines


@pytest.mark.parametrize(
    "path",
    [
        "/message:send",
        "/message:stream",
        "/acme/message:send",
        "/tasks/x/pushNotificationConfigs",
        "/a/b/tasks/x:cancel",  # two prefix segments: not a task action
        "/tasks/x:cancelled",
        "/tasks/x:cancel/more",
    ],
)
def test_empty_bodies_elsewhere_are_still_refused(agent: ServedAgent, path: str) -> None:
    answer = httpx.post(agent.url + path, headers=HEADERS, timeout=30)
    assert answer.status_code == 400, (path, answer.status_code, answer.text)
    assert "not JSON" in answer.json()["error"]["message"]


def test_empty_jsonrpc_body_is_still_a_parse_error(agent: ServedAgent) -> None:
    answer = httpx.post(agent.url + "/", headers=HEADERS, timeout=30).json()
    assert answer["error"]["code"] == -32700, answer


def test_a_task_action_body_that_is_not_json_is_still_refused(agent: ServedAgent) -> None:
    started = _raw_ticker(agent, ticks=3)
    answer = httpx.post(
        f"{agent.url}/tasks/{started}:cancel", content=b"{", headers=HEADERS, timeout=30
    )
    assert answer.status_code == 400 and "not JSON" in answer.json()["error"]["message"]


def _raw_ticker(agent: ServedAgent, ticks: int = 200) -> str:
    from skillrack.testing.serve import invoke

    task = invoke(
        agent.url,
        probe_request(agent.url, "ticker", {"ticks": ticks, "interval": 0.1}),
        configuration={"returnImmediately": True},
    )
    return str(task["id"])


# The A2A JavaScript SDK's client ----------------------------------------------------------------

JS_CLIENT_SCRIPT = """
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";

const [indexEntry, clientEntry, inputPath] = process.argv.slice(2);
const sdk = await import(pathToFileURL(indexEntry).href);
const js = await import(pathToFileURL(clientEntry).href);
const input = JSON.parse(readFileSync(inputPath, "utf8"));
const state = (task) => sdk.taskStateToJSON(task.status.state);
const kinds = (events) => events.map((e) => e.payload.$case);
const lastState = (events) => {
  const last = events[events.length - 1].payload;
  return last.$case === "task" ? state(last.value) : state(last.value);
};
const request = (data) => sdk.SendMessageRequest.fromJSON({
  message: { messageId: randomUUID(), role: "ROLE_USER", parts: [{ data }],
             extensions: [input.extension] },
});
const collect = async (stream) => {
  const out = [];
  for await (const e of stream) out.push(e);
  return out;
};

const results = {};
for (const binding of ["JSONRPC", "HTTP+JSON"]) {
  const options = js.ClientFactoryOptions.createFrom(js.ClientFactoryOptions.default, {
    preferredTransports: [binding],
  });
  const client = await new js.ClientFactory(options).createFromUrl(input.url);
  const got = {};
  const sent = await client.sendMessage(request(input.echo));
  got.send = state(sent);
  const streamed = await collect(client.sendMessageStream(request(input.stream)));
  got.stream = kinds(streamed);
  got.streamEnd = lastState(streamed);
  got.get = state(await client.getTask(sdk.GetTaskRequest.fromJSON({ id: sent.id })));
  const listed = await client.listTasks(sdk.ListTasksRequest.fromJSON({ pageSize: 100 }));
  got.listed = listed.tasks.some((t) => t.id === sent.id);
  const ids = input.running[binding];
  got.cancel = state(await client.cancelTask(sdk.CancelTaskRequest.fromJSON({ id: ids.cancel })));
  // Subscribe to a running task; once it has shown progress, cancel it through the
  // client: the stream ends with the cancellation.
  const subscribed = [];
  const subscription = sdk.SubscribeToTaskRequest.fromJSON({ id: ids.subscribe });
  for await (const event of client.resubscribeTask(subscription)) {
    subscribed.push(event);
    if (subscribed.length === 2) {
      await client.cancelTask(sdk.CancelTaskRequest.fromJSON({ id: ids.subscribe }));
    }
  }
  got.subscribe = kinds(subscribed);
  got.subscribeEnd = lastState(subscribed);
  results[binding] = got;
}
process.stdout.write(JSON.stringify(results));
"""


@pytest.fixture(scope="module")
def a2a_js(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Path]:
    """(node, the SDK's main ESM entry, its client ESM entry)."""
    node, package = install_a2a_js(tmp_path_factory)
    return node, entry_point(package), entry_point(package, "./client")


def test_the_javascript_sdk_client_every_operation_on_both_bindings(
    a2a_js: tuple[str, Path, Path], agent: ServedAgent, tmp_path: Path
) -> None:
    node, index, client = a2a_js
    running = {
        binding: {"cancel": _raw_ticker(agent), "subscribe": _raw_ticker(agent)}
        for binding in ("JSONRPC", "HTTP+JSON")
    }
    data = {
        "url": agent.url,
        "extension": EXTENSION_URI,
        "echo": probe_request(agent.url, "echo", {"text": "from js"}),
        "stream": probe_request(agent.url, "ticker", {"ticks": 3, "interval": 0}),
        "running": running,
    }
    script, given = tmp_path / "client.mjs", tmp_path / "input.json"
    script.write_text(JS_CLIENT_SCRIPT)
    given.write_text(json.dumps(data))
    done = subprocess.run(
        [node, str(script), str(index), str(client), str(given)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    for binding, got in results.items():
        assert got["send"] == "TASK_STATE_COMPLETED", (binding, got)
        assert got["stream"][0] == "task" and "artifactUpdate" in got["stream"], (binding, got)
        assert got["streamEnd"] == "TASK_STATE_COMPLETED", (binding, got)
        assert got["get"] == "TASK_STATE_COMPLETED" and got["listed"] is True, (binding, got)
        assert got["subscribe"][0] == "task" and len(got["subscribe"]) > 2, (binding, got)
        assert got["subscribeEnd"] == "TASK_STATE_CANCELED", (binding, got)
        assert got["cancel"] in {"TASK_STATE_CANCELED", "TASK_STATE_WORKING"}, (binding, got)
        for cancelled in running[binding].values():
            final = wait_for_state(agent.url, cancelled, {"TASK_STATE_CANCELED"})
            assert final["status"]["state"] == "TASK_STATE_CANCELED", (binding, got, final)
    assert set(results) == {"JSONRPC", "HTTP+JSON"}
