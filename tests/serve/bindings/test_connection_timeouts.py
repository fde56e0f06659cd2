"""Connection deadlines: slow headers and slow bodies do not hold a connection for ever.

Against a real ``skillrack serve`` with ``header_timeout = 1`` and
``body_timeout = 1``: a client that trickles its headers, never sends any, or
trickles a body (announced or left over after the answer) is answered 408
and/or disconnected within about a second, while ordinary requests, kept-alive
connections and a stream longer than the body deadline are served.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from helpers.served_process import probe_request, start, write_config

from skillrack.testing.serve import CARD_PATH, HEADERS, ServedAgent, message, stream

TIMEOUT = 1.0
#: How long past the deadline a test waits before it calls the connection held.
SLACK = 2.0
#: Start-up allowance: a loaded machine (CI, parallel sessions) can take longer than 30 s.
STARTUP_S = 120.0


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    workdir = tmp_path_factory.mktemp("timeouts")
    config = write_config(workdir, f"header_timeout = {TIMEOUT}\nbody_timeout = {TIMEOUT}\n")
    served = start(workdir, config=config, args=("--store", "memory")).wait_ready(STARTUP_S)
    try:
        yield served
    finally:
        served.stop()


def connect(agent: ServedAgent) -> socket.socket:
    address = urlsplit(agent.url)
    sock = socket.create_connection((address.hostname, address.port), timeout=SLACK)
    sock.settimeout(0.2)
    return sock


def trickle(sock: socket.socket, chunk: bytes, seconds: float) -> tuple[bytes, float]:
    """Send ``chunk`` every 0.2 s for up to ``seconds``; what came back and when it closed."""
    received = b""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        try:
            sock.sendall(chunk)
        except OSError:  # the server closed: done
            break
        try:
            data = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            break
        if not data:
            break
        received += data
    return received, time.monotonic() - start


def drain(sock: socket.socket, seconds: float) -> tuple[bytes, float]:
    """Read until the server closes (or ``seconds``); what came back and when it closed."""
    received = b""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            break
        if not data:
            break
        received += data
    return received, time.monotonic() - start


def test_trickled_headers_get_408_and_a_closed_connection(agent: ServedAgent) -> None:
    with connect(agent) as sock:
        sock.sendall(f"GET {CARD_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode())
        received, elapsed = trickle(sock, b"X-Slow: a\r\n", TIMEOUT + SLACK)
    assert received.startswith(b"HTTP/1.1 408 "), received
    assert elapsed < TIMEOUT + SLACK


def test_many_slow_connections_are_all_closed(agent: ServedAgent) -> None:
    sockets = [connect(agent) for _ in range(40)]
    try:
        for sock in sockets:
            sock.sendall(f"GET {CARD_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".encode())
        time.sleep(TIMEOUT + 0.5)
        deadline = time.monotonic() + SLACK
        for sock in sockets:
            received, _ = drain(sock, max(0.1, deadline - time.monotonic()))
            assert received.startswith(b"HTTP/1.1 408 "), received
    finally:
        for sock in sockets:
            sock.close()
    # The agent still serves.
    assert httpx.get(agent.url + CARD_PATH, timeout=10).status_code == 200


def test_a_connection_that_sends_nothing_is_closed(agent: ServedAgent) -> None:
    with connect(agent) as sock:
        received, elapsed = drain(sock, TIMEOUT + SLACK)
    assert received == b""
    assert elapsed < TIMEOUT + SLACK


def test_a_trickled_body_gets_408_in_the_binding_form(agent: ServedAgent) -> None:
    head = (
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "A2A-Version: 1.0\r\nContent-Length: 500\r\n\r\n"
    )
    with connect(agent) as sock:
        sock.sendall(head.encode() + b'{"jsonrpc": "2.0", ')
        received, elapsed = trickle(sock, b" ", TIMEOUT + SLACK)
    assert received.startswith(b"HTTP/1.1 408 "), received
    assert b"connection: close" in received.lower()
    assert b'"resource_limit_exceeded"' in received
    assert elapsed < TIMEOUT + SLACK


def test_a_body_left_over_after_the_answer_cannot_hold_the_connection(agent: ServedAgent) -> None:
    head = f"GET {CARD_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n"
    with connect(agent) as sock:
        sock.sendall(head.encode() + b"x")
        received, elapsed = trickle(sock, b"x", TIMEOUT + SLACK + 1)
    assert received.startswith(b"HTTP/1.1 200 "), received[:100]
    assert elapsed < TIMEOUT + SLACK + 1


def test_ordinary_and_kept_alive_requests_are_served(agent: ServedAgent) -> None:
    data = probe_request(agent.url, "echo", {"text": "hi"})
    with httpx.Client(timeout=10) as http:
        for _ in range(3):  # one connection, kept alive between requests
            assert http.get(agent.url + CARD_PATH).status_code == 200
        body = {
            "jsonrpc": "2.0",
            "id": "1",
            "method": "SendMessage",
            "params": {"message": message(data)},
        }
        answer = http.post(agent.url + "/", json=body, headers=HEADERS).json()
        assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_stream_may_last_longer_than_the_body_deadline(agent: ServedAgent) -> None:
    data = probe_request(agent.url, "ticker", {"ticks": 8, "interval": 0.25})
    started = time.monotonic()
    events = list(stream(agent.url, "SendStreamingMessage", {"message": message(data)}))
    assert time.monotonic() - started > TIMEOUT
    final = events[-1]
    status = final.get("statusUpdate", final.get("task", {})).get("status", {})
    assert status.get("state") == "TASK_STATE_COMPLETED", final


def _one_exchange(sock: socket.socket, host: str) -> float:
    """A whole card request on ``sock``, its whole answer read; when the answer ended."""
    sock.sendall(f"GET {CARD_PATH} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:80]
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return time.monotonic()


def test_the_header_deadline_moves_with_each_request_of_a_kept_alive_connection(
    agent: ServedAgent,
) -> None:
    """Requests every 0.4 s for 2.5 deadlines keep the connection; then, headers that stop
    halfway get 408 one deadline after the last answer, not after the first."""
    host = urlsplit(agent.url).netloc
    with connect(agent) as sock:
        sock.settimeout(SLACK)
        start = time.monotonic()
        last = start
        while time.monotonic() - start < 2.5 * TIMEOUT:
            last = _one_exchange(sock, host)
            time.sleep(0.4 * TIMEOUT)
        sock.sendall(b"GET / HTTP/1.1\r\nHo")
        sent = time.monotonic()
        sock.settimeout(0.2)
        received, _ = drain(sock, TIMEOUT + SLACK)
        closed = time.monotonic()
    assert received.startswith(b"HTTP/1.1 408"), received[:80]
    assert closed - last >= 0.9 * TIMEOUT  # counted from the last answer
    assert closed - sent <= TIMEOUT + SLACK
