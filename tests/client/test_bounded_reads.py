"""Reads are bounded while reading: a flood ends the call with resource_limit_exceeded, fast.

The floods are real servers on 127.0.0.1 producing 300 MB bodies and
endless event streams lazily.  The memory cases run the client in a
subprocess of its own and measure its peak RSS around the call, so that the
growth measured is the client's and nothing else's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.hostile_agents import (
    CARD_PATH,
    MB,
    endless_stream_app,
    forever_working_app,
    huge_card_app,
    huge_response_app,
    minimal_card,
    serving,
    serving_self_described,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from skillrack.client.readbounds import ReadBounds
from skillrack.client.skill_client import SkillClient
from skillrack.errors import ClientCode, ErrorCode, SkillCallError

#: The client of the memory cases: each (kind, url) called once; outcome, time and memory
#: growth (peak RSS after the call minus RSS before it, an upper bound) as JSON lines.
PROBE = """
import asyncio, json, sys, time
from skillrack.client.skill_client import SkillClient
from skillrack.errors import SkillCallError

def status_mb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise LookupError(field)

async def one(kind, url):
    async with SkillClient(timeout=30) as client:
        before, start, code = status_mb("VmRSS"), time.monotonic(), None
        try:
            if kind == "card":
                await client.card(url)
            else:
                mode = "stream" if kind == "stream" else "sync"
                await client.send_request(url, {"skill": "flood"}, mode=mode)
        except SkillCallError as exc:
            code = exc.code
        return {"kind": kind, "code": code, "seconds": time.monotonic() - start,
                "growth_mb": status_mb("VmHWM") - before}

for kind, url in zip(sys.argv[1::2], sys.argv[2::2]):
    print(json.dumps(asyncio.run(one(kind, url))), flush=True)
"""


@pytest.fixture(scope="module")
def floods() -> Iterator[dict[str, dict[str, Any]]]:
    """A 300 MB card, a 300 MB response, an endless stream of 1 MB appends: one client process."""
    with (
        serving(huge_card_app(300 * MB)) as card,
        serving_self_described(huge_response_app(300 * MB)) as response,
        serving_self_described(endless_stream_app(chunk_bytes=MB)) as stream,
    ):
        argv = ["card", card, "response", response, "stream", stream]
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *argv],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    results = [json.loads(line) for line in done.stdout.strip().splitlines()]
    yield {result["kind"]: result for result in results}


def assert_refused_lean(result: dict[str, Any]) -> None:
    assert result["code"] == ErrorCode.RESOURCE_LIMIT_EXCEEDED, result
    assert result["seconds"] < 10, result
    assert result["growth_mb"] < 200, result


async def failure(coro: Any) -> SkillCallError:
    with pytest.raises(SkillCallError) as info:
        await coro
    return info.value


# 300 MB and endless, measured ------------------------------------------------------------------


@pytest.mark.slow
def test_a_300_mb_card_is_refused_while_reading(floods: dict[str, dict[str, Any]]) -> None:
    assert_refused_lean(floods["card"])


def test_a_300_mb_response_is_refused_while_reading(floods: dict[str, dict[str, Any]]) -> None:
    assert_refused_lean(floods["response"])


def test_an_endless_stream_of_appended_megabytes_is_refused(
    floods: dict[str, dict[str, Any]],
) -> None:
    assert_refused_lean(floods["stream"])


# Each bound, and its setting ---------------------------------------------------------------------


async def test_the_card_bound_is_a_setting() -> None:
    with serving(huge_card_app(2 * MB)) as url:
        async with SkillClient(bounds=ReadBounds(max_card_bytes=MB)) as client:
            error = await failure(client.card(url))
    assert error.code == ErrorCode.RESOURCE_LIMIT_EXCEEDED and not error.remote
    assert "Agent Card" in error.message and str(MB) in error.message


async def test_a_declared_length_over_the_bound_is_refused_before_reading() -> None:
    async def card(request: Request) -> Response:
        return Response(b"{}" + b" " * (2 * MB), media_type="application/json")

    with serving(Starlette(routes=[Route(CARD_PATH, card)])) as url:
        async with SkillClient(bounds=ReadBounds(max_card_bytes=MB)) as client:
            error = await failure(client.card(url))
    assert error.code == ErrorCode.RESOURCE_LIMIT_EXCEEDED


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_response_bound_is_a_setting(binding: str) -> None:
    with serving_self_described(huge_response_app(3 * MB, binding)) as url:
        bounds = ReadBounds(max_response_bytes=MB)
        async with SkillClient(bounds=bounds, binding=binding) as client:
            error = await failure(client.send_request(url, {"skill": "flood"}))
    assert error.code == ErrorCode.RESOURCE_LIMIT_EXCEEDED and "answer" in error.message


async def test_the_stream_bytes_bound_is_a_setting() -> None:
    with serving_self_described(endless_stream_app(chunk_bytes=100_000)) as url:
        async with SkillClient(bounds=ReadBounds(max_stream_bytes=MB)) as client:
            error = await failure(client.send_request(url, {"skill": "x"}, mode="stream"))
    assert error.code == ErrorCode.RESOURCE_LIMIT_EXCEEDED and "event stream" in error.message


async def test_the_stream_event_count_is_bounded() -> None:
    with serving_self_described(endless_stream_app(chunk_bytes=10)) as url:
        async with SkillClient(bounds=ReadBounds(max_stream_events=5)) as client:
            error = await failure(client.send_request(url, {"skill": "x"}, mode="stream"))
    assert error.code == ErrorCode.RESOURCE_LIMIT_EXCEEDED
    assert "5 events" in error.message


async def test_the_timeout_covers_a_slow_endless_stream() -> None:
    with serving_self_described(endless_stream_app(chunk_bytes=10, interval=0.05)) as url:
        async with SkillClient(timeout=1.0) as client:
            start = time.monotonic()
            error = await failure(client.send_request(url, {"skill": "x"}, mode="stream"))
    assert error.code == ErrorCode.RESOURCE_LIMIT_EXCEEDED and "timeout" in error.message
    assert time.monotonic() - start < 4


async def test_the_timeout_covers_polling() -> None:
    with serving_self_described(forever_working_app()) as url:
        async with SkillClient(timeout=1.0, poll_interval=0.05) as client:
            start = time.monotonic()
            error = await failure(client.send_request(url, {"skill": "x"}, mode="poll"))
    assert error.code == ErrorCode.RESOURCE_LIMIT_EXCEEDED and "1 s" in error.message
    assert time.monotonic() - start < 4


async def test_a_compressed_body_is_refused() -> None:
    """Asked for no content coding, an agent that compresses anyway could inflate past any bound."""
    holder: dict[str, str] = {}

    async def card(request: Request) -> Response:
        assert request.headers["accept-encoding"] == "identity"
        body = json.dumps(minimal_card(holder["url"])).encode()
        return Response(body, media_type="application/json", headers={"Content-Encoding": "gzip"})

    with serving(Starlette(routes=[Route(CARD_PATH, card)])) as url:
        holder["url"] = url
        async with SkillClient() as client:
            error = await failure(client.card(url))
    assert error.code == ClientCode.PROTOCOL_ERROR and "gzip" in error.message


def test_bounds_are_positive_integers() -> None:
    with pytest.raises(ValueError, match="max_stream_events"):
        ReadBounds(max_stream_events=0)
