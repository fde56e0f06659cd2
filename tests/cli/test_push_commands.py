"""``call --push-url`` and ``push list|get|delete``, on every binding, against real agents.

skillrack's agent (push notifications on, loopback webhooks allowed) posts
to a webhook this test serves, which records what arrives: the posts are the
independent read of what the command set.  The plain a2a-sdk agent keeps the
configs in a2a-sdk's own store.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from helpers.plain_a2a_agent import plain_agent
from helpers.served_process import PLUGIN_MODULE, serving
from helpers.waiting import wait_until

from skillrack.cli import main as cli
from skillrack.testing.serve import CARD_PATH, ServedAgent, free_port

KEY = "push-cli-test-key"


class Webhook:
    """A loopback HTTP server recording every POST: (path, token header, body)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, str | None, dict[str, Any]]] = []
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                token = self.headers.get("X-A2A-Notification-Token")
                posts.append((self.path, token, json.loads(body or b"{}")))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    yield hook
    hook.close()


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    workdir = tmp_path_factory.mktemp("push-cli")
    keys = workdir / "keys.toml"
    keys.write_text(
        f'[[key]]\nsha256 = "{hashlib.sha256(KEY.encode()).hexdigest()}"\n'
        'identity = "alice"\nroles = ["operator"]\n'
    )
    policy = workdir / "policy.toml"
    policy.write_text('[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["*"]\n')
    config = workdir / "skillrack.toml"
    config.write_text(
        f'[plugins]\nbuiltin = ["{PLUGIN_MODULE}"]\n\n[server]\nrate_per_minute = 1000000\n'
        f"grpc_port = {free_port()}\npush_notifications = true\npush_allow_loopback = true\n\n"
        f'[plugins.api_keys]\nfile = "{keys}"\n\n[plugins.policy]\nfile = "{policy}"\n'
    )
    with serving(workdir, config=config) as served:
        yield served


def _binding_args(url: str, binding: str) -> list[str]:
    card = httpx.get(url + CARD_PATH, timeout=10).json()
    if binding != "GRPC":
        return ["--binding", binding]
    [target] = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    return ["--binding", binding, "--allow-origin", f"http://{target}"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    status = cli.main(list(argv))
    out = capsys.readouterr().out
    try:
        return status, json.loads(out)
    except ValueError:
        return status, out


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
def test_call_push_url_then_push_commands(
    agent: ServedAgent, webhook: Webhook, binding: str, capsys: pytest.CaptureFixture[str]
) -> None:
    via = [*_binding_args(agent.url, binding), "--header", f"X-API-Key: {KEY}"]
    path = f"/hook-{binding.replace('+', '-').lower()}"
    status, out = run(
        capsys, "call", agent.url, "echo", "--args", '{"text": "pushed"}',
        "--push-url", webhook.url + path, "--push-token", f"token-{binding}", *via,
    )  # fmt: skip
    assert status == 0 and out["state"] == "TASK_STATE_COMPLETED"
    task_id = out["task_id"]
    # The agent posted the task's updates to the webhook, with the token.
    wait_until(
        lambda: any(p == path and "COMPLETED" in json.dumps(b) for p, _, b in webhook.posts),
        "the completed task posted to the webhook",
    )
    assert {token for p, token, _ in webhook.posts if p == path} == {f"token-{binding}"}
    assert all(task_id in json.dumps(body) for p, _, body in webhook.posts if p == path)

    status, listed = run(capsys, "push", "list", agent.url, task_id, *via)
    assert status == 0
    [config] = listed["configs"]
    assert config["url"] == webhook.url + path and config["taskId"] == task_id
    status, got = run(capsys, "push", "get", agent.url, task_id, config["id"], *via)
    assert status == 0 and got == config
    status, deleted = run(capsys, "push", "delete", agent.url, task_id, *via)
    assert status == 0 and deleted == {"deleted": config["id"], "taskId": task_id}
    status, listed = run(capsys, "push", "list", agent.url, task_id, *via)
    assert status == 0 and listed == {"configs": []}


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
def test_push_on_a_plain_a2a_agent(
    binding: str, webhook: Webhook, capsys: pytest.CaptureFixture[str]
) -> None:
    """a2a-sdk's own store keeps the config, and a2a-sdk's own sender posts the task."""
    hook = f"{webhook.url}/plain-{binding.replace('+', '-').lower()}"
    with plain_agent() as plain:
        via = _binding_args(plain.url, binding)
        status = cli.main(
            ["call", plain.url, "echo", "--text", "hi", "--push-url", hook,
             "--push-token", "t", *via]
        )  # fmt: skip
        captured = capsys.readouterr()
        assert status == 0 and captured.out.strip() == "echo: hi"
        task_id = captured.err.split("task ")[1].split()[0]
        path = hook.removeprefix(webhook.url)
        wait_until(
            lambda: any(p == path and "COMPLETED" in json.dumps(b) for p, _, b in webhook.posts),
            "the plain agent posting the completed task to the webhook",
        )
        assert {token for p, token, _ in webhook.posts if p == path} == {"t"}
        assert all(task_id in json.dumps(body) for p, _, body in webhook.posts if p == path)
        status, listed = run(capsys, "push", "list", plain.url, task_id, *via)
        assert status == 0
        assert [(c["url"], c["token"]) for c in listed["configs"]] == [(hook, "t")]
        status, out = run(capsys, "push", "delete", plain.url, task_id, *via)
        assert status == 0
        status, out = run(capsys, "push", "get", plain.url, task_id, *via)
        assert status == 1 and "needs a CONFIG_ID (it has none)" in out["error"]["message"]


def test_push_url_must_be_an_http_url(capsys: pytest.CaptureFixture[str]) -> None:
    for url in ("ftp://x/y", "https://user:pw@hooks.example.net/a"):
        with pytest.raises(SystemExit) as exited:
            cli.main(["call", "http://127.0.0.1:9", "s", "--args", "{}", "--push-url", url])
        assert exited.value.code == 2
        assert "--push-url" in capsys.readouterr().err


def test_refused_webhook_is_the_agents_error(
    agent: ServedAgent, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(
        capsys, "call", agent.url, "echo", "--args", "{}", "--push-url",
        "http://169.254.169.254/hook", "--header", f"X-API-Key: {KEY}",
    )  # fmt: skip
    assert status == 1 and "169.254.169.254" in out["error"]["message"]
