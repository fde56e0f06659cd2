"""Base-A2A skills on a served agent: routing, answers, and the same pipeline as schema skills.

One agent (uvicorn on 127.0.0.1) holds a schema skill (``echo``) beside base
skills; callers name themselves (tenant/identity) with the test header.  Each
test sends plain A2A Messages (no schema-interface extension) on both bindings.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.builders import SkillsPlugin, simple_skill
from helpers.header_callers import HeaderCallers, caller_header
from helpers.scoped_tokens import ScopedTokens

from skillrack import (
    Authority,
    AuthorizationRequest,
    BaseSkill,
    BaseSkillContext,
    DataPart,
    Decision,
    FilePart,
    IncomingMessage,
    TextPart,
    hookimpl,
)
from skillrack.host.config import Config, ServerSettings
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.execution.describe import describe_payloads
from skillrack.serve.security.approvals import ApprovalStore, Decider
from skillrack.testing.serve import HEADERS, error_of, rpc

BINDINGS = ["JSONRPC", "HTTP+JSON"]
ALICE = caller_header("t1", "alice")
BOB = caller_header("t2", "bob")
MAX_OUTPUTS = 3


async def help_desk(message: IncomingMessage, context: BaseSkillContext) -> None:
    await context.reply(TextPart(f"help for {context.caller.identity}"), DataPart({"n": 1}))


async def report(message: IncomingMessage, context: BaseSkillContext) -> Any:
    await context.status("working on it")
    await context.artifact(
        TextPart("line"),
        DataPart({"rows": 2}),
        FilePart(data=b"a,b\n", media_type="text/csv", name="r.csv"),
        name="report",
        artifact_id="r1",
    )
    return "done"


async def chat(message: IncomingMessage, context: BaseSkillContext) -> Any:
    if not context.history:
        await context.ask("what is your name?")
    return f"hello {message.text} (after {context.history[0].text!r})"


async def slow(message: IncomingMessage, context: BaseSkillContext) -> None:
    await asyncio.sleep(10)


async def chatty(message: IncomingMessage, context: BaseSkillContext) -> None:
    for n in range(MAX_OUTPUTS + 2):
        await context.artifact(f"chunk {n}")


async def greedy_handler(message: IncomingMessage, context: BaseSkillContext) -> None:
    await context.reply(f"greedy got {message.data}")


async def echo_turn(message: IncomingMessage, context: BaseSkillContext) -> str:
    return f"{message.text} ({len(context.history)} before)"


async def late_reply(message: IncomingMessage, context: BaseSkillContext) -> None:
    await context.status("started")
    await context.reply("too late: the task began")


def raising_matcher(message: IncomingMessage) -> bool:
    raise RuntimeError("a buggy matcher")


BASE_SKILLS = [
    BaseSkill(
        id="help",
        name="Help",
        description="Lists what this agent does",
        handler=help_desk,
        matches=lambda m: m.text.strip().lower() == "help",
        output_modes=("text/plain", "application/json"),
    ),
    BaseSkill(
        id="buggy", name="Buggy", description="b", handler=help_desk, matches=raising_matcher
    ),
    BaseSkill(
        id="greedy",
        name="Greedy",
        description="Takes any data",
        handler=greedy_handler,
        matches=lambda m: bool(m.data),
        input_modes=("application/json",),
    ),
    BaseSkill(id="report", name="Report", description="r", handler=report),
    BaseSkill(id="chat", name="Chat", description="c", handler=chat),
    BaseSkill(id="slow", name="Slow", description="s", handler=slow, timeout=0.3),
    BaseSkill(id="chatty", name="Chatty", description="c", handler=chatty),
    BaseSkill(id="secret", name="Secret", description="s", handler=help_desk),
    BaseSkill(id="late", name="Late", description="l", handler=late_reply),
    BaseSkill(
        id="waits",
        name="Waits",
        description="waits for an operator",
        handler=echo_turn,
        authority=Authority(default_mode="execute"),
    ),
    BaseSkill(
        id="guarded",
        name="Guarded",
        description="needs an approval",
        handler=help_desk,
        authority=Authority(default_mode="execute"),
    ),
]


class Policy:
    """Allows everything but the base skill ``secret``; remembers what it was asked."""

    seen: ClassVar[list[AuthorizationRequest]] = []

    @hookimpl
    def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
        Policy.seen.append(request)
        return Decision.deny("secret") if request.skill_id == "secret" else Decision.allow()


class Approver:
    @hookimpl
    def approve_invocation(self, request: AuthorizationRequest) -> Decision | None:
        return Decision.deny("not today") if request.skill_id == "guarded" else None


@pytest.fixture(scope="module")
def registry() -> Registry:
    plugins = [
        ("tests", SkillsPlugin(simple_skill("echo"), *BASE_SKILLS)),
        ("policy", Policy()),
        ("approver", Approver()),
        ("callers", HeaderCallers()),
    ]
    return build_registry(load_plugins(use_entry_points=False, extra=plugins))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("base-skills")


@pytest.fixture(scope="module")
def url(registry: Registry, workdir: Path) -> Iterator[str]:
    server = ServerSettings(store="memory", max_task_outputs=MAX_OUTPUTS)
    config = Config(base_dir=workdir, server=server)
    with running_agent(registry, config) as base:
        yield base


def say(
    url: str,
    parts: list[Any],
    binding: str = "JSONRPC",
    *,
    skill: str | None = None,
    task_id: str | None = None,
    extensions: list[str] | None = None,
    caller: dict[str, str] = ALICE,
) -> dict[str, Any]:
    """SendMessage of a plain Message; ``{"message": ...}`` or ``{"task": ...}`` (or an error)."""
    message: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": parts}
    if skill is not None:
        message["metadata"] = {"skill": skill}
    if task_id is not None:
        message["taskId"] = task_id
    if extensions is not None:
        message["extensions"] = extensions
    headers = {**HEADERS, **caller}
    if binding == "JSONRPC":
        body = {
            "jsonrpc": "2.0",
            "id": "1",
            "method": "SendMessage",
            "params": {"message": message},
        }
        answer = httpx.post(url + "/", json=body, headers=headers, timeout=30).json()
        return answer.get("result", answer)  # type: ignore[no-any-return]
    response = httpx.post(
        url + "/message:send", json={"message": message}, headers=headers, timeout=30
    )
    return response.json()  # type: ignore[no-any-return]


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def state(answer: dict[str, Any]) -> str:
    assert "task" in answer, answer
    return str(answer["task"]["status"]["state"])


# -- the card, describe_skill and digests ----------------------------------------------------------


def test_card_lists_base_skills_as_ordinary_skills_outside_the_extension(url: str) -> None:
    card = httpx.get(url + "/.well-known/agent-card.json").json()
    entries = {s["id"]: s for s in card["skills"]}
    assert entries["help"]["inputModes"] == ["text/plain"]
    assert entries["help"]["outputModes"] == ["text/plain", "application/json"]
    assert entries["greedy"]["inputModes"] == ["application/json"]
    extension = next(e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI)
    bound = {s["skill_id"] for s in extension["params"]["skills"]}
    assert bound == {"echo"}
    assert {b.id for b in BASE_SKILLS} <= set(entries)


def test_describe_skill_and_digests_never_cover_base_skills(url: str, registry: Registry) -> None:
    assert set(describe_payloads(registry)) == {"echo"}
    assert [s.skill_id for s in registry] == ["echo"]
    answer = rpc(
        url,
        "SendMessage",
        {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"data": {"skill": "describe_skill", "arguments": {"skill_id": "help"}}}],
                "extensions": [EXTENSION_URI],
            }
        },
        headers=ALICE,
    )
    task = answer["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(task)["code"] == "skill_not_advertised"


def test_a_bad_declaration_is_refused_and_the_rest_load() -> None:
    async def handler(message: Any, context: Any) -> None:
        return None

    bad = [
        BaseSkill(id="describe_skill", name="x", description="x", handler=handler),
        BaseSkill(id="", name="x", description="x", handler=handler),
        BaseSkill(id="modes", name="x", description="x", handler=handler, input_modes=()),
        BaseSkill(id="late", name="x", description="x", handler=handler, timeout=-1),
    ]
    good = BaseSkill(id="fine", name="x", description="x", handler=handler)
    built = build_registry(
        load_plugins(use_entry_points=False, extra=[("p", SkillsPlugin(*bad, good))])
    )
    assert list(built.base_skills) == ["fine"]
    assert [r.rule for r in built.refused] == ["base_skill"] * 4


# -- routing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_matching_text_gets_a_direct_message(url: str, binding: str) -> None:
    answer = say(url, [text("Help")], binding)
    assert "message" in answer, answer
    reply = answer["message"]
    assert reply["role"] == "ROLE_AGENT"
    assert reply["parts"][0]["text"] == "help for alice"
    assert reply["parts"][1]["data"] == {"n": 1}


@pytest.mark.parametrize("binding", BINDINGS)
def test_metadata_names_the_skill(url: str, binding: str) -> None:
    answer = say(url, [text("anything at all")], binding, skill="help")
    assert answer["message"]["parts"][0]["text"] == "help for alice"


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_message_no_base_skill_claims_keeps_input_invalid(url: str, binding: str) -> None:
    answer = say(url, [text("what is this?")], binding)
    assert state(answer) == "TASK_STATE_REJECTED"
    assert error_of(answer["task"])["code"] == "input_invalid"
    assert "describe_skill" in error_of(answer["task"])["message"]


def test_a_malformed_request_object_is_never_claimed(url: str) -> None:
    """``greedy`` claims any data, but not a request object: its details stay the draft's."""
    answer = say(url, [{"data": {"skill": "echo", "arguments": {}}}])
    assert state(answer) == "TASK_STATE_REJECTED"
    error = error_of(answer["task"])
    assert error["code"] == "input_invalid" and error["details"]
    assert say(url, [{"data": {"hello": 1}}])["message"]["parts"][0]["text"] == (
        "greedy got [{'hello': 1}]"
    )


