"""An agent's 401 or 403 is authorization_failed (local), its challenge summarized, with a hint."""

from __future__ import annotations

import pytest
from helpers.hostile_agents import refusing_app, serving_self_described

from skillrack.client.challenge import MAX_CHALLENGE_CHARS, summarize_challenge
from skillrack.client.skill_client import SkillClient
from skillrack.errors import ErrorCode, SkillCallError


@pytest.mark.parametrize(
    ("header", "summary"),
    [
        ('Bearer realm="acme", error="invalid_token"', 'Bearer realm="acme"'),
        ("ApiKey realm=agents, header=X-API-Key", 'ApiKey realm="agents"'),
        ("Basic", "Basic"),
        ("", ""),
        (None, ""),
        ('Bearer realm="a\x1b[31mb"', 'Bearer realm="a?[31mb"'),
    ],
)
def test_the_challenge_is_summarized_to_scheme_and_realm(header: str | None, summary: str) -> None:
    assert summarize_challenge(header) == summary


def test_the_summary_is_bounded() -> None:
    assert len(summarize_challenge('Bearer realm="' + "r" * 10_000 + '"')) == MAX_CHALLENGE_CHARS


@pytest.mark.parametrize(
    ("card_too", "binding"),
    [(True, "JSONRPC"), (False, "JSONRPC"), (False, "HTTP+JSON")],
    ids=["card", "message-jsonrpc", "message-http-json"],
)
@pytest.mark.parametrize("status", [401, 403])
async def test_a_refusing_agent_is_authorization_failed(
    status: int, card_too: bool, binding: str
) -> None:
    app = refusing_app(status, card_too=card_too, binding=binding)
    with serving_self_described(app) as url:
        async with SkillClient(
            headers={"Authorization": "Bearer wrong"}, binding=binding
        ) as client:
            with pytest.raises(SkillCallError) as info:
                await client.send_request(url, {"skill": "x"})
    error = info.value
    assert error.code == ErrorCode.AUTHORIZATION_FAILED and not error.remote
    assert f"HTTP {status}" in error.message and "--header" in error.message
    assert 'Bearer realm="skillrack-test"' in error.message
    assert "k-123" not in error.message and "\x1b" not in error.message  # only scheme and realm
    assert "mozilla" not in error.message.lower()
