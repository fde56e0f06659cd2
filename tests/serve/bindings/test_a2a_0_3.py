"""A2A 0.3 callers through a2a-sdk's 0.3 layer (``[server] a2a_0_3``), under the draft's rules.

A real ``skillrack serve`` with 0.3 on is called by a2a-sdk 0.3.x's own
client, in an environment of its own (:mod:`helpers.a2a_0_3`), on both
bindings, streaming and not: the card it reads, ``describe_skill`` (whose
document hashes to the digest the card advertises), a skill called with the
0.3 extension activation (``X-A2A-Extensions`` and ``Message.extensions``),
a bad input ending ``rejected`` with the draft's ``input_invalid``, and a
push webhook it is refused (webhooks receive A2A 1.0 objects).  Raw 0.3
requests check the rest: authorization and tenants, input-required and
cancellation under the 0.3 state names, the body guard's refusal, and the
version rules (without ``a2a_0_3`` a 0.3 method is unknown; an A2A 1.0
method without ``A2A-Version`` is refused either way).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.a2a_0_3 import CLIENT, a2a_0_3_python
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, DenyForbidden, TestSkills
from helpers.builders import registry_of
from helpers.example_vendor import example_vendor_env
from helpers.header_callers import HeaderCallers, caller_header
from helpers.served_process import probe_request, serving, write_config
from helpers.signed_agent import signed_config
from helpers.waiting import wait_until

from skillrack.host.config import Config, ServerSettings
from skillrack.host.registry import Registry
from skillrack.interface.document import verify_document
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.protocol.signing import verify_card_signature
from skillrack.serve.bindings.card import CardEndpoint, build_card, load_card_signer
from skillrack.serve.middleware.error_sanitizer import is_error_body, sanitize
from skillrack.testing.serve import CARD_PATH, ServedAgent, skill_request, subprocess_agent

SERVER = "a2a_0_3 = true\npush_notifications = true\npush_allow_loopback = true\n"


@pytest.fixture(scope="module")
def python_0_3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return a2a_0_3_python(tmp_path_factory)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    workdir = tmp_path_factory.mktemp("a2a-0-3")
    with serving(workdir, config=write_config(workdir, SERVER)) as served:
        yield served


def _call(python: Path, agent: ServedAgent, transport: str, streaming: bool) -> Any:
    done = subprocess.run(
        [
            str(python),
            str(CLIENT),
            agent.url,
            transport,
            "1" if streaming else "0",
            "echo",
            json.dumps({"text": "hello from 0.3"}),
            json.dumps({"text": 5}),
            "http://127.0.0.1:9/hook",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:] + agent.output()[-3000:]
    return json.loads(done.stdout)


def _data(task: Any, artifact: str) -> Any:
    [found] = [a for a in task.get("artifacts", []) if a.get("name") == artifact]
    assert found["extensions"] == [EXTENSION_URI], found
    [part] = found["parts"]
    assert part["kind"] == "data", part
    return part["data"]


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize("transport", ["JSONRPC", "HTTP+JSON"])
@pytest.mark.slow
def test_a_0_3_client_describes_calls_and_is_refused_as_the_draft_says(
    python_0_3: Path, agent: ServedAgent, transport: str, streaming: bool
) -> None:
    seen = _call(python_0_3, agent, transport, streaming)
    card = seen["card"]
    assert card["protocolVersion"] == "0.3" and card["url"] == agent.url + "/", card
    # describe_skill: the document a 0.3 caller receives hashes to the advertised digest.
    described = seen["describe"]
    assert described["status"]["state"] == "completed", described
    result = _data(described, "describe_skill")["result"]
    verified = verify_document(result["interface"])
    assert verified.interface_digest == result["interface_digest"] == card["digests"]["echo"]
    # The skill, bound to that digest.
    answer = seen["answer"]
    assert answer["status"]["state"] == "completed", answer
    assert _data(answer, "echo") == {"skill": "echo", "result": {"echo": "hello from 0.3"}}
    # Bad input: the draft's error in the final status Message, the task rejected.
    refused = seen["refused"]
    assert refused["status"]["state"] == "rejected", refused
    [part] = refused["status"]["message"]["parts"]
    error = part["data"]["error"]
    assert error["code"] == "input_invalid", error
    assert [d["instance_path"] for d in error["details"]] == ["/text"], error
    assert "artifacts" not in refused or refused["artifacts"] == []
    # Push: refused to a 0.3 caller, with 0.3's own code for it.
    push = seen["push"]
    if transport == "JSONRPC":
        assert push["code"] == -32003 and "A2A 1.0" in push["message"], push
    else:
        assert push["status"] == 400 and "A2A 1.0" in push["body"]["error"]["message"], push
    if not streaming:  # the extension's activation is echoed under the name it was asked by
        assert {"x-a2a-extensions": EXTENSION_URI, "a2a-extensions": EXTENSION_URI} in seen[
            "echoed"
        ], seen["echoed"]


def _raw(url: str, method: str, params: Any, headers: dict[str, str] | None = None) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(url + "/", json=body, headers=headers or {}, timeout=30).json()


def _message_0_3(data: Any) -> dict[str, Any]:
    return {
        "message": {
            "kind": "message",
            "messageId": "m-0-3",
            "role": "user",
            "parts": [{"kind": "data", "data": data}],
            "extensions": [EXTENSION_URI],
        }
    }


def test_the_card_lists_0_3_after_1_0_and_1_0_methods_still_need_the_header(
    agent: ServedAgent,
) -> None:
    card = httpx.get(agent.url + CARD_PATH, timeout=10).json()
    listed = [(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]]
    assert listed == [
        ("JSONRPC", "1.0"),
        ("HTTP+JSON", "1.0"),
        ("JSONRPC", "0.3"),
        ("HTTP+JSON", "0.3"),
    ]
    assert "A2A versions: 1.0 and 0.3" in agent.output()
    assert "push notifications: on, configs stored in clear" in agent.output()
    # A request without A2A-Version is 0.3: an A2A 1.0 method so sent is refused.
    answer = _raw(agent.url, "GetTask", {"id": "x"})
    assert answer["error"]["code"] == -32009, answer


def test_an_unsafe_integer_from_a_0_3_caller_gets_the_drafts_code(agent: ServedAgent) -> None:
    """The body guard runs before either version's parser: one refusal, the draft's code."""
    params = _message_0_3({"skill": "echo", "arguments": {"n": 2**60}})
    answer = _raw(agent.url, "message/send", params)
    error = answer["error"]
    assert error["code"] == -32602, answer
    [info] = error["data"]
    assert info["metadata"] == {
        "code": "input_invalid",
        "pointer": "/params/message/parts/0/data/arguments/n",
    }


def test_a_malformed_0_3_request_is_told_so_without_the_parsers_text(agent: ServedAgent) -> None:
    answer = _raw(agent.url, "message/send", {"message": {"role": "robot", "parts": "x"}})
    error = answer["error"]
    assert error["code"] == -32600 and error["message"] == "invalid request", answer
    assert "validation error" not in json.dumps(answer) and "pydantic" not in json.dumps(answer)
    assert error["data"][-1]["metadata"] == {"code": "input_invalid"}, answer


def test_without_the_setting_0_3_callers_are_not_served(tmp_path: Path) -> None:
    with serving(tmp_path) as off:
        card = httpx.get(off.url + CARD_PATH, timeout=10).json()
        answer = _raw(off.url, "message/send", _message_0_3({"skill": "describe_skill"}))
        rest = httpx.post(off.url + "/v1/message:send", json=_message_0_3({}), timeout=30)
    assert {i["protocolVersion"] for i in card["supportedInterfaces"]} == {"1.0"}
    assert "protocolVersion" not in card and "url" not in card, sorted(card)
    assert answer["error"]["code"] == -32601, answer  # message/send: no such method in 1.0
    assert rest.status_code == 400 and "version" in rest.text.lower(), rest.text


# The rest of the draft's rules, through raw 0.3 JSON-RPC -----------------------------------------


def _send_0_3(url: str, data: Any, headers: dict[str, str] | None = None, **message: Any) -> Any:
    params = _message_0_3(data)
    params["message"].update(message, messageId=str(uuid.uuid4()))
    answer = _raw(
        url, "message/send", params, {"X-A2A-Extensions": EXTENSION_URI, **(headers or {})}
    )
    assert "result" in answer, answer
    return answer["result"]


def _bound(registry: Registry, skill: str, arguments: Any) -> dict[str, Any]:
    registered = registry.get(skill)
    assert registered is not None
    return skill_request(skill, arguments, registered.skill.version, registered.interface_digest)


def test_authorization_and_tenants_hold_for_0_3_callers(tmp_path: Path) -> None:
    registry = registry_of(
        [
            ("tests", TestSkills()),
            ("allow", AllowAll()),
            ("deny", DenyForbidden()),
            ("callers", HeaderCallers()),
        ]
    )
    acme, globex = caller_header("acme", "alice"), caller_header("globex", "bob")
    arguments = {
        "resource_id": "network-resource-123",
        "condition": {
            "metric": "utilization",
            "operator": "gte",
            "threshold": 80,
            "unit": "percent",
        },
    }
    config = Config(base_dir=tmp_path, server=ServerSettings(a2a_0_3=True))
    with running_agent(registry, config) as url:
        skill = "evaluate_resource_condition"
        denied = _send_0_3(
            url, _bound(registry, skill, {**arguments, "resource_id": "forbidden"}), acme
        )
        done = _send_0_3(url, _bound(registry, skill, arguments), acme)
        mine = _raw(url, "tasks/get", {"id": done["id"]}, acme)
        theirs = _raw(url, "tasks/get", {"id": done["id"]}, globex)
    assert denied["status"]["state"] == "rejected", denied
    assert (
        denied["status"]["message"]["parts"][0]["data"]["error"]["code"] == "authorization_failed"
    )
    assert done["status"]["state"] == "completed", done
    assert mine["result"]["status"]["state"] == "completed", mine
    assert theirs["error"]["code"] == -32001, theirs  # another tenant's task does not exist


def test_input_required_and_cancel_through_0_3(agent: ServedAgent) -> None:
    asked = _send_0_3(agent.url, probe_request(agent.url, "ask", {}))
    assert asked["status"]["state"] == "input-required", asked
    answered = _send_0_3(
        agent.url,
        {"confirmed": True},
        taskId=asked["id"],
        contextId=asked["contextId"],
    )
    assert answered["status"]["state"] == "completed", answered
    params = _message_0_3(probe_request(agent.url, "ticker", {"ticks": 200, "interval": 0.05}))
    started = _raw(agent.url, "message/send", {**params, "configuration": {"blocking": False}})
    task_id = started["result"]["id"]
    canceled = _raw(agent.url, "tasks/cancel", {"id": task_id})
    assert canceled["result"]["id"] == task_id, canceled
    wait_until(
        lambda: (
            _raw(agent.url, "tasks/get", {"id": task_id})["result"]["status"]["state"] == "canceled"
        ),
        f"task {task_id} to read canceled over A2A 0.3",
    )


def test_skillracks_own_error_data_survives_in_the_0_3_form() -> None:
    """a2a-sdk's 0.3 layer passes ``data`` as given (a dict), not as 1.0's ErrorInfo list."""
    own = {"origin": "skillrack", "code": "input_invalid", "field": "url"}
    body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "told", "data": own}}
    assert is_error_body(json.dumps(body, separators=(",", ":")).encode())
    assert sanitize(json.loads(json.dumps(body)))["error"] == body["error"]
    success = {"jsonrpc": "2.0", "id": 1, "result": {"status": {"error": 1}}}
    assert not is_error_body(json.dumps(success, separators=(",", ":")).encode())


def test_a_signed_card_with_the_0_3_fields_still_verifies(tmp_path: Path) -> None:
    """The merged 0.3 fields are outside the signed 1.0 card: a 1.0 verifier ignores them."""
    config = dataclasses.replace(signed_config(tmp_path), server=ServerSettings(a2a_0_3=True))
    assert config.signing is not None
    signer = load_card_signer(config.signing, config.base_dir)
    registry = registry_of([("tests", TestSkills())])
    body = CardEndpoint.of(build_card(registry, config, "http://127.0.0.1:9", signer), 60).body
    assert json.loads(body)["protocolVersion"] == "0.3"
    verify_card_signature(body, signer.jwks())


def test_a_base_skill_answers_a_0_3_text_message(tmp_path: Path) -> None:
    """The example vendor's help (a base-A2A skill) claims a 0.3 text Message and replies."""
    config = tmp_path / "skillrack.toml"
    config.write_text("[server]\na2a_0_3 = true\n")
    args = ["--config", str(config), "--store", "memory"]
    env = example_vendor_env(tmp_path / "site")  # tox's core env holds only the host
    with subprocess_agent(tmp_path, env=env, args=args) as agent:
        params = {
            "message": {
                "kind": "message",
                "messageId": "m-help",
                "role": "user",
                "parts": [{"kind": "text", "text": "help"}],
            }
        }
        answer = _raw(agent.url, "message/send", params)
    reply = answer["result"]
    assert reply["kind"] == "message" and reply["role"] == "agent", answer
    assert "evaluate_resource_condition" in reply["parts"][0]["text"], reply
