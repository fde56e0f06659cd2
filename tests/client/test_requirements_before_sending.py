"""Nothing is sent when nothing can succeed: the card's requirements are read before any request.

A real agent whose ``evaluate_resource_condition`` requires an ``X-Plain``
API key *and* a client certificate (one alternative, both schemes) counts
every request it receives.  A client presenting the certificate alone is
refused locally after reading the card: no ``describe_skill``, no
invocation; the message names the one thing missing (the header) and the
option that gives it, not the certificate it already presents.  The same
holds for ``skillrack call``; with the header the call goes through.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.certificates import Issued, TestCA
from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack import Caller, hookimpl
from skillrack.cli import main as cli
from skillrack.client.skill_client import SkillClient
from skillrack.client.tls import ClientTls
from skillrack.errors import SkillCallError
from skillrack.host.config import Config
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import build_registry
from skillrack.serve.security.authn import RequestCredentials

SKILL = "evaluate_resource_condition"
ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}


class PlainAndCertificate:
    """Scheme ``plain`` (any ``X-Plain`` header) and a published ``mtls`` scheme."""

    @hookimpl
    def authenticate(self, request: RequestCredentials) -> Caller | None:
        if "x-plain" not in request.headers:
            return None
        return Caller("person", authenticated=True, schemes={"plain": (), "mtls": ()})

    @hookimpl
    def security_schemes(self) -> dict[str, Any]:
        return {
            "plain": {"apiKeySecurityScheme": {"location": "header", "name": "X-Plain"}},
            "mtls": {"mtlsSecurityScheme": {"description": "client certificate"}},
        }


@dataclass
class Counter:
    """ASGI wrapper: every request as ``METHOD /path``."""

    app: ASGIApp
    seen: list[str] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append(f"{scope['method']} {scope['path']}")
        await self.app(scope, receive, send)

    def posts(self) -> list[str]:
        return [seen for seen in self.seen if seen.startswith("POST")]


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Counter]]:
    config = Config(
        base_dir=tmp_path_factory.mktemp("requirements-first"),
        skill_security={SKILL: ({"plain": (), "mtls": ()},)},
    )
    extra = [("tests", TestSkills()), ("allow", AllowAll()), ("plain", PlainAndCertificate())]
    registry = build_registry(load_plugins(use_entry_points=False, extra=extra))
    holder: list[Counter] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        holder.append(Counter(app))
        return holder[0]

    with running_agent(registry, config, wrap=wrap) as url:
        yield url, holder[0]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Issued:
    return TestCA(tmp_path_factory.mktemp("pki")).issue_client("observer")


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_certificate_alone_sends_nothing_and_names_the_missing_header(
    agent: tuple[str, Counter], certificate: Issued, binding: str
) -> None:
    url, counter = agent
    counter.seen.clear()
    tls = ClientTls(str(certificate.cert), str(certificate.key))
    async with SkillClient(tls=tls, binding=binding) as client:
        with pytest.raises(SkillCallError) as refused:
            await client.call(url, SKILL, ARGS)
    error = refused.value
    assert error.code == "authorization_failed" and not error.remote
    assert "lacks [plain: no X-Plain header]" in error.message, error.message
    assert "nothing was sent" in error.message
    assert "give --header 'X-Plain: KEY'" in error.message and "--client-cert" not in error.message
    assert counter.seen == ["GET /.well-known/agent-card.json"]  # the card, and nothing else


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_meeting_both_schemes_calls(
    agent: tuple[str, Counter], certificate: Issued, binding: str
) -> None:
    url, counter = agent
    counter.seen.clear()
    tls = ClientTls(str(certificate.cert), str(certificate.key))
    async with SkillClient(tls=tls, headers={"X-Plain": "1"}, binding=binding) as client:
        result = await client.call(url, SKILL, ARGS)
    assert result.state == "TASK_STATE_COMPLETED"
    assert len(counter.posts()) == 2  # describe_skill, then the call


async def test_nothing_presented_names_both(agent: tuple[str, Counter]) -> None:
    url, counter = agent
    counter.seen.clear()
    async with SkillClient() as client:
        with pytest.raises(SkillCallError) as refused:
            await client.call(url, SKILL, ARGS)
    message = refused.value.message
    # The agent's own requirement (either scheme) is the first one short.
    assert "requires mtls or plain" in message, message
    assert "lacks [mtls: no client certificate] or [plain: no X-Plain header]" in message
    assert "--client-cert" in message and "--header 'X-Plain: KEY'" in message
    assert counter.posts() == []


def test_skillrack_call_sends_nothing_either(
    agent: tuple[str, Counter],
    certificate: Issued,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    url, counter = agent
    counter.seen.clear()
    argv = ["call", url, SKILL, "--args", json.dumps(ARGS)]
    argv += ["--client-cert", str(certificate.cert), "--client-key", str(certificate.key)]
    assert cli.main(argv) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "authorization_failed"
    assert "no X-Plain header" in error["message"] and "--client-cert" not in error["message"]
    assert counter.posts() == []
