"""``GET /metrics`` after real traffic: right counts, bounded labels, who reads it (issue 16).

One served agent (uvicorn on loopback) takes a run of successes, refusals
(a policy's denial, invalid arguments, a skill it does not declare) and a
handler failure; the exposition then holds exactly those counts, and none of
the hostile names and headers the caller sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.header_callers import HeaderCallers, caller_header
from helpers.served_process import digests
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from starlette.requests import Request

from skillrack import Authority, hookimpl
from skillrack.host.config import Config, ServerSettings
from skillrack.serve.bindings.metrics_endpoint import METRICS_PATH
from skillrack.serve.security.approvals import ApprovalStore, Decider
from skillrack.serve.security.authz import AuthorizationRequest, Decision
from skillrack.serve.server import build_server
from skillrack.testing.serve import CARD_PATH, HEADERS, invoke, skill_request

HOSTILE = 'pwned"} 1\nskillrack_pwned_total{a="'
HOSTILE_HEADER = "pwned-header-value"


async def ok(arguments: Any, context: Any) -> Any:
    return {"n": arguments.get("n", 0)}


async def boom(arguments: Any, context: Any) -> Any:
    raise RuntimeError("secret-argument-value must not reach the metrics")


class DenyGuarded:
    @hookimpl
    def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
        if request.skill_id == "guarded":
            return Decision.deny("guarded is never allowed")
        return Decision.allow()


def _registry(*extra: tuple[str, object]) -> Any:
    typed = {"type": "object", "properties": {"n": {"type": "integer"}}}
    skills = SkillsPlugin(
        simple_skill("ok", input_schema=typed, handler=ok),
        simple_skill("boom", handler=boom),
        simple_skill("guarded", handler=ok),
    )
    return registry_of([("tests", skills), ("deny-guarded", DenyGuarded()), *extra])


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = Config(
        base_dir=tmp_path_factory.mktemp("metrics"), server=ServerSettings(store="memory")
    )
    with running_agent(_registry(), config) as url:
        yield url


@pytest.fixture(scope="module")
def authenticated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = Config(base_dir=tmp_path_factory.mktemp("auth"), server=ServerSettings(store="memory"))
    with running_agent(_registry(("callers", HeaderCallers())), config) as url:
        yield url


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of an exposition: (name, labels) -> value."""
    found: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(
    found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def call(url: str, skill: str, arguments: Any, headers: dict[str, str] | None = None) -> Any:
    digest = digests(url).get(skill, "sha-256:" + "0" * 64)
    return invoke(url, skill_request(skill, arguments, "1.0", digest), headers=headers)


def test_counts_after_successes_refusals_and_failures(agent: str) -> None:
    hostile = {"X-Evil": HOSTILE_HEADER, "User-Agent": HOSTILE_HEADER}
    for n in range(3):
        assert call(agent, "ok", {"n": n})["status"]["state"] == "TASK_STATE_COMPLETED"
    for _ in range(2):
        refused = call(agent, "ok", {"n": "not a number"}, hostile)
        assert refused["status"]["state"] == "TASK_STATE_REJECTED"
    assert call(agent, "boom", {})["status"]["state"] == "TASK_STATE_FAILED"
    assert call(agent, "guarded", {})["status"]["state"] == "TASK_STATE_REJECTED"
    assert call(agent, HOSTILE, {}, hostile)["status"]["state"] == "TASK_STATE_REJECTED"
    for target, state in (("ok", "COMPLETED"), ("never_declared", "REJECTED"), (HOSTILE, None)):
        described = invoke(agent, {"skill": "describe_skill", "arguments": {"skill_id": target}})
        assert state is None or described["status"]["state"] == f"TASK_STATE_{state}", described
    card = httpx.get(agent + CARD_PATH, timeout=10)
    again = httpx.get(agent + CARD_PATH, headers={"If-None-Match": card.headers["etag"]})
    assert again.status_code == 304

    answer = httpx.get(agent + METRICS_PATH, headers=hostile, timeout=10)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    text = answer.text
    found = samples(text)
    invocations = "skillrack_invocations_total"
    completed = dict(skill="ok", skill_version="1.0", state="completed", code="")
    assert value(found, invocations, **completed) == 3
    invalid = dict(skill="ok", skill_version="1.0", state="rejected", code="input_invalid")
    assert value(found, invocations, **invalid) == 2
    failed = dict(skill="boom", skill_version="1.0", state="failed", code="output_invalid")
    assert value(found, invocations, **failed) == 1
    denied = dict(
        skill="guarded", skill_version="1.0", state="rejected", code="authorization_failed"
    )
    assert value(found, invocations, **denied) == 1
    unknown = dict(skill="unknown", skill_version="", state="rejected", code="skill_not_advertised")
    assert value(found, invocations, **unknown) == 1
    assert value(found, "skillrack_authorization_denials_total", skill="guarded", decision="skill")
    assert value(found, "skillrack_describe_skill_calls_total", skill="ok") == 1
    assert value(found, "skillrack_describe_skill_calls_total", skill="unknown") >= 1
    describe = dict(skill="describe_skill", skill_version="", state="completed", code="")
    assert value(found, invocations, **describe) == 1
    assert value(found, "skillrack_card_requests_total", document="card", response="full") >= 1
    card_304 = value(
        found, "skillrack_card_requests_total", document="card", response="not_modified"
    )
    assert card_304 == 1
    handler = value(found, "skillrack_stage_duration_seconds_count", skill="ok", stage="handler")
    assert handler == 3
    validation = "skillrack_stage_duration_seconds_count"
    assert value(found, validation, skill="ok", stage="validation") == 5
    assert value(found, validation, skill="ok", stage="output_validation") == 3
    # One authorization observation per turn (the skill and the call decisions added up):
    # 3 completed and 2 refused at validation, after the skill's decision.
    assert value(found, validation, skill="ok", stage="authorization") == 5
    assert value(found, validation, skill="guarded", stage="authorization") == 1
    assert value(found, "skillrack_invocation_duration_seconds_count", skill="ok") == 5
    assert value(found, "skillrack_tasks_in_flight", skill="ok") == 0
    assert value(found, "skillrack_task_store_operation_duration_seconds_count", operation="save")
    [info] = [k for k in found if k[0] == "skillrack_skill_info" and ("skill", "ok") in k[1]]
    assert dict(info[1])["interface_digest"] == digests(agent)["ok"]
    assert any(k[0] == "skillrack_build_info" for k in found)
    # Nothing the caller sent became a label value, nor a series of its own.
    assert "pwned" not in text
    assert "secret-argument-value" not in text
    assert "not a number" not in text


def test_openmetrics_when_the_scraper_asks(agent: str) -> None:
    accept = "application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5"
    answer = httpx.get(agent + METRICS_PATH, headers={"Accept": accept}, timeout=10)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/openmetrics-text")
    assert answer.text.endswith("# EOF\n")
    plain = httpx.get(agent + METRICS_PATH, timeout=10)
    assert plain.headers["content-type"].startswith("text/plain")
    assert "# EOF" not in plain.text


def test_without_authentication_only_loopback_clients_read_it(tmp_path: Path) -> None:
    config = Config(base_dir=tmp_path, server=ServerSettings(store="memory"))
    app = build_server(_registry(), config, "http://127.0.0.1:9")
    [route] = [r for r in app.routes if getattr(r, "path", None) == METRICS_PATH]
    endpoint = route.endpoint  # type: ignore[attr-defined]

    async def answer(client: str) -> Any:
        scope = {"type": "http", "method": "GET", "path": METRICS_PATH, "headers": []}
        return await endpoint(Request({**scope, "client": (client, 5000)}))

    far = asyncio.run(answer("203.0.113.9"))
    assert far.status_code == 403
    assert b"skillrack_" not in far.body
    assert asyncio.run(answer("127.0.0.1")).status_code == 200


def test_with_authentication_only_operators_read_it(authenticated: str) -> None:
    url = authenticated + METRICS_PATH
    assert httpx.get(url, timeout=10).status_code == 401
    plain = httpx.get(url, headers=caller_header("t1", "alice"), timeout=10)
    assert plain.status_code == 403
    assert "skillrack_" not in plain.text
    operator = httpx.get(url, headers=caller_header("t1", "ops", "operator"), timeout=10)
    assert operator.status_code == 200
    found = samples(operator.text)
    # The unauthenticated scrape above was refused by authentication: counted, by scheme.
    assert value(found, "skillrack_authentication_failures_total", scheme="none") >= 1


def _follow_up(url: str, task_id: str) -> Any:
    message = {
        "messageId": f"follow-{task_id}",
        "role": "ROLE_USER",
        "taskId": task_id,
        "parts": [{"text": "decided?"}],
    }
    body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": message}}
    answer = httpx.post(url + "/", json=body, headers=HEADERS, timeout=30).json()
    return answer["result"]["task"]


def test_approvals_and_limits_are_counted(tmp_path: Path) -> None:
    """A call parked for an operator, granted, then run; a rate limit and a concurrency refusal."""
    execute = simple_skill("change", handler=ok, authority=Authority("execute"))
    registry = registry_of([("tests", SkillsPlugin(execute)), ("deny-guarded", DenyGuarded())])
    config = Config(
        base_dir=tmp_path,
        server=ServerSettings(store="memory", rate_per_minute=4, max_concurrent_tasks=1),
    )
    apps: list[Any] = []

    def keep(app: Any) -> Any:
        apps.append(app)
        return app

    def exposition() -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        return samples(generate_latest(apps[0].state.metrics.registry).decode())

    with running_agent(registry, config, wrap=keep) as url:
        parked = call(url, "change", {})
        assert parked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        found = exposition()
        assert value(found, "skillrack_approvals_total", skill="change", outcome="waiting") == 1
        assert value(found, "skillrack_approvals_waiting") == 1
        # A look at the waiting task (what `call` does while it waits) is not another approval.
        assert _follow_up(url, parked["id"])["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        found = exposition()
        assert value(found, "skillrack_approvals_total", skill="change", outcome="waiting") == 1
        store = ApprovalStore(tmp_path / config.server.approvals_store)
        [pending] = store.list("pending")
        store.decide(pending.id, granted=True, by=Decider("test"), reason="test")
        done = _follow_up(url, parked["id"])
        assert done["status"]["state"] == "TASK_STATE_COMPLETED", done
        found = exposition()
        assert value(found, "skillrack_approvals_total", skill="change", outcome="granted") == 1
        assert value(found, "skillrack_approvals_waiting") == 0
        wait = "skillrack_stage_duration_seconds_count"
        assert value(found, wait, skill="change", stage="approval_wait") == 1
        statuses = [httpx.post(url + "/", json={}, timeout=10).status_code for _ in range(4)]
        assert 429 in statuses
        found = exposition()
        assert value(found, "skillrack_limit_refusals_total", limit="rate") == statuses.count(429)


async def slow(arguments: Any, context: Any) -> Any:
    await asyncio.sleep(3)
    return {}


def test_refused_skills_and_concurrency_refusals(tmp_path: Path) -> None:
    """Start-up refusals are a gauge by plugin and rule; a caller past its slots is counted."""
    plugin = SkillsPlugin(simple_skill("slow", handler=slow), simple_skill("bad", version="1.0.0"))
    registry = registry_of([("alpha", plugin), ("deny-guarded", DenyGuarded())])
    config = Config(
        base_dir=tmp_path, server=ServerSettings(store="memory", max_concurrent_tasks=1)
    )
    apps: list[Any] = []

    def keep(app: Any) -> Any:
        apps.append(app)
        return app

    with running_agent(registry, config, wrap=keep) as url:
        digest = digests(url)["slow"]
        request = skill_request("slow", {}, "1.0", digest)
        first = invoke(url, request, configuration={"returnImmediately": True})
        assert first["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
        second = invoke(url, request)
        assert second["status"]["state"] == "TASK_STATE_REJECTED"
        found = samples(generate_latest(apps[0].state.metrics.registry).decode())
    assert value(found, "skillrack_refused_skills", plugin="alpha", rule="skill_version") == 1
    assert value(found, "skillrack_limit_refusals_total", limit="concurrency") == 1
    refused = dict(
        skill="slow", skill_version="1.0", state="rejected", code="resource_limit_exceeded"
    )
    assert value(found, "skillrack_invocations_total", **refused) == 1
    assert value(found, "skillrack_tasks_in_flight", skill="slow") == 1  # the first still runs


def test_a_scrape_is_rendered_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The exposition is built in a worker thread, so a scrape never stalls invocations."""
    import threading

    from skillrack.serve.bindings import metrics_endpoint

    rendered_on: list[threading.Thread] = []
    original = metrics_endpoint.render

    def recording(registry: Any, accept: str | None) -> tuple[bytes, str]:
        rendered_on.append(threading.current_thread())
        return original(registry, accept)

    monkeypatch.setattr(metrics_endpoint, "render", recording)
    config = Config(base_dir=tmp_path, server=ServerSettings(store="memory"))
    app = build_server(_registry(), config, "http://127.0.0.1:9")

    async def scrape() -> tuple[int, threading.Thread]:
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9") as client:
            answer = await client.get(METRICS_PATH)
        return answer.status_code, threading.current_thread()

    status, loop_thread = asyncio.run(scrape())
    assert status == 200
    assert rendered_on and rendered_on[0] is not loop_thread


def test_the_fast_observer_writes_what_observe_writes() -> None:
    """Every bucket edge, below, between and above the bounds: the same exposition."""
    from prometheus_client import CollectorRegistry, Histogram

    from skillrack.serve.observability.metrics import DURATION_BUCKETS, fast_observer

    amounts = [0.0, -1.0, 1e-9, *DURATION_BUCKETS[:-1], 0.003, 7.5, 299.9, 301.0, 1e9]
    amounts += [float("nan"), float("inf")]
    pages = []
    for fast in (False, True):
        registry = CollectorRegistry()
        histogram = Histogram("h", "h", ["skill"], buckets=DURATION_BUCKETS, registry=registry)
        child = histogram.labels("ok")
        observe = fast_observer(child) if fast else child.observe
        assert (observe != child.observe) is fast  # this prometheus-client: the fast path
        for amount in amounts:
            observe(amount)
        page = generate_latest(registry).decode().splitlines()
        pages.append([line for line in page if not line.startswith("h_created")])
    assert any(line.startswith("h_bucket") for line in pages[0])
    assert pages[0] == pages[1]
