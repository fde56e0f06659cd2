"""call, describe, check and doctor --url keep the operator's --header where the operator aimed.

A real agent (B) counts the requests that carry the test's credentials; a
decoy (A) on another port serves B's card, so its interfaces name B.  The
operator runs the commands against A: without ``--allow-origin`` no
credentialed request may reach B; with it, the call goes through.  The
``call`` case runs the installed ``skillrack`` command as a subprocess.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from helpers.hostile_agents import (
    CARD_PATH,
    CHALLENGE,
    CREDENTIALS,
    CredentialCounter,
    card_of,
    counting_agent,
    decoy,
    refusing_app,
    serving,
    serving_self_described,
    steering_decoy,
    with_interfaces,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from skillrack.cli import main as cli
from skillrack.testing.serve import skillrack_command

SKILL = "evaluate_resource_condition"
ARGS = json.dumps(
    {
        "resource_id": "network-resource-123",
        "condition": {
            "metric": "utilization",
            "operator": "gte",
            "threshold": 80,
            "unit": "percent",
        },
    }
)
HEADERS = [arg for name, value in CREDENTIALS.items() for arg in ("--header", f"{name}: {value}")]


@pytest.fixture(scope="module")
def agent() -> Iterator[tuple[str, CredentialCounter]]:
    with counting_agent() as counted:
        yield counted


@pytest.fixture(scope="module")
def steering(agent: tuple[str, CredentialCounter]) -> Iterator[str]:
    with steering_decoy(agent[0]) as url:
        yield url


@pytest.fixture
def counter(agent: tuple[str, CredentialCounter]) -> Iterator[CredentialCounter]:
    agent[1].reset()
    yield agent[1]
    agent[1].reset()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    status = cli.main(list(argv))
    out = capsys.readouterr().out
    try:
        return status, json.loads(out)
    except ValueError:
        return status, out


def test_skillrack_call_sends_no_credentials_to_another_origin(
    agent: tuple[str, CredentialCounter], steering: str, counter: CredentialCounter
) -> None:
    command = [skillrack_command(), "call", steering, SKILL, "--args", ARGS, *HEADERS]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "origin_refused"
    assert steering in error["message"] and f"--allow-origin {agent[0]}" in error["message"]
    assert counter.with_credentials == [] and counter.requests == 0

    allowed = subprocess.run(
        [*command, "--allow-origin", agent[0]],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert json.loads(allowed.stdout)["state"] == "TASK_STATE_COMPLETED"
    assert counter.with_credentials


def test_describe_check_and_doctor_send_no_credentials_to_another_origin(
    agent: tuple[str, CredentialCounter],
    steering: str,
    counter: CredentialCounter,
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out = run(capsys, "describe", steering, SKILL, *HEADERS)
    assert status == 1 and out["error"]["code"] == "origin_refused"
    status, out = run(capsys, "check", steering, "--json", *HEADERS)
    assert status == 1 and "origin_refused" in json.dumps(out)
    status, out = run(capsys, "doctor", "--url", steering, "--json", *HEADERS)
    assert status == 1 and "origin_refused" in json.dumps(out)
    assert counter.with_credentials == [] and counter.requests == 0

    status, out = run(capsys, "describe", steering, SKILL, "--json", "--allow-origin", agent[0])
    assert status == 0 and out["interface"]["skill_id"] == SKILL
    status, out = run(capsys, "check", steering, "--allow-origin", agent[0], *HEADERS)
    assert "origin_refused" not in out
    status, out = run(capsys, "doctor", "--url", steering, "--allow-origin", agent[0], *HEADERS)
    assert "origin_refused" not in out
    assert counter.with_credentials


def test_an_allowed_origin_must_be_an_origin(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["call", "http://127.0.0.1:1", SKILL, "--args", "{}", "--allow-origin", "x/y"])
    assert "--allow-origin" in capsys.readouterr().err


@pytest.mark.parametrize("seconds", ["inf", "Infinity", "-inf", "nan", "-1", "0", "soon"])
def test_a_timeout_must_be_finite_and_positive(
    capsys: pytest.CaptureFixture[str], seconds: str
) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["call", "http://127.0.0.1:1", SKILL, "--args", "{}", f"--timeout={seconds}"])
    assert info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (
        f"skillrack call: error: argument --timeout: {seconds!r} "
        "is not a positive number of seconds"
    ), last


@pytest.fixture(scope="module")
def refusing_card(agent: tuple[str, CredentialCounter]) -> Iterator[str]:
    """An agent whose card is open and valid but which answers every message 401."""
    card = card_of(agent[0])
    holder: dict[str, str] = {}

    async def refuse(request: Request) -> Response:
        return JSONResponse(
            {"error": "no"}, status_code=401, headers={"WWW-Authenticate": CHALLENGE}
        )

    with serving(decoy(lambda: with_interfaces(card, holder["url"] + "/"), refuse)) as url:
        holder["url"] = url
        yield url


@pytest.mark.parametrize("where", ["card", "message"])
def test_a_401_is_authorization_failed_with_a_hint_in_every_command(
    where: str, refusing_card: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def outputs(url: str) -> list[tuple[int, Any]]:
        return [
            run(capsys, "call", url, SKILL, "--args", ARGS),
            run(capsys, "describe", url, SKILL),
            run(capsys, "check", url),
            run(capsys, "doctor", "--url", url),
        ]

    if where == "card":
        with serving_self_described(refusing_app(401)) as url:
            results = outputs(url)
    else:
        results = outputs(refusing_card)
    for status, out in results:
        text = out if isinstance(out, str) else json.dumps(out)
        assert status == 1
        assert "authorization_failed" in text and "--header" in text, text
        assert 'realm=\\"skillrack-test\\"' in text or 'realm="skillrack-test"' in text
        assert "transport_error" not in text and "k-123" not in text
    for _status, out in results[:2]:
        assert out["error"]["code"] == "authorization_failed"


def test_the_timeout_option_bounds_the_whole_call(capsys: pytest.CaptureFixture[str]) -> None:
    """A card that trickles one byte every 50 ms forever: only the call's deadline ends it."""

    async def trickle() -> AsyncIterator[bytes]:
        yield b'{"name": "slow"'
        while True:
            await asyncio.sleep(0.05)
            yield b" "

    async def card(request: Request) -> Response:
        return StreamingResponse(trickle(), media_type="application/json")

    with serving(Starlette(routes=[Route(CARD_PATH, card)])) as url:
        start = time.monotonic()
        status, out = run(capsys, "describe", url, SKILL, "--timeout", "1")
    assert status == 1 and out["error"]["code"] == "resource_limit_exceeded"
    assert "timeout of 1 s" in out["error"]["message"]
    assert time.monotonic() - start < 5