def test_the_extension_keeps_a_message_for_schema_skills(url: str) -> None:
    answer = say(url, [text("help")], skill="help", extensions=[EXTENSION_URI])
    assert state(answer) == "TASK_STATE_REJECTED"
    assert error_of(answer["task"])["code"] == "input_invalid"


def test_schema_skills_are_unchanged(url: str, registry: Registry) -> None:
    echo = registry.skills["echo"]
    request = {
        "skill": "echo",
        "skill_version": echo.skill.version,
        "interface_digest": echo.interface_digest,
        "arguments": {},
    }
    answer = say(url, [{"data": request}], extensions=[EXTENSION_URI])
    assert state(answer) == "TASK_STATE_COMPLETED"


# -- answers through a task ------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_status_artifacts_and_a_final_message(url: str, binding: str) -> None:
    task = say(url, [text("go")], binding, skill="report")["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["status"]["message"]["parts"] == [{"text": "done"}]
    (artifact,) = task["artifacts"]
    assert artifact["artifactId"] == "r1" and artifact["name"] == "report"
    line, data, file = artifact["parts"]
    assert line["text"] == "line" and data["data"] == {"rows": 2}
    assert base64.b64decode(file["raw"]) == b"a,b\n"
    assert file["mediaType"] == "text/csv" and file["filename"] == "r.csv"


@pytest.mark.parametrize("binding", BINDINGS)
def test_input_required_then_the_answer(url: str, binding: str) -> None:
    task = say(url, [text("hi")], binding, skill="chat")["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert task["status"]["message"]["parts"] == [{"text": "what is your name?"}]
    done = say(url, [text("Ada")], binding, task_id=task["id"])["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["status"]["message"]["parts"] == [{"text": "hello Ada (after 'hi')"}]


def test_a_reply_after_the_task_began_fails_it(url: str) -> None:
    answer = say(url, [text("x")], skill="late")
    assert state(answer) == "TASK_STATE_FAILED"
    error = error_of(answer["task"])
    assert error["code"] == "output_invalid" and "after its task began" in error["message"]


def _stream(url: str, parts: list[Any], skill: str) -> list[Any]:
    """Every event of SendStreamingMessage over JSON-RPC."""
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": parts}
    message["metadata"] = {"skill": skill}
    body = {"jsonrpc": "2.0", "id": "1", "method": "SendStreamingMessage"}
    body["params"] = {"message": message}
    headers = {**HEADERS, **ALICE, "Accept": "text/event-stream"}
    events = []
    with httpx.stream("POST", url + "/", json=body, headers=headers, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line.removeprefix("data:"))["result"])
    return events


def test_streaming_a_direct_reply_and_a_task(url: str) -> None:
    (only,) = _stream(url, [text("x")], "help")
    assert only["message"]["parts"][0]["text"] == "help for alice"
    events = _stream(url, [text("x")], "report")
    assert "task" in events[0]
    kinds = [next(iter(e)) for e in events[1:]]
    assert "artifactUpdate" in kinds and kinds[-1] == "statusUpdate"
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


# -- the same pipeline as schema skills ------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_an_authorization_policy_denies(url: str, binding: str) -> None:
    Policy.seen.clear()
    answer = say(url, [text("x")], binding, skill="secret")
    assert state(answer) == "TASK_STATE_REJECTED"
    assert error_of(answer["task"])["code"] == "authorization_failed"
    asked = [r for r in Policy.seen if r.skill_id == "secret"]
    assert [r.scope for r in asked] == ["skill"] and asked[0].kind == "base"
    assert asked[0].caller.identity == "alice" and asked[0].caller.tenant == "t1"


def test_both_decisions_are_asked_for_an_allowed_call(url: str) -> None:
    Policy.seen.clear()
    say(url, [text("help")])
    assert [(r.skill_id, r.scope, r.kind) for r in Policy.seen] == [
        ("help", "skill", "base"),
        ("help", "invocation", "base"),
    ]


def test_an_approver_refuses(url: str) -> None:
    answer = say(url, [text("x")], skill="guarded")
    assert state(answer) == "TASK_STATE_REJECTED"
    assert error_of(answer["task"])["code"] == "authorization_failed"


def test_an_operator_approval_then_the_original_message(url: str, workdir: Path) -> None:
    parked = say(url, [text("please")], skill="waits")["task"]
    assert parked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    store = ApprovalStore(workdir / Config().server.approvals_store)
    [pending] = [a for a in store.list("pending") if a.task_id == parked["id"]]
    assert pending.skill_id == "waits" and pending.caller == "alice" and pending.tenant == "t1"
    store.decide(pending.id, granted=True, by=Decider("test"), reason="test")
    done = say(url, [text("decided?")], task_id=parked["id"])["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", done
    assert done["status"]["message"]["parts"] == [{"text": "please (0 before)"}]


def test_the_deadline_applies(url: str) -> None:
    answer = say(url, [text("x")], skill="slow")
    assert state(answer) == "TASK_STATE_FAILED"
    assert error_of(answer["task"])["code"] == "resource_limit_exceeded"


def test_the_output_limit_applies(url: str) -> None:
    answer = say(url, [text("x")], skill="chatty")
    assert state(answer) == "TASK_STATE_FAILED"
    assert error_of(answer["task"])["code"] == "resource_limit_exceeded"
    assert len(answer["task"].get("artifacts", [])) == MAX_OUTPUTS


@pytest.mark.parametrize("binding", BINDINGS)
def test_another_tenant_never_sees_the_task(url: str, binding: str) -> None:
    task = say(url, [text("hi")], binding, skill="chat")["task"]
    assert "error" in rpc(url, "GetTask", {"id": task["id"]}, headers=BOB)
    assert rpc(url, "GetTask", {"id": task["id"]}, headers=ALICE)["result"]["id"] == task["id"]
    intruder = say(url, [text("Mallory")], binding, task_id=task["id"], caller=BOB)
    assert "task" not in intruder and "message" not in intruder, intruder
    done = say(url, [text("Ada")], binding, task_id=task["id"])["task"]
    assert done["status"]["message"]["parts"] == [{"text": "hello Ada (after 'hi')"}]


def test_an_unauthenticated_caller_is_refused(url: str) -> None:
    response = httpx.post(
        url + "/message:send",
        json={"message": {"messageId": "m", "role": "ROLE_USER", "parts": [text("help")]}},
        headers=HEADERS,
        timeout=30,
    )
    assert response.status_code == 401


def test_a_per_skill_security_requirement_applies(tmp_path: Path) -> None:
    plugins = [("tests", SkillsPlugin(BASE_SKILLS[0])), ("p", Policy()), ("s", ScopedTokens())]
    registry = build_registry(load_plugins(use_entry_points=False, extra=plugins))
    config = Config(base_dir=tmp_path, skill_security={"help": ({"scoped": ("help:read",)},)})
    with running_agent(registry, config) as url:
        card = httpx.get(url + "/.well-known/agent-card.json").json()
        entry = next(s for s in card["skills"] if s["id"] == "help")
        assert entry["securityRequirements"] == [{"schemes": {"scoped": {"list": ["help:read"]}}}]
        refused = say(url, [text("help")], caller={"X-Scopes": "other"})
        assert state(refused) == "TASK_STATE_REJECTED"
        assert error_of(refused["task"])["code"] == "authorization_failed"
        served = say(url, [text("help")], caller={"X-Scopes": "help:read"})
        assert served["message"]["parts"][0]["text"] == "help for svc"
