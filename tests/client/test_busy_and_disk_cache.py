"""An agent that says "not now", and a repeated ``skillrack call`` that costs one request.

Real skillrack agents on 127.0.0.1.  One has a rate limit of two requests a
minute: its 429 reaches the caller as ``resource_limit_exceeded`` with the
wait it asked for, on both HTTP bindings, not as a transport error.
Another sits behind a wrapper that refuses the first POSTs with 429
(``Retry-After: 1``) or 503 (no ``Retry-After``): ``--retry`` sends them
again, never earlier than asked, and the wrapper's own count says how many
requests were refused and let through.  A third counts every request while
``skillrack call`` runs twice with a disk cache (the second run: one POST,
nothing else), then is replaced on the same port by an agent whose document
changed: the stale card is fetched again after the agent's
``interface_mismatch`` and the call goes through.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.cli import main as cli
from skillrack.client.busy import AgentBusy, retry_after
from skillrack.client.skill_client import SkillClient
from skillrack.errors import SkillCallError
from skillrack.host.config import Config, ServerSettings
from skillrack.testing.serve import free_port

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


def probe_registry(schema: Any = SCHEMA) -> Any:
    return registry_of(
        [("probe", SkillsPlugin(simple_skill("probe", input_schema=schema))), ("allow", AllowAll())]
    )


@dataclass
class Refusing:
    """Answers the first ``refuse`` POSTs with ``status`` (and ``Retry-After`` if given)."""

    app: ASGIApp
    refuse: int = 0
    status: int = 429
    wait: str | None = "1"
    seen: list[tuple[float, int]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if self.refuse > 0:
            self.refuse -= 1
            self.seen.append((time.monotonic(), self.status))
            headers = {"Retry-After": self.wait} if self.wait is not None else {}
            body = {"error": {"code": "resource_limit_exceeded", "message": "slow down"}}
            await JSONResponse(body, self.status, headers)(scope, receive, send)
            return
        self.seen.append((time.monotonic(), 200))
        await self.app(scope, receive, send)


@dataclass
class Everything:
    """Counts every request as ``METHOD path``."""

    app: ASGIApp
    seen: list[str] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append(f"{scope['method']} {scope['path']}")
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def limited() -> Iterator[str]:
    config = Config(
        base_dir=Path(tempfile.mkdtemp(prefix="skillrack-trust-")),
        server=ServerSettings(rate_per_minute=2),
    )
    with running_agent(probe_registry(), config) as url:
        yield url


@pytest.fixture(scope="module")
def refusing() -> Iterator[tuple[str, Refusing]]:
    holder: list[Refusing] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        holder.append(Refusing(app))
        return holder[0]

    with running_agent(probe_registry(), wrap=wrap) as url:
        yield url, holder[0]


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_429_is_resource_limit_exceeded_with_the_wait(limited: str, binding: str) -> None:
    async with SkillClient(binding=binding) as client:
        with pytest.raises(SkillCallError) as refused:
            for _ in range(3):  # two requests a minute: a call is two (describe, invoke)
                await client.call(limited, "probe", {"text": "hi"})
    error = refused.value
    assert isinstance(error, AgentBusy)
    assert error.code == "resource_limit_exceeded" and not error.remote and error.state is None
    assert error.retry_after is not None and 0 < error.retry_after <= 60
    assert "answered HTTP 429 (too many requests)" in error.message, error.message
    assert f"retry after {error.retry_after:g} s" in error.message
    assert "httpx" not in error.message and "HTTPStatusError" not in error.message


def test_skillrack_call_prints_it_as_the_draft_says(
    limited: str, capsys: pytest.CaptureFixture[str]
) -> None:
    statuses = []
    for _ in range(3):
        statuses.append(cli.main(["call", limited, "probe", "--args", "{}"]))
        out = json.loads(capsys.readouterr().out)
    assert statuses[-1] == 1, statuses
    assert out["error"]["code"] == "resource_limit_exceeded"
    assert isinstance(out["error"]["retry_after"], int | float)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_retry_honours_retry_after(refusing: tuple[str, Refusing], binding: str) -> None:
    url, wrapper = refusing
    wrapper.seen.clear()
    wrapper.refuse, wrapper.status, wrapper.wait = 2, 429, "1"
    async with SkillClient(retries=2, binding=binding) as client:
        result = await client.call(url, "probe", {"text": "hi"})
    assert result.state == "TASK_STATE_COMPLETED"
    statuses = [status for _, status in wrapper.seen]
    assert statuses == [429, 429, 200, 200]  # describe refused twice, then describe and call
    times = [when for when, _ in wrapper.seen]
    assert times[1] - times[0] >= 1.0 and times[2] - times[1] >= 1.0  # never before asked
    assert times[2] - times[1] < 3.0  # jitter: at most 10 % or 1 s more


async def test_a_503_without_retry_after_backs_off_and_retries(
    refusing: tuple[str, Refusing],
) -> None:
    url, wrapper = refusing
    wrapper.seen.clear()
    wrapper.refuse, wrapper.status, wrapper.wait = 1, 503, None
    async with SkillClient(retries=1) as client:
        result = await client.call(url, "probe", {})
    assert result.state == "TASK_STATE_COMPLETED"
    assert [status for _, status in wrapper.seen] == [503, 200, 200]


async def test_without_retry_or_past_the_retries_the_refusal_is_reported(
    refusing: tuple[str, Refusing],
) -> None:
    url, wrapper = refusing
    wrapper.seen.clear()
    wrapper.refuse, wrapper.status, wrapper.wait = 5, 429, "1"
    async with SkillClient(retries=1) as client:
        with pytest.raises(AgentBusy) as refused:
            await client.call(url, "probe", {})
    assert refused.value.retry_after == 1.0 and "slow down" in refused.value.message
    assert len(wrapper.seen) == 2  # the first try and one retry
    # A wait past the call's timeout is not begun: the refusal is reported at once.
    wrapper.seen.clear()
    wrapper.refuse, wrapper.wait = 5, "30"
    started = time.monotonic()
    async with SkillClient(retries=3, timeout=5) as client:
        with pytest.raises(AgentBusy):
            await client.call(url, "probe", {})
    assert time.monotonic() - started < 4 and len(wrapper.seen) == 1
    wrapper.refuse = 0


def test_retry_after_as_an_http_date() -> None:
    import httpx

    now = 1_700_000_000.0
    headers = httpx.Headers({"Retry-After": "Tue, 14 Nov 2023 22:13:40 GMT"})
    assert retry_after(headers, now=now) == pytest.approx(20.0)
    assert retry_after(httpx.Headers({"Retry-After": "soon"})) is None


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_a_repeated_call_costs_one_request(
    binding: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SKILLRACK_CACHE_DIR", str(tmp_path / "cache"))
    holder: list[Everything] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        holder.append(Everything(app))
        return holder[0]

    port = free_port()
    argv = ["call", f"http://127.0.0.1:{port}", "probe", "--args", '{"text": "hi"}']
    argv += ["--binding", binding]
    with running_agent(probe_registry(), wrap=wrap, port=port):
        seen = holder[0].seen
        assert cli.main(argv) == 0
        first = list(seen)
        assert first[0] == "GET /.well-known/agent-card.json" and len(first) == 3, first
        seen.clear()
        assert cli.main(argv) == 0
        sent = "POST /message:send" if binding == "HTTP+JSON" else "POST /"
        assert seen == [sent], seen  # the call on its binding, nothing else
        seen.clear()
        assert cli.main([*argv, "--no-cache"]) == 0
        assert len(seen) == 3, seen  # card, describe_skill, call
    capsys.readouterr()
    # The agent is replaced on the same port by one whose document changed: the card kept
    # on disk is stale; the agent's interface_mismatch makes the client fetch it again.
    holder.clear()
    changed = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 9}}}
    with running_agent(probe_registry(changed), wrap=wrap, port=port):
        assert cli.main(argv) == 0, capsys.readouterr().out
        assert json.loads(capsys.readouterr().out)["result"] == {}
        methods = [s.split()[0] for s in holder[0].seen]
        # stale call (rejected), card, describe_skill, call
        assert methods == ["POST", "GET", "POST", "POST"], holder[0].seen


def test_a_document_altered_on_disk_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What is read back is verified again: an altered document misses and is fetched anew."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SKILLRACK_CACHE_DIR", str(cache))
    holder: list[Everything] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        holder.append(Everything(app))
        return holder[0]

    with running_agent(probe_registry(), wrap=wrap) as url:
        argv = ["call", url, "probe", "--args", '{"text": "hi"}']
        assert cli.main(argv) == 0
        (stored,) = (cache / "interfaces").glob("*.json")
        entry = json.loads(stored.read_text(encoding="utf-8"))
        schema = entry["document"]["input_schema"]["resolution"]["schema"]
        schema["properties"]["text"] = {}  # accepts anything now; its digest no longer holds
        stored.write_text(json.dumps(entry), encoding="utf-8")
        assert (cache / "cards").is_dir() and oct(cache.stat().st_mode & 0o777) == "0o700"
        holder[0].seen.clear()
        assert cli.main(argv) == 0
        methods = [s.split()[0] for s in holder[0].seen]
        assert methods == ["POST", "POST"], holder[0].seen  # describe_skill again, then the call
    capsys.readouterr()
