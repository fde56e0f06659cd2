"""Push notifications: a local webhook receives a task's updates, hostile webhooks never are.

A real agent (uvicorn on loopback) with ``[server] push_notifications`` on
and loopback allowed posts every task event to a webhook receiver on
127.0.0.1, with the caller's token and ``Authorization``.  Refused webhooks
(plain http elsewhere than loopback, link-local and metadata addresses,
private ranges, loopback when not allowed) are refused with an error naming
the URL when set, and the receiver never hears from the agent.  The address
is checked again at delivery (DNS rebinding), and failed deliveries are
retried a bounded number of times.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore
from a2a.types import Task, TaskPushNotificationConfig, TaskState, TaskStatus
from cryptography.fernet import Fernet
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import registry_of
from helpers.header_callers import HeaderCallers, caller_header
from helpers.waiting import eventually, wait_until

from skillrack.client.address_guard import AddressGuard, AddressPolicy
from skillrack.host.config import Config, ConfigError, ServerSettings, load_config
from skillrack.host.registry import Registry
from skillrack.serve.bindings.card import CARD_PATH
from skillrack.serve.bindings.push import PushDelivery, PushUrlCheck, RetryingTransport
from skillrack.serve.bindings.request_handler import tenant_scope
from skillrack.serve.server import build_server
from skillrack.testing.serve import invoke, rpc, skill_request


class Receiver:
    """A webhook on 127.0.0.1 that records every POST (path, headers, JSON body)."""

    def __init__(self, status: int = 200, delay: float = 0) -> None:
        self.received: list[tuple[str, dict[str, str], Any]] = []
        self.status = status
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"null")
                outer.received.append((self.path, dict(self.headers.items()), body))
                time.sleep(delay)
                try:
                    self.send_response(outer.status)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:  # the agent gave up waiting
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def states(self, path: str) -> list[str]:
        """The task states the webhook at ``path`` was told, in order."""
        found = []
        for got, _, body in self.received:
            if got != path:
                continue
            if "task" in body:
                found.append(body["task"]["status"]["state"])
            elif "statusUpdate" in body:
                found.append(body["statusUpdate"]["status"]["state"])
        return found

    def wait_for(self, path: str, state: str) -> list[str]:
        """The states told to ``path`` once ``state`` is among them."""
        wait_until(lambda: state in self.states(path), f"{state} pushed to {path}")
        return self.states(path)


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.close()


def _agent(registry: Registry, base_dir: Path, **server: Any) -> Any:
    return running_agent(registry, Config(base_dir=base_dir, server=ServerSettings(**server)))


@pytest.fixture(scope="module")
def base(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _agent(
        registry,
        tmp_path_factory.mktemp("push"),
        push_notifications=True,
        push_allow_loopback=True,
    ) as url:
        yield url


@pytest.fixture(scope="module")
def strict(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Push on, loopback not allowed: the operator's production setting."""
    with _agent(registry, tmp_path_factory.mktemp("strict"), push_notifications=True) as url:
        yield url


def _slow(registry: Registry, seconds: float) -> dict[str, Any]:
    digest = registry.skills["slow_cancellable"].interface_digest
    return skill_request("slow_cancellable", {"seconds": seconds}, "1.0", digest)


def _push_config(url: str, token: str = "tok-1", **extra: Any) -> dict[str, Any]:
    return {"url": url, "token": token, **extra}


def test_the_card_offers_push_only_when_configured(
    base: str, registry: Registry, tmp_path: Path
) -> None:
    assert httpx.get(base + CARD_PATH).json()["capabilities"]["pushNotifications"] is True
    with _agent(registry, tmp_path) as off:
        card = httpx.get(off + CARD_PATH).json()
    assert card["capabilities"]["pushNotifications"] is False


def test_push_is_refused_when_not_configured(registry: Registry, tmp_path: Path) -> None:
    with _agent(registry, tmp_path) as off:
        answer = rpc(
            off, "CreateTaskPushNotificationConfig", {"taskId": "x", "url": "https://a.example/"}
        )
    assert answer["error"]["code"] == -32003, answer  # PushNotificationNotSupportedError


