"""The client's rules against an agent written with a2a-sdk alone, on JSON-RPC, HTTP+JSON and gRPC.

The plain agent (:mod:`helpers.plain_a2a_agent`) records every request it
receives, on both of its ports, so each test states exactly what the client
sent:

* its card requires an API key header: a call without it sends nothing after
  the card (no message on any binding), and its one-line refusal names the
  header to give; with it, the call goes through;
* it refuses messages with HTTP 429 or 503 and ``Retry-After``, or on gRPC
  with ``RESOURCE_EXHAUSTED`` or ``UNAVAILABLE`` and a ``google.rpc.RetryInfo``:
  ``skillrack call`` prints ``resource_limit_exceeded`` with the wait, and
  ``--retry N`` sends the message again no earlier than asked;
* its card has ``Cache-Control: max-age``: a repeated ``skillrack call`` with
  the disk cache costs the message alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.plain_a2a_agent import CARD, KEY, KEY_HEADER, PlainAgent, plain_agent

from skillrack.cli import main as cli

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]


@pytest.fixture(scope="module")
def keyed() -> Iterator[PlainAgent]:
    with plain_agent(api_key=True) as agent:
        yield agent


@pytest.fixture(scope="module")
def cached() -> Iterator[PlainAgent]:
    with plain_agent(card_max_age=300) as agent:
        yield agent


def via(agent: PlainAgent, binding: str) -> list[str]:
    """``--binding`` (and the gRPC port allowed: it is another origin)."""
    allow = ["--allow-origin", f"http://{agent.grpc_target}"] if binding == "GRPC" else []
    return ["--binding", binding, *allow]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    status = cli.main(list(argv))
    out = capsys.readouterr().out
    try:
        return status, json.loads(out)
    except ValueError:
        return status, out.strip()


def messages(agent: PlainAgent) -> list[tuple[float, str, int]]:
    """What the agent received besides its card: the messages (and polls), in order."""
    return [seen for seen in agent.gate.seen if seen[1] != f"GET {CARD}"]


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLRACK_CACHE_DIR", "")  # each test says when it wants one


# -- item 2: nothing sent when nothing can succeed ------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_missing_api_key_sends_nothing_after_the_card(
    keyed: PlainAgent, binding: str, capsys: pytest.CaptureFixture[str]
) -> None:
    keyed.gate.seen.clear()
    keyed.grpc_metadata.clear()
    status, out = run(capsys, "call", keyed.url, "echo", "--text", "hi", *via(keyed, binding))
    assert status == 1, out
    error = out["error"]
    assert error["code"] == "authorization_failed", error
    assert "requires plain_key" in error["message"] and "nothing was sent" in error["message"]
    assert f"--header '{KEY_HEADER}: KEY'" in error["message"]
    assert keyed.gate.requests() == [f"GET {CARD}"]  # the card, and nothing else
    assert keyed.grpc_metadata == []


@pytest.mark.parametrize("binding", BINDINGS)
def test_with_the_api_key_the_call_goes_through(
    keyed: PlainAgent, binding: str, capsys: pytest.CaptureFixture[str]
) -> None:
    keyed.gate.seen.clear()
    key = ["--header", f"{KEY_HEADER}: {KEY}"]
    status, out = run(capsys, "call", keyed.url, "echo", "--text", "hi", *key, *via(keyed, binding))
    assert status == 0 and out == "echo: hi"
    answers = [answer for _, _, answer in messages(keyed)]
    assert answers and set(answers) == {200}, keyed.gate.seen
    grpc_sent = [what for what in keyed.gate.requests() if what.startswith("gRPC")]
    assert bool(grpc_sent) == (binding == "GRPC")


@pytest.mark.parametrize("binding", BINDINGS)
def test_describe_and_skills_of_a_keyed_agent_read_the_card_only(
    keyed: PlainAgent, binding: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base skill is described from the card, its requirement shown; nothing else is sent."""
    keyed.gate.seen.clear()
    status, out = run(capsys, "skills", keyed.url, "--json", *via(keyed, binding))
    assert status == 0, out
    [skill] = out["skills"]
    assert (skill["skill_id"], skill["kind"], skill["security"]) == ("echo", "base", "plain_key")
    status, out = run(capsys, "describe", keyed.url, "echo", *via(keyed, binding))
    assert status == 0 and out.startswith("echo  base A2A skill"), out
    assert "security  plain_key" in out.splitlines()
    assert set(keyed.gate.requests()) == {f"GET {CARD}"}


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_refused_key_is_answered_with_the_cards_header(
    keyed: PlainAgent, binding: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31 (smaller items): the agent names no scheme in its refusal (no challenge over
    HTTP, none on gRPC); the card's API key header is suggested, not a bearer token."""
    wrong = ["--header", f"{KEY_HEADER}: wrong"]
    status, out = run(
        capsys, "call", keyed.url, "echo", "--text", "hi", *wrong, *via(keyed, binding)
    )
    assert status == 1 and out["error"]["code"] == "authorization_failed", out
    message = out["error"]["message"]
    assert f"--header '{KEY_HEADER}: KEY'" in message and "Bearer" not in message, message
    assert [answer for _, _, answer in messages(keyed)][-1] == 401  # the agent's refusal


# -- item 1: trusted card signers -------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_an_unsigned_card_outside_the_trusted_signers_sends_nothing(
    cached: PlainAgent, binding: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trust file naming card signers: the plain agent's unsigned card is refused."""
    assert cli.main(["keys", "new", "--card", str(tmp_path / "card.pem")]) == 0
    capsys.readouterr()
    (tmp_path / "trust.toml").write_text('card_keys = ["card.jwks.json"]\n', encoding="utf-8")
    trust = ["--trust-file", str(tmp_path / "trust.toml")]
    cached.gate.seen.clear()
    argv = ["call", cached.url, "echo", "--text", "hi", *trust, *via(cached, binding)]
    status, out = run(capsys, *argv)
    assert status == 1 and out["error"]["code"] == "card_signature_invalid", out
    assert cached.gate.requests() == [f"GET {CARD}"]  # the card, and no message


# -- item 4: 429 and 503 as resource_limit_exceeded, --retry, the disk cache ----------------------


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("status", [429, 503])
def test_a_refusal_is_resource_limit_exceeded_with_the_wait(
    cached: PlainAgent, binding: str, status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    cached.gate.seen.clear()
    cached.gate.refuse, cached.gate.status, cached.gate.wait = 1, status, 7
    code, out = run(capsys, "call", cached.url, "echo", "--text", "hi", *via(cached, binding))
    assert code == 1, out
    error = out["error"]
    assert error["code"] == "resource_limit_exceeded" and error["retry_after"] == 7, error
    said = {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status] if binding == "GRPC" else status
    assert f"answered {'gRPC' if binding == 'GRPC' else 'HTTP'} {said}" in error["message"]
    assert "retry after 7 s" in error["message"] and "--retry N" in error["message"]
    assert [answer for _, _, answer in messages(cached)] == [status]  # one try, not resent


@pytest.mark.parametrize(
    ("binding", "retry_info"),
    [("JSONRPC", False), ("HTTP+JSON", False), ("GRPC", True), ("GRPC", False)],
)
def test_retry_waits_as_asked_then_goes_through(
    cached: PlainAgent, binding: str, retry_info: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """On gRPC the wait comes as a RetryInfo, or as ``retry-after`` metadata (skillrack's)."""
    cached.gate.seen.clear()
    cached.gate.refuse, cached.gate.status, cached.gate.wait = 2, 429, 1
    cached.gate.retry_info = retry_info
    argv = ["call", cached.url, "echo", "--text", "again", "--retry", "2", *via(cached, binding)]
    status, out = run(capsys, *argv)
    assert status == 0 and out == "echo: again", out
    sent = messages(cached)
    assert [answer for _, _, answer in sent][:3] == [429, 429, 200], sent
    times = [when for when, _, _ in sent]
    assert times[1] - times[0] >= 1.0 and times[2] - times[1] >= 1.0  # never before asked
    assert times[2] - times[1] < 3.0  # the jitter: at most 10 % (at least 1 s) more


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_503_without_a_wait_is_retried_after_a_backoff(
    cached: PlainAgent, binding: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cached.gate.seen.clear()
    cached.gate.refuse, cached.gate.status, cached.gate.wait = 1, 503, None
    argv = ["call", cached.url, "echo", "--text", "x", "--retry", "1", *via(cached, binding)]
    status, out = run(capsys, *argv)
    assert status == 0 and out == "echo: x", out
    assert [answer for _, _, answer in messages(cached)][:2] == [503, 200]


@pytest.mark.parametrize("binding", BINDINGS)
def test_past_its_retries_the_refusal_is_reported(
    cached: PlainAgent, binding: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cached.gate.seen.clear()
    cached.gate.refuse, cached.gate.status, cached.gate.wait = 5, 503, 1
    argv = ["call", cached.url, "echo", "--text", "x", "--retry", "1", *via(cached, binding)]
    status, out = run(capsys, *argv)
    cached.gate.refuse = 0
    assert status == 1 and out["error"]["code"] == "resource_limit_exceeded", out
    assert [answer for _, _, answer in messages(cached)] == [503, 503]  # a try and one retry


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_repeated_call_costs_the_message_alone(
    cached: PlainAgent,
    binding: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SKILLRACK_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["call", cached.url, "echo", "--text", "hi", *via(cached, binding)]
    cached.gate.seen.clear()
    assert run(capsys, *argv) == (0, "echo: hi")
    first = cached.gate.requests()
    assert first[0] == f"GET {CARD}" and len(first) == 2, first  # the card, the message
    cached.gate.seen.clear()
    assert run(capsys, *argv) == (0, "echo: hi")
    assert cached.gate.requests() == first[1:]  # the card is fresh on disk: the message alone
    cached.gate.seen.clear()
    assert run(capsys, *argv, "--no-cache") == (0, "echo: hi")
    assert cached.gate.requests() == first


def test_a_stream_cut_after_its_first_event_is_not_sent_again(
    cached: PlainAgent, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent may have acted on a message whose answer began: ``--retry`` does not resend it."""
    cached.gate.seen.clear()
    cached.gate.cut_stream = True
    argv = ["call", cached.url, "echo", "--text", "x", "--stream", "--retry", "3"]
    status, out = run(capsys, *argv, *via(cached, "GRPC"))
    assert status == 1, out
    error = out["error"]
    assert error["code"] == "resource_limit_exceeded" and "retry_after" not in error, error
    assert "after the agent's answer began" in error["message"], error
    assert "--retry N" not in error["message"]
    assert [what for _, what, _ in messages(cached)] == ["gRPC SendStreamingMessage"]


def test_an_answer_over_the_clients_bound_is_not_the_agent_being_busy(
    cached: PlainAgent, capsys: pytest.CaptureFixture[str]
) -> None:
    """grpcio's own RESOURCE_EXHAUSTED (a message over ``--max-response-bytes``): not resent."""
    cached.gate.seen.clear()
    argv = ["call", cached.url, "echo", "--text", "x" * 8000, "--retry", "3"]
    bound = ["--max-response-bytes", "4000"]  # the card is smaller, the echoed text larger
    status, out = run(capsys, *argv, *bound, *via(cached, "GRPC"))
    assert status == 1, out
    error = out["error"]
    assert error["code"] == "resource_limit_exceeded" and "retry_after" not in error, error
    assert "over this client's bound" in error["message"], error
    assert "--max-response-bytes" in error["message"]
    assert [what for _, what, _ in messages(cached)] == ["gRPC SendMessage"]
