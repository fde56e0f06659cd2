"""The blocking SendMessage path answers, byte for byte, what a2a-sdk's own path answers.

Two agents serve the same skills: one as ``skillrack serve`` runs (the
blocking path of :mod:`skillrack.serve.bindings.blocking` and the JSON-RPC dispatcher
of :mod:`skillrack.serve.bindings.jsonrpc`), one with ``lean=False`` (a2a-sdk's event
path and its own dispatcher for every request).  The same requests go to both,
over JSON-RPC and HTTP+JSON; the answers must be the same bytes once the
values that differ from run to run (generated ids, timestamps) are replaced
by their order of appearance.  One more thing differs from one answer to the
next on either path: the members of a Data Part's object (and of
``metadata``) come out in the order of protobuf's map (a hash table inside
upb, laid out anew by each copy of the message), not in the order they were
written.  JSON objects are unordered (RFC 8259), so those members are
compared sorted, and the answers' lengths must still be equal to the byte.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import Message, Part, Role, SendMessageRequest, Task, TaskState
from a2a.utils.errors import InvalidParamsError
from a2a.utils.proto_utils import validate_proto_required_fields
from google.protobuf import json_format
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import SkillsPlugin, registry_of
from helpers.waiting import wait_until
from starlette.requests import Request

from skillrack import BaseSkill, BaseSkillContext, DataPart, IncomingMessage, TextPart
from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.bindings.blocking import lacks_required_field
from skillrack.serve.bindings.jsonrpc import Dispatcher
from skillrack.serve.bindings.request_handler import ContextBuilder
from skillrack.serve.middleware.body_guard import Replay, replaying
from skillrack.serve.scope import PARSED_BODY_KEY
from skillrack.serve.server import with_store
from skillrack.testing.serve import HEADERS, rpc, skill_request, stream

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


async def helps(message: IncomingMessage, context: BaseSkillContext) -> None:
    await context.reply(TextPart("help"), DataPart({"n": 1, "of": ["a", "b"]}))


async def reports(message: IncomingMessage, context: BaseSkillContext) -> str:
    await context.status("working on it")
    await context.artifact(TextPart("line"), DataPart({"rows": 2}), name="report")
    return "done"


async def asks(message: IncomingMessage, context: BaseSkillContext) -> str:
    if not context.history:
        await context.ask("what is your name?")
    return "hello"


#: Base-A2A skills: a direct Message reply, a task with a status and an Artifact, a question.
BASE_SKILLS = SkillsPlugin(
    BaseSkill(
        id="help", name="Help", description="h", handler=helps, matches=lambda m: m.text == "help"
    ),
    BaseSkill(id="report", name="Report", description="r", handler=reports),
    BaseSkill(id="chat", name="Chat", description="c", handler=asks),
)


@pytest.fixture(scope="module")
def registry() -> Registry:
    return registry_of([("tests", TestSkills()), ("allow", AllowAll()), ("base", BASE_SKILLS)])


def cluster_config(directory: Path) -> Config:
    """A SQLite file of its own in ``directory``, run in cluster mode (as ``--workers`` runs it)."""
    return with_store(Config(base_dir=directory), "sqlite:///tasks.db")


@pytest.fixture(scope="module", params=["one process", "cluster mode"])
def agents(
    registry: Registry, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """The blocking path and a2a-sdk's path, each on a store of its own.

    In cluster mode (a ClusterTaskStore on SQLite, with a2a-sdk's event stream)
    both must answer the same too: the blocking path is taken there as well.
    """
    if request.param == "one process":
        with running_agent(registry) as lean, running_agent(registry, lean=False) as sdk:
            yield lean, sdk
        return
    configs = [cluster_config(tmp_path_factory.mktemp(name)) for name in ("lean", "sdk")]
    with (
        running_agent(registry, configs[0], cluster=True) as lean,
        running_agent(registry, configs[1], cluster=True, lean=False) as sdk,
    ):
        yield lean, sdk


def normalized(raw: bytes) -> bytes:
    """``raw`` with each generated id and timestamp replaced by its order of appearance."""
    seen: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), f"<{len(seen)}>")

    text = TIMESTAMP.sub("<time>", raw.decode())
    return UUID.sub(number, text).encode()


#: The members whose values are protobuf maps (``Struct``): their order is upb's.
MAP_VALUED = {"data", "metadata"}


def _sorted_maps(value: Any, sort: bool = False) -> Any:
    if isinstance(value, dict):
        items = sorted(value.items()) if sort else value.items()
        return {k: _sorted_maps(v, sort or k in MAP_VALUED) for k, v in items}
    if isinstance(value, list):
        return [_sorted_maps(v, sort) for v in value]
    return value


def comparable(raw: bytes) -> tuple[int, bytes]:
    """The normalized answer's length, and its bytes with the members of map values sorted."""
    text = normalized(raw)
    body = json.loads(text)
    return len(text), json.dumps(_sorted_maps(body), separators=(",", ":")).encode()


def request_for(registry: Registry, skill: str, arguments: Any) -> dict[str, Any]:
    registered = registry.get(skill)
    assert registered is not None
    version, digest = registered.skill.version, registered.interface_digest
    return skill_request(skill, arguments, version, digest)


def cases(registry: Registry) -> dict[str, dict[str, Any]]:
    """SendMessage params: each path of the pipeline, and requests a2a-sdk refuses."""
    evaluate = {
        "resource_id": "network-resource-123",
        "condition": {
            "metric": "utilization",
            "operator": "gte",
            "threshold": 80,
            "unit": "percent",
        },
    }

    def params(data: Any, **extra: Any) -> dict[str, Any]:
        message = {
            "messageId": "fixed-message-id",
            "role": "ROLE_USER",
            "parts": [{"data": data}],
            "extensions": [EXTENSION_URI],
        }
        return {"message": message, **extra}

    no_id = params(request_for(registry, "crash", {}))
    del no_id["message"]["messageId"]
    return {
        "completed with a record": params(
            request_for(registry, "evaluate_resource_condition", evaluate)
        ),
        "describe_skill": params(
            {"skill": "describe_skill", "arguments": {"skill_id": "evaluate_resource_condition"}}
        ),
        "rejected: input_invalid": params(
            request_for(registry, "evaluate_resource_condition", {"resource_id": 7})
        ),
        "rejected: not advertised": params(
            {
                "skill": "nowhere",
                "skill_version": "1.0",
                "interface_digest": "sha256:00",
                "arguments": {},
            }
        ),
        "failed: handler raised": params(request_for(registry, "crash", {})),
        "failed: output_invalid after progress": params(request_for(registry, "bad_output", {})),
        "progress and records": params(request_for(registry, "progressive", {})),
        "input-required": params(request_for(registry, "ask_twice", {})),
        "historyLength 0": params(
            request_for(registry, "evaluate_resource_condition", evaluate),
            configuration={"historyLength": 0},
        ),
        "historyLength negative": params(
            request_for(registry, "crash", {}), configuration={"historyLength": -1}
        ),
        "a context id given": {
            **params(request_for(registry, "crash", {})),
            "message": {
                **params(request_for(registry, "crash", {}))["message"],
                "contextId": "c-1",
            },
        },
        "no messageId": no_id,
        "no parts": {"message": {**no_id["message"], "messageId": "m", "parts": []}},
        "not a request object": params({"hello": "world"}),
        "base skill: a direct reply": plain([{"text": "help"}]),
        "base skill: a task": plain([{"text": "go"}], skill="report"),
        "base skill: input-required": plain([{"text": "hi"}], skill="chat"),
    }


def plain(parts: list[Any], skill: str | None = None) -> dict[str, Any]:
    """A plain A2A Message (no extension), for a base skill."""
    message: dict[str, Any] = {"messageId": "plain-message-id", "role": "ROLE_USER", "parts": parts}
    if skill is not None:
        message["metadata"] = {"skill": skill}
    return {"message": message}


def post(base: str, binding: str, params: Any) -> httpx.Response:
    if binding == "JSONRPC":
        body = {"jsonrpc": "2.0", "id": "same-id", "method": "SendMessage", "params": params}
        return httpx.post(base + "/", json=body, headers=HEADERS, timeout=30)
    return httpx.post(base + "/message:send", json=params, headers=HEADERS, timeout=30)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_the_same_bytes_as_a2a_sdks_path(
    agents: tuple[str, str], registry: Registry, binding: str
) -> None:
    lean, sdk = agents
    for name, params in cases(registry).items():
        ours, theirs = post(lean, binding, params), post(sdk, binding, params)
        assert (ours.status_code, ours.headers["content-type"]) == (
            theirs.status_code,
            theirs.headers["content-type"],
        ), name
        assert comparable(ours.content) == comparable(theirs.content), name


def test_the_stored_task_is_the_answered_one(agents: tuple[str, str], registry: Registry) -> None:
    lean, sdk = agents
    params = cases(registry)["progress and records"]
    answers = []
    for base in (lean, sdk):
        task = post(base, "JSONRPC", params).json()["result"]["task"]
        stored = httpx.post(
            base + "/",
            json={"jsonrpc": "2.0", "id": "g", "method": "GetTask", "params": {"id": task["id"]}},
            headers=HEADERS,
            timeout=30,
        )
        assert stored.json()["result"] == task
        answers.append(comparable(stored.content))
    assert answers[0] == answers[1]


def test_a_follow_up_continues_a_task_the_blocking_path_started(
    agents: tuple[str, str], registry: Registry
) -> None:
    lean, _ = agents
    data = request_for(registry, "ask_twice", {})
    first = post(lean, "JSONRPC", cases(registry)["input-required"]).json()["result"]["task"]
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    follow_up = {
        "message": {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "taskId": first["id"],
            "parts": [{"data": {"window": "sunday"}}],
            "extensions": [EXTENSION_URI],
        }
    }
    second = post(lean, "JSONRPC", follow_up).json()["result"]["task"]
    assert second["id"] == first["id"] and data["skill"] == "ask_twice"
    assert second["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert len(second["history"]) > len(first["history"])


def running_task(base: str, skill: str) -> str:
    """The id of the one unsettled task of ``skill``, found as a client can: ListTasks."""

    def found() -> str | None:
        listed = rpc(base, "ListTasks", {"pageSize": 100})["result"].get("tasks", [])
        for task in listed:
            if task["metadata"].get("skillrackSkill") == skill and task["status"]["state"] in (
                "TASK_STATE_WORKING",
            ):
                return str(task["id"])
        return None

    return wait_until(found, f"a running task of {skill}")


def cancel_while_blocked(base: str, registry: Registry) -> tuple[bytes, bytes]:
    """A blocking SendMessage of a slow skill, cancelled from outside: both answers."""
    params = {
        "message": {
            "messageId": "slow-one",
            "role": "ROLE_USER",
            "parts": [{"data": request_for(registry, "slow_cancellable", {"seconds": 20})}],
            "extensions": [EXTENSION_URI],
        }
    }
    answered: list[httpx.Response] = []
    caller = threading.Thread(target=lambda: answered.append(post(base, "JSONRPC", params)))
    caller.start()
    task_id = running_task(base, "slow_cancellable")
    cancelled = httpx.post(
        base + "/",
        json={"jsonrpc": "2.0", "id": "c", "method": "CancelTask", "params": {"id": task_id}},
        headers=HEADERS,
        timeout=30,
    )
    caller.join(timeout=30)
    assert answered, "the blocking call did not return"
    return cancelled.content, answered[0].content


def test_cancel_of_a_blocking_call_as_a2a_sdk_cancels(
    agents: tuple[str, str], registry: Registry
) -> None:
    lean, sdk = agents
    ours = cancel_while_blocked(lean, registry)
    theirs = cancel_while_blocked(sdk, registry)
    cancelled = json.loads(ours[0])["result"]
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
    assert json.loads(ours[1])["result"]["task"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert [comparable(x) for x in ours] == [comparable(x) for x in theirs]


def slow_call(base: str, registry: Registry, seconds: float) -> tuple[threading.Thread, str]:
    """A blocking SendMessage of a slow skill, running: its caller's thread and the task id."""
    params = {
        "message": {
            "messageId": "slow-three",
            "role": "ROLE_USER",
            "parts": [{"data": request_for(registry, "slow_cancellable", {"seconds": seconds})}],
            "extensions": [EXTENSION_URI],
        }
    }
    caller = threading.Thread(target=lambda: post(base, "JSONRPC", params))
    caller.start()
    return caller, running_task(base, "slow_cancellable")


def fetched(base: str, binding: str, task_id: str) -> bytes:
    if binding == "JSONRPC":
        body = {"jsonrpc": "2.0", "id": "g", "method": "GetTask", "params": {"id": task_id}}
        return httpx.post(base + "/", json=body, headers=HEADERS, timeout=30).content
    return httpx.get(f"{base}/tasks/{task_id}", headers=HEADERS, timeout=30).content


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_a_blocking_call_is_seen_working_while_its_handler_runs(
    agents: tuple[str, str], registry: Registry, binding: str
) -> None:
    answers = []
    for base in agents:
        # Long enough that a loaded machine still fetches it running; cancelled once fetched.
        caller, task_id = slow_call(base, registry, 20)
        listed = rpc(base, "ListTasks", {"pageSize": 100})["result"]["tasks"]
        (task,) = [t for t in listed if t["id"] == task_id]
        assert task["status"]["state"] == "TASK_STATE_WORKING"
        answers.append(fetched(base, binding, task_id))
        rpc(base, "CancelTask", {"id": task_id})
        caller.join(timeout=30)
    for answer in answers:
        body = json.loads(answer)
        task = body["result"] if binding == "JSONRPC" else body
        assert task["status"]["state"] == "TASK_STATE_WORKING"
    ours, theirs = answers
    assert comparable(ours) == comparable(theirs)


def subscribed(base: str, registry: Registry) -> list[tuple[int, bytes]]:
    """Every event of a SubscribeToTask made while a blocking call runs, comparable."""
    caller, task_id = slow_call(base, registry, 1.5)
    events = list(stream(base, "SubscribeToTask", {"id": task_id}))
    caller.join(timeout=30)
    return [comparable(json.dumps(event).encode()) for event in events]


def test_a_subscription_to_a_blocking_call_streams_its_remaining_events(
    agents: tuple[str, str], registry: Registry
) -> None:
    lean, sdk = agents
    ours, theirs = subscribed(lean, registry), subscribed(sdk, registry)
    assert ours == theirs
    first, last = json.loads(ours[0][1]), json.loads(ours[-1][1])
    assert first["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert any("artifactUpdate" in json.loads(event) for _, event in ours)


def test_a_subscription_after_a_blocking_call_ended_is_refused_as_a2a_sdk_refuses(
    agents: tuple[str, str], registry: Registry
) -> None:
    lean, _ = agents
    caller, task_id = slow_call(lean, registry, 0.5)
    caller.join(timeout=30)
    subscribed = httpx.post(
        lean + "/",
        json={"jsonrpc": "2.0", "id": "s", "method": "SubscribeToTask", "params": {"id": task_id}},
        headers={**HEADERS, "Accept": "text/event-stream"},
        timeout=30,
    )
    assert "terminal state" in subscribed.text


class CountingStore(InMemoryTaskStore):
    """a2a-sdk's in-memory store, counting the saves of each task and the states saved."""

    def __init__(self) -> None:
        super().__init__()
        self.saved: dict[str, list[str]] = {}

    async def save(self, task: Task, context: ServerCallContext) -> None:
        self.saved.setdefault(task.id, []).append(TaskState.Name(task.status.state))
        await super().save(task, context)


def test_a_plain_invocation_is_saved_twice(registry: Registry) -> None:
    """Once WORKING (when the handler starts), once at the end; the Task event alone is not."""
    store = CountingStore()
    with running_agent(registry, task_store=store) as lean:
        params = cases(registry)["completed with a record"]
        task = post(lean, "JSONRPC", params).json()["result"]["task"]
        progressive = post(lean, "JSONRPC", cases(registry)["progress and records"])
    assert store.saved[task["id"]] == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    # Artifacts (records, progressive results) wait for the end: no save of their own.
    states = store.saved[progressive.json()["result"]["task"]["id"]]
    assert states == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]


# -- the required-field check ------------------------------------------------------------------


def sdk_refuses(request: SendMessageRequest) -> bool:
    try:
        validate_proto_required_fields(request)
    except InvalidParamsError:
        return True
    return False


MESSAGES: list[dict[str, Any]] = [
    {
        "message": {
            "messageId": "m",
            "role": "ROLE_USER",
            "parts": [{"data": {"a": [1, {"b": None}]}}],
        }
    },
    {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}},
    {"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}},
    {"message": {"messageId": "m", "parts": [{"text": "x"}]}},
    {"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}},
    {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{}]}},
    {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}, "metadata": {}},
    {
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
        "configuration": {"taskPushNotificationConfig": {"url": "https://h/"}},
    },
    {
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
        "configuration": {"taskPushNotificationConfig": {"authentication": {"scheme": "Bearer"}}},
    },
    {},
]


@pytest.mark.parametrize("params", MESSAGES)
def test_required_fields_found_as_a2a_sdk_finds_them(params: dict[str, Any]) -> None:
    request = json_format.ParseDict(params, SendMessageRequest())
    assert lacks_required_field(request) == sdk_refuses(request)


def test_required_fields_of_a_built_message() -> None:
    request = SendMessageRequest(
        message=Message(message_id="m", role=Role.ROLE_USER, parts=[Part()])
    )
    assert lacks_required_field(request) == sdk_refuses(request)


class HeldFinalSave(InMemoryTaskStore):
    """Copies the task before its save of INPUT_REQUIRED, as a database store serialises it,
    and holds that save until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.ids: list[str] = []

    async def save(self, task: Task, context: ServerCallContext) -> None:
        self.ids.append(task.id)
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            copy = Task()
            copy.CopyFrom(task)
            self.entered.set()
            await asyncio.to_thread(self.release.wait, 30)
            task = copy
        await super().save(task, context)


def test_a_cancel_during_the_final_save_is_stored() -> None:
    """A cancel that arrives while the turn's last save is under way ends the stored task too."""
    store = HeldFinalSave()
    asking = BaseSkill(id="chat", name="Chat", description="c", handler=asks, cancellable=True)
    registry = registry_of([("allow", AllowAll()), ("base", SkillsPlugin(asking))])
    with running_agent(registry, task_store=store) as lean:
        answers: list[httpx.Response] = []
        params = plain([{"text": "hi"}], skill="chat")
        caller = threading.Thread(target=lambda: answers.append(post(lean, "JSONRPC", params)))
        caller.start()
        assert store.entered.wait(30)
        task_id = store.ids[0]  # the WORKING save came first
        body = {"jsonrpc": "2.0", "id": "c", "method": "CancelTask", "params": {"id": task_id}}
        cancelled: list[httpx.Response] = []
        canceller = threading.Thread(
            target=lambda: cancelled.append(
                httpx.post(lean + "/", json=body, headers=HEADERS, timeout=30)
            )
        )
        canceller.start()
        time.sleep(0.3)  # the cancel is in flight while the save is held
        store.release.set()
        caller.join(30)
        canceller.join(30)
        answer = cancelled[0].json()
        assert "result" in answer, answer
        answer = answer["result"]
        stored = json.loads(fetched(lean, "JSONRPC", task_id))["result"]
    assert answer["status"]["state"] == "TASK_STATE_CANCELED"
    assert stored["status"]["state"] == "TASK_STATE_CANCELED"


def envelopes(registry: Registry) -> dict[str, Any]:
    """JSON-RPC bodies around an invocation: the plain one, and each one the route's shorter
    way for a plain SendMessage (``Dispatcher.answer``) must hand to a2a-sdk's own."""
    params = cases(registry)["completed with a record"]
    plain = {"jsonrpc": "2.0", "id": "same-id", "method": "SendMessage", "params": params}
    unknown_member = json.loads(json.dumps(params))
    unknown_member["message"]["color"] = "red"
    return {
        "plain": plain,
        "an integer id": {**plain, "id": 7},
        "a boolean id": {**plain, "id": True},
        "a null id": {**plain, "id": None},
        "a float id": {**plain, "id": 1.5},
        "no id (a notification)": {k: v for k, v in plain.items() if k != "id"},
        "no params": {k: v for k, v in plain.items() if k != "params"},
        "params as a list": {**plain, "params": [params]},
        "an extra member": {**plain, "extra": 1},
        "JSON-RPC 1.0": {**plain, "jsonrpc": "1.0"},
        "another method": {**plain, "method": "GetTask", "params": {"id": "nowhere"}},
        "params parse_dict leaves to ParseDict": {**plain, "params": unknown_member},
        "an enum by number": {
            **plain,
            "params": {**params, "message": {**params["message"], "role": 1}},
        },
    }


def test_the_shorter_way_for_a_plain_send_message_answers_as_a2a_sdk(
    agents: tuple[str, str], registry: Registry
) -> None:
    lean, sdk = agents
    for name, body in envelopes(registry).items():
        ours, theirs = (
            httpx.post(base + "/", json=body, headers=HEADERS, timeout=30) for base in (lean, sdk)
        )
        assert ours.status_code == theirs.status_code, name
        assert comparable(ours.content) == comparable(theirs.content), name


def test_only_a_plain_send_message_takes_the_shorter_way(registry: Registry) -> None:
    """``Dispatcher._plain_send_message`` takes the plain body and nothing else."""
    dispatcher = Dispatcher(request_handler=object(), context_builder=ContextBuilder())

    def taken(body: Any, raw: bytes | None = None) -> bool:
        data = json.dumps(body).encode()
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/",
            "headers": [],
            PARSED_BODY_KEY: (data, body, None),
        }

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": data if raw is None else raw}

        found = asyncio.run(dispatcher._plain_send_message(Request(scope, receive)))
        return found is not None

    bodies = envelopes(registry)
    assert taken(bodies.pop("plain")) and taken(bodies.pop("an integer id"))
    assert not taken(envelopes(registry)["plain"], raw=b'{"other": "bytes"}')
    for name, body in bodies.items():
        assert not taken(body), name


def test_the_guards_untouched_replay_is_taken_as_its_body_without_reading_it(
    registry: Registry,
) -> None:
    """The route's ``receive`` is the body guard's replay, not handed out: its body is known.

    Nothing is read (a later reader still gets the body); a replay already
    handed out, or another ``receive``, is read and compared as before.
    """
    dispatcher = Dispatcher(request_handler=object(), context_builder=ContextBuilder())
    body = envelopes(registry)["plain"]
    data = json.dumps(body).encode()
    server_reads: list[str] = []

    async def server_receive() -> dict[str, Any]:
        server_reads.append("read")
        return {"type": "http.request", "body": b'{"other": "bytes"}'}

    def taken(replay: Replay, receive: Any) -> bool:
        scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
        scope[PARSED_BODY_KEY] = (data, body, replay)
        found = asyncio.run(dispatcher._plain_send_message(Request(scope, receive)))
        return found is not None

    untouched = replaying(data, server_receive)
    assert taken(untouched, untouched) and not untouched.replayed and server_reads == []
    handed_out = replaying(data, server_receive)
    asyncio.run(handed_out())
    assert not taken(handed_out, handed_out) and server_reads == ["read"]
    assert not taken(replaying(data, server_receive), server_receive)
