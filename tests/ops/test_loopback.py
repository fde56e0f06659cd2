"""One threaded uvicorn starter and one ``free_port``, for core code and every test suite."""

from __future__ import annotations

import socket

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

import skillrack.testing.serve
from skillrack.ops import inprocess, loopback
from skillrack.ops.loopback import free_port, serving_in_thread


async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse(f"hello from {request.url.port}")


APP = Starlette(routes=[Route("/", hello)])


def test_free_port_is_a_port_nothing_listens_on() -> None:
    port = free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # would raise if taken


def test_an_app_is_served_on_the_port_given_until_the_block_ends() -> None:
    port = free_port()
    with serving_in_thread(APP, port, lifespan="off") as url:
        assert url == f"http://127.0.0.1:{port}"
        answer = httpx.get(url + "/", timeout=5)
        assert answer.status_code == 200 and answer.text == f"hello from {port}"
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/", timeout=2)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_server_that_cannot_listen_is_reported() -> None:
    """uvicorn exits its thread (SystemExit there); the caller gets one RuntimeError."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match="did not start"), serving_in_thread(APP, port):
            pass


def test_every_user_takes_the_one_implementation() -> None:
    assert skillrack.testing.serve.free_port is loopback.free_port
    assert skillrack.testing.serve.serving_in_thread is loopback.serving_in_thread
    assert inprocess.free_port is loopback.free_port