def test_updates_reach_the_webhook_with_token_and_authorization(
    base: str, registry: Registry, receiver: Receiver
) -> None:
    config = _push_config(
        receiver.url + "/inline",
        token="tok-inline",
        authentication={"scheme": "Bearer", "credentials": "hook-secret"},
    )
    task = invoke(
        base,
        _slow(registry, 0.2),
        configuration={"returnImmediately": True, "taskPushNotificationConfig": config},
    )
    states = receiver.wait_for("/inline", "TASK_STATE_COMPLETED")
    assert states[-1] == "TASK_STATE_COMPLETED", states
    mine = [(h, b) for p, h, b in receiver.received if p == "/inline"]
    assert all(h["X-A2A-Notification-Token"] == "tok-inline" for h, _ in mine)
    assert all(h["Authorization"] == "Bearer hook-secret" for h, _ in mine)
    assert {_task_id(body) for _, body in mine} == {task["id"]}


def _task_id(body: dict[str, Any]) -> str:
    """The task a notification (a StreamResponse) is about."""
    if "task" in body:
        return str(body["task"]["id"])
    [event] = [v for k, v in body.items() if k in {"statusUpdate", "artifactUpdate"}]
    return str(event["taskId"])


def test_a_config_created_for_a_running_task_is_used(
    base: str, registry: Registry, receiver: Receiver
) -> None:
    task = invoke(base, _slow(registry, 1.0), configuration={"returnImmediately": True})
    created = rpc(
        base,
        "CreateTaskPushNotificationConfig",
        {"taskId": task["id"], **_push_config(receiver.url + "/created", token="tok-created")},
    )
    assert created["result"]["url"] == receiver.url + "/created", created
    states = receiver.wait_for("/created", "TASK_STATE_COMPLETED")
    assert states and states[-1] == "TASK_STATE_COMPLETED", states
    listed = rpc(base, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    assert [c["url"] for c in listed["result"]["configs"]] == [receiver.url + "/created"]


HOSTILE = [
    pytest.param("http://169.254.169.254/latest/meta-data/", "https", id="metadata-http"),
    pytest.param("https://169.254.169.254/latest/meta-data/", "metadata", id="metadata"),
    pytest.param("https://[::ffff:169.254.169.254]/", "metadata", id="metadata-mapped"),
    pytest.param("https://metadata.google.internal/", "metadata", id="metadata-name"),
    pytest.param("https://169.254.10.10/hook", "link-local", id="link-local"),
    pytest.param("https://10.0.0.1/hook", "private", id="private"),
    pytest.param("https://192.168.1.1/hook", "private", id="private-192"),
    pytest.param("http://example.com/hook", "https", id="plain-http"),
    pytest.param("ftp://example.com/hook", "https", id="ftp"),
    pytest.param("https://user:pw@example.com/hook", "credentials", id="userinfo"),
    pytest.param("not a url", "", id="garbage"),
]


@pytest.mark.parametrize("url, reason", HOSTILE)
def test_hostile_webhooks_are_refused_when_set(
    strict: str, registry: Registry, url: str, reason: str
) -> None:
    inline = rpc(
        strict,
        "SendMessage",
        {
            "message": _message(_slow(registry, 0)),
            "configuration": {"taskPushNotificationConfig": _push_config(url)},
        },
    )
    assert inline["error"]["code"] == -32602, inline
    assert "push notification URL" in inline["error"]["message"]
    assert reason in inline["error"]["message"], inline["error"]["message"]
    task = invoke(strict, _slow(registry, 0))
    created = rpc(
        strict, "CreateTaskPushNotificationConfig", {"taskId": task["id"], **_push_config(url)}
    )
    assert created["error"]["code"] == -32602 and reason in created["error"]["message"], created
    listed = rpc(strict, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    assert listed["result"].get("configs", []) == [], listed


def test_http_json_binding_sets_configs_and_refuses_hostile_ones(
    base: str, strict: str, registry: Registry, receiver: Receiver
) -> None:
    headers = {"A2A-Version": "1.0"}
    task = invoke(base, _slow(registry, 1.0), configuration={"returnImmediately": True})
    created = httpx.post(
        f"{base}/tasks/{task['id']}/pushNotificationConfigs",
        json={"taskId": task["id"], **_push_config(receiver.url + "/rest", token="tok-rest")},
        headers=headers,
    )
    assert created.status_code == 200, created.text
    states = receiver.wait_for("/rest", "TASK_STATE_COMPLETED")
    assert states and states[-1] == "TASK_STATE_COMPLETED", states
    hostile = "https://169.254.169.254/latest/meta-data/"
    other = invoke(strict, _slow(registry, 0))
    refused = httpx.post(
        f"{strict}/tasks/{other['id']}/pushNotificationConfigs",
        json={"taskId": other["id"], **_push_config(hostile)},
        headers=headers,
    )
    assert refused.status_code == 400, refused.text
    message = refused.json()["error"]["message"]
    assert hostile in message and "metadata" in message, message


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_loopback_is_refused_and_never_contacted_unless_allowed(
    strict: str, registry: Registry, receiver: Receiver, scheme: str
) -> None:
    url = receiver.url.replace("http", scheme, 1) + f"/never-{scheme}"
    before = len(receiver.received)
    answer = rpc(
        strict,
        "SendMessage",
        {
            "message": _message(_slow(registry, 0)),
            "configuration": {"taskPushNotificationConfig": _push_config(url)},
        },
    )
    assert answer["error"]["code"] == -32602, answer
    assert "loopback" in answer["error"]["message"], answer
    time.sleep(0.5)  # a refused config must never be called: nothing arrives meanwhile
    assert len(receiver.received) == before
    assert not [p for p, _, _ in receiver.received if p.startswith("/never")]


def test_a_config_belongs_to_the_tenant_that_set_it(tmp_path: Path, receiver: Receiver) -> None:
    registry = registry_of(
        [("tests", TestSkills()), ("allow", AllowAll()), ("callers", HeaderCallers())]
    )
    acme, other = caller_header("acme", "alice"), caller_header("globex", "bob")
    with _agent(registry, tmp_path, push_notifications=True, push_allow_loopback=True) as url:
        task = invoke(url, _slow(registry, 0), headers=acme)
        config = {"taskId": task["id"], **_push_config(receiver.url + "/acme", id="cfg")}
        assert "result" in rpc(url, "CreateTaskPushNotificationConfig", config, headers=acme)
        ask = {"taskId": task["id"], "id": "cfg"}
        assert rpc(url, "GetTaskPushNotificationConfig", ask, headers=acme)["result"]["url"]
        for method, params in [
            ("GetTaskPushNotificationConfig", ask),
            ("ListTaskPushNotificationConfigs", {"taskId": task["id"]}),
            ("DeleteTaskPushNotificationConfig", ask),
            ("CreateTaskPushNotificationConfig", {**config, "url": receiver.url + "/globex"}),
        ]:
            answer = rpc(url, method, params, headers=other)
            assert answer.get("error", {}).get("code") == -32001, (method, answer)
        listed = rpc(url, "ListTaskPushNotificationConfigs", {"taskId": task["id"]}, headers=acme)
        assert [c["url"] for c in listed["result"]["configs"]] == [receiver.url + "/acme"]


def test_a_config_belongs_to_the_caller_that_set_it(tmp_path: Path, receiver: Receiver) -> None:
    """Issue 28: within one tenant a viewer neither reads, lists, replaces nor deletes another
    caller's webhook (its token and credentials); the owner's config still gets the events.
    The task store's file, holding the configs, is created 0600."""
    registry = registry_of(
        [("tests", TestSkills()), ("allow", AllowAll()), ("callers", HeaderCallers())]
    )
    alice = caller_header("acme", "alice", "operator")
    viewer = caller_header("acme", "vic", "viewer")
    with _agent(registry, tmp_path, push_notifications=True, push_allow_loopback=True) as url:
        task = invoke(
            url, _slow(registry, 1.0), configuration={"returnImmediately": True}, headers=alice
        )
        secret = {"scheme": "Bearer", "credentials": "alice-hook-secret"}
        mine = _push_config(receiver.url + "/alice", token="alice-tok", authentication=secret)
        for extra in ({"id": "cfg"}, {}):  # a named config and the default one (id = task id)
            created = rpc(
                url,
                "CreateTaskPushNotificationConfig",
                {"taskId": task["id"], **mine, **extra},
                headers=alice,
            )
            assert "result" in created, created
        default_id = task["id"]
        for config_id in ("cfg", default_id):
            ask = {"taskId": task["id"], "id": config_id}
            read = rpc(url, "GetTaskPushNotificationConfig", ask, headers=viewer)
            assert "error" in read and "alice" not in json.dumps(read), read
            taken = rpc(
                url,
                "CreateTaskPushNotificationConfig",
                {"taskId": task["id"], **_push_config(receiver.url + "/vic"), "id": config_id},
                headers=viewer,
            )
            assert taken["error"]["code"] == -32602, taken
            assert "another caller's" in taken["error"]["message"]
            rpc(url, "DeleteTaskPushNotificationConfig", ask, headers=viewer)
        listed = rpc(url, "ListTaskPushNotificationConfigs", {"taskId": task["id"]}, headers=viewer)
        assert "alice" not in json.dumps(listed), listed
        own = {"taskId": task["id"], **_push_config(receiver.url + "/vic"), "id": "vic-cfg"}
        assert "result" in rpc(url, "CreateTaskPushNotificationConfig", own, headers=viewer)
        kept = rpc(url, "ListTaskPushNotificationConfigs", {"taskId": task["id"]}, headers=alice)
        assert sorted(c["id"] for c in kept["result"]["configs"]) == sorted(["cfg", default_id])
        assert all(c["url"] == receiver.url + "/alice" for c in kept["result"]["configs"])
        states = receiver.wait_for("/alice", "TASK_STATE_COMPLETED")
        assert states and states[-1] == "TASK_STATE_COMPLETED", states
    for name in ("skillrack-tasks.db", "skillrack-approvals.db"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o600, name


def _message(data: Any) -> dict[str, Any]:
    from skillrack.testing.serve import message

    return message(data)  # type: ignore[no-any-return]


# Delivery: the address again, retries -----------------------------------------------------------


class Counting(httpx.AsyncBaseTransport):
    """Answers with the given statuses in turn and counts what reached it."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return httpx.Response(status)


class Store:
    """One push config for every task (a2a-sdk's store interface, the part the sender reads)."""

    def __init__(self, url: str) -> None:
        self.config = TaskPushNotificationConfig(url=url, token="t", id="c", task_id="task-1")

    async def get_info_for_dispatch(self, task_id: str) -> list[TaskPushNotificationConfig]:
        return [self.config]


def _event() -> Task:
    return Task(
        id="task-1", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED)
    )


async def test_a_name_that_rebinds_to_a_private_address_is_refused_at_delivery() -> None:
    answers = {"hook.example": ["93.184.216.34"]}

    async def resolve(host: str, port: int) -> list[str]:
        return answers[host]

    inner = Counting(200)
    guard = AddressGuard(AddressPolicy(), transport=lambda: inner, resolve=resolve)
    check = PushUrlCheck(guard.vet, allow_loopback=False)
    url = "https://hook.example/notify"
    assert await check.problem(url) is None  # public when set
    answers["hook.example"] = ["10.0.0.1"]  # private when delivered
    delivery = PushDelivery(Store(url), guard, check, attempts=3, timeout=5, backoff=0)  # type: ignore[arg-type]
    await delivery.send_notification("task-1", _event())
    await delivery.aclose()
    assert inner.requests == []  # never connected
    answers["hook.example"] = ["93.184.216.34"]
    delivery = PushDelivery(Store(url), guard, check, attempts=3, timeout=5, backoff=0)  # type: ignore[arg-type]
    await delivery.send_notification("task-1", _event())
    await delivery.aclose()
    assert len(inner.requests) == 1 and inner.requests[0].headers["host"] == "hook.example"


async def test_a_slow_webhook_is_given_up_after_push_timeout() -> None:
    slow = Receiver(delay=3.0)
    try:
        url = slow.url + "/slow"
        guard = AddressGuard(AddressPolicy(allow_loopback=True))
        check = PushUrlCheck(guard.vet, allow_loopback=True)
        delivery = PushDelivery(Store(url), guard, check, attempts=2, timeout=0.3, backoff=0)  # type: ignore[arg-type]
        started = time.monotonic()
        await delivery.send_notification("task-1", _event())
        await eventually(lambda: not delivery._pending, "both attempts to be given up")
        spent = time.monotonic() - started
        await delivery.aclose()
    finally:
        slow.close()
    assert len(slow.received) == 2  # both attempts reached it, each given up at the timeout
    assert 0.5 < spent < 2.5, spent


@pytest.mark.parametrize(
    "statuses, attempts, calls",
    [
        ((503, 503, 200), 3, 3),
        ((503, 503, 503, 503), 3, 3),  # bounded
        ((429, 200), 3, 2),
        ((400,), 3, 1),  # a client error is final
        ((204,), 3, 1),
    ],
)
async def test_failed_deliveries_are_retried_a_bounded_number_of_times(
    statuses: tuple[int, ...], attempts: int, calls: int
) -> None:
    inner = Counting(*statuses)
    async with httpx.AsyncClient(transport=RetryingTransport(inner, attempts, 0)) as client:
        await client.post("https://hook.example/", json={"a": 1})
    assert len(inner.requests) == calls


async def test_connection_errors_are_retried_with_backoff() -> None:
    class Failing(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.times: list[float] = []

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            self.times.append(time.monotonic())
            raise httpx.ConnectError("refused")

    inner = Failing()
    async with httpx.AsyncClient(transport=RetryingTransport(inner, 3, 0.1)) as client:
        with pytest.raises(httpx.ConnectError):
            await client.post("https://hook.example/", json={})
    gaps = [b - a for a, b in zip(inner.times, inner.times[1:], strict=False)]
    assert len(inner.times) == 3 and gaps[0] >= 0.09 and gaps[1] >= 0.19, gaps


# Configuration ------------------------------------------------------------------------------------


def test_push_settings_are_read_from_the_configuration(tmp_path: Path) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text(
        "[server]\npush_notifications = true\npush_allow_loopback = true\npush_attempts = 5\n"
    )
    server = load_config(path).server
    assert server.push_notifications and server.push_allow_loopback and server.push_attempts == 5
    path.write_text('[server]\npush_notifications = "yes"\n')
    with pytest.raises(ConfigError, match="push_notifications must be true or false"):
        load_config(path)


def test_the_delivery_worker_does_not_block_the_caller() -> None:
    async def run() -> float:
        inner = Counting(200)

        async def slow_resolve(host: str, port: int) -> list[str]:
            await asyncio.sleep(0.5)
            return ["93.184.216.34"]

        guard = AddressGuard(AddressPolicy(), transport=lambda: inner, resolve=slow_resolve)
        check = PushUrlCheck(guard.vet, allow_loopback=False)
        delivery = PushDelivery(
            Store("https://hook.example/"),  # type: ignore[arg-type]
            guard,
            check,
            attempts=1,
            timeout=5,
        )
        started = time.monotonic()
        await delivery.send_notification("task-1", _event())
        spent = time.monotonic() - started
        await delivery.aclose()
        assert len(inner.requests) == 1
        return spent

    assert asyncio.run(run()) < 0.2


async def test_a_refused_name_does_not_tell_the_caller_what_it_resolved_to(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The refusal of a host name is not a probe of the internal DNS; the operator's log says it."""
    answers = {"intranet.example": ["10.1.2.3"]}

    async def resolve(host: str, port: int) -> list[str]:
        if host not in answers:
            raise OSError("[Errno -2] Name or service not known")
        return answers[host]

    guard = AddressGuard(AddressPolicy(), resolve=resolve)
    check = PushUrlCheck(guard.vet, allow_loopback=False)
    with caplog.at_level(logging.WARNING, logger="skillrack.serve.bindings.push"):
        private = await check.problem("https://intranet.example/hook")
        missing = await check.problem("https://nowhere.example/hook")
    assert private is not None and missing is not None
    assert private == missing  # a resolving name and a missing one are told alike
    assert "10.1.2.3" not in private and "Errno" not in missing
    assert "10.1.2.3" in caplog.text and "nowhere.example" in caplog.text
    literal = await check.problem("https://10.1.2.3/hook")  # the caller's own address: in full
    assert literal is not None and "private" in literal


# Credentials at rest, an app's own task store, plain http -----------------------------------------


def test_push_credentials_are_stored_encrypted_with_the_key(
    registry: Registry, receiver: Receiver, tmp_path: Path
) -> None:
    """With push_encryption_key_file the stored row holds no credential; delivery still works."""
    (tmp_path / "push.key").write_bytes(Fernet.generate_key() + b"\n")
    secret = "hook-secret-at-rest"
    with _agent(
        registry,
        tmp_path,
        push_notifications=True,
        push_allow_loopback=True,
        push_encryption_key_file="push.key",
    ) as url:
        config = _push_config(
            receiver.url + "/sealed",
            token="tok-sealed",
            authentication={"scheme": "Bearer", "credentials": secret},
        )
        invoke(
            url,
            _slow(registry, 0.2),
            configuration={"returnImmediately": True, "taskPushNotificationConfig": config},
        )
        states = receiver.wait_for("/sealed", "TASK_STATE_COMPLETED")
        with sqlite3.connect(tmp_path / "skillrack-tasks.db") as db:
            rows = [
                bytes(r[0]) for r in db.execute("SELECT config_data FROM push_notification_configs")
            ]
    assert states and states[-1] == "TASK_STATE_COMPLETED", states
    assert rows and not any(secret.encode() in row or b"tok-sealed" in row for row in rows), rows
    mine = [h for p, h, _ in receiver.received if p == "/sealed"]
    assert all(h["Authorization"] == f"Bearer {secret}" for h in mine)


@pytest.mark.parametrize(
    "content, says",
    [(None, "cannot read"), (b"not a key", "does not hold a Fernet key")],
)
def test_an_unusable_push_key_file_is_refused(
    registry: Registry, tmp_path: Path, content: bytes | None, says: str
) -> None:
    if content is not None:
        (tmp_path / "push.key").write_bytes(content)
    config = Config(
        base_dir=tmp_path,
        server=ServerSettings(push_notifications=True, push_encryption_key_file="push.key"),
    )
    with pytest.raises(ConfigError, match=f"push_encryption_key_file: .*{says}"):
        build_server(registry, config, "http://127.0.0.1:9")


def test_an_app_given_its_own_task_store_needs_a_push_config_store(
    registry: Registry, receiver: Receiver, tmp_path: Path
) -> None:
    """Push on with the caller's task store: refused without a config store, served with one."""
    config = Config(
        base_dir=tmp_path, server=ServerSettings(push_notifications=True, push_allow_loopback=True)
    )
    own = InMemoryTaskStore(owner_resolver=tenant_scope)
    with pytest.raises(ConfigError, match="push_config_store"):
        build_server(registry, config, "http://127.0.0.1:9", task_store=own)
    configs = InMemoryPushNotificationConfigStore(owner_resolver=tenant_scope)
    with running_agent(registry, config, task_store=own, push_config_store=configs) as url:
        assert httpx.get(url + CARD_PATH).json()["capabilities"]["pushNotifications"] is True
        invoke(
            url,
            _slow(registry, 0.2),
            configuration={
                "returnImmediately": True,
                "taskPushNotificationConfig": _push_config(receiver.url + "/own-store"),
            },
        )
        states = receiver.wait_for("/own-store", "TASK_STATE_COMPLETED")
    assert states and states[-1] == "TASK_STATE_COMPLETED", states


def _resolving(answers: dict[str, list[str]]) -> Any:
    async def resolve(host: str, port: int) -> list[str]:
        return answers[host]

    return resolve


@pytest.mark.parametrize(
    "url, addresses, allowed",
    [
        ("http://hook.localhost/n", ["127.0.0.1"], True),
        ("http://localhost/n", ["127.0.0.1", "::1"], True),
        ("http://hook.localhost/n", ["10.0.0.7"], False),  # a name is not an address
        ("http://hook.localhost/n", ["127.0.0.1", "10.0.0.7"], False),
        ("http://hook.example/n", ["127.0.0.1"], True),  # what it resolves to decides
        ("http://hook.example/n", ["10.0.0.7"], False),
        ("http://10.0.0.7/n", [], False),
        ("https://hook.localhost/n", ["10.0.0.7"], True),  # https: the ranges decide
    ],
)
async def test_plain_http_reaches_only_loopback_addresses(
    url: str, addresses: list[str], allowed: bool
) -> None:
    """``*.localhost`` is loopback only if it resolves there; the private ranges never get http."""
    resolve = _resolving({httpx.URL(url).host: addresses})
    policy = AddressPolicy(allow_loopback=True, allow_private=True, http_loopback_only=True)
    check = PushUrlCheck(AddressGuard(policy, resolve=resolve).vet, allow_loopback=True)
    problem = await check.problem(url)
    assert (problem is None) is allowed, problem


async def test_plain_http_to_localhost_names_needs_push_allow_loopback() -> None:
    resolve = _resolving({"hook.localhost": ["127.0.0.1"]})
    policy = AddressPolicy(allow_private=True, http_loopback_only=True)
    check = PushUrlCheck(AddressGuard(policy, resolve=resolve).vet, allow_loopback=False)
    problem = await check.problem("http://hook.localhost/n")
    assert problem is not None and "push_allow_loopback" in problem


async def test_a_localhost_name_that_rebinds_off_loopback_gets_no_plain_http() -> None:
    answers = {"hook.localhost": ["127.0.0.1"]}
    inner = Counting(200)
    policy = AddressPolicy(allow_loopback=True, allow_private=True, http_loopback_only=True)
    guard = AddressGuard(policy, transport=lambda: inner, resolve=_resolving(answers))
    check = PushUrlCheck(guard.vet, allow_loopback=True)
    url = "http://hook.localhost/notify"
    assert await check.problem(url) is None  # loopback when set
    answers["hook.localhost"] = ["192.168.1.20"]  # a private address when delivered
    delivery = PushDelivery(Store(url), guard, check, attempts=1, timeout=5, backoff=0)  # type: ignore[arg-type]
    await delivery.send_notification("task-1", _event())
    await delivery.aclose()
    assert inner.requests == []
