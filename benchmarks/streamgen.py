"""The open-streams load generator: thousands of SSE streams in one asyncio process.

Driven by ``streams.py`` over stdin/stdout, one JSON command per line.  Each
stream is an ``asyncio.Protocol`` on a connection of its own (no httpx, no
StreamReader): its bytes are parsed as they arrive (HTTP/1.1 head, chunked
framing, SSE events), so a stream costs a transport, one small object and no
task, and the generator holds 10,000 of them in a fraction of one CPU.  A
task is started by one ``SendStreamingMessage`` stream; once its first event
names the task, ``subscribers - 1`` ``SubscribeToTask`` streams join it.

Only the first event of a stream (the Task) is parsed as JSON; in every later
one the generator finds the progressive result's ``seq`` and ``published``
(the server's ``time.time()`` when the skill published it) and records the
delay to its arrival.  A stream that ends, answers an error or skips a
sequence number is counted; the driver reads the counts with the delays.

    {"op": "open", "host": "127.0.0.1", "port": 9000, "tasks": 100, "subscribers": 5,
     "request": {...the skill request object...}, "opening": 50,
     "phases": {"first": 0, "step": 0.001}}   (optional: task i ticks at phase (first + i) * step)
    -> {"ok": true, "streams": 500, "failed": 0, "first_error": null, "seconds": 2.1}
    {"op": "recent", "since": 1733300000.0}
    -> {"count": 812, "p50_ms": 12.5}   (the deliveries that arrived since then)
    {"op": "window", "begin": 1733300000.0, "end": 1733300020.0}
    -> {"delays_ms": [...], "delivered": 123, "arrived": 130, "ended": 0, "errors": 0,
        "gaps": 0, "silent": 0, "stalled": 0}

``delivered`` counts the deliveries of events published in the window,
``arrived`` every delivery that arrived in it, whenever its event was
published: on a server that keeps up they are the same; on one that falls
behind, ``arrived`` is what it delivers a second.  A *silent* stream received
no event published in the window; a *stalled* one received nothing at all
since the window began (it is silent too): a stream the server still feeds,
late, is silent without being stalled.
    {"op": "quit"}
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import resource
import sys
import time
import uuid
from array import array
from typing import Any

EXTENSION_URI = (
    "https://agentic-network-management.github.io/agent-schema-interfaces/"
    "extensions/schema-interface/v1"
)
#: The end of an SSE event (sse-starlette writes CRLF; LF alone is valid SSE).
EVENT_END = re.compile(rb"\r?\n\r?\n")
PUBLISHED = b'"published": '
SEQ = b'"seq": '


def raise_open_files() -> int:
    """The soft open-file limit raised to the hard one; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def number_after(data: bytes, key: bytes) -> float | None:
    at = data.find(key)
    if at < 0:
        return None
    at += len(key)
    end = at
    while end < len(data) and data[end] not in b",}":
        end += 1
    return float(data[at:end])


class Recorder:
    """What every stream of this process saw: (published, delay) pairs and the counts."""

    def __init__(self) -> None:
        self.published = array("d")
        self.delays = array("d")
        self.arrivals = array("d")
        self.ended = 0
        self.errors = 0
        self.gaps = 0
        self.first_error: str | None = None
        self.streams: list[Stream] = []

    def error(self, text: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = text


class Stream(asyncio.Protocol):
    """One JSON-RPC SSE stream, parsed as its bytes arrive."""

    def __init__(self, request: bytes, recorder: Recorder) -> None:
        self.request = request
        self.recorder = recorder
        self.transport: asyncio.Transport | None = None
        self.head = b""
        self.in_body = False
        self.raw = bytearray()  # chunked framing not yet decoded
        self.sse = bytearray()  # decoded body not yet split into events
        self.first: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self.last_seq: int | None = None
        self.last_published = 0.0
        self.last_arrival = 0.0
        self.done = False
        self.closing = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        if not self.in_body:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = self.head[:end], self.head[end + 4 :]
            if not head.startswith(b"HTTP/1.1 200") or b"chunked" not in head.lower():
                self.fail(f"answer: {head[:200]!r}")
                return
            self.in_body = True
        self.raw += data
        while True:  # chunked framing
            line_end = self.raw.find(b"\r\n")
            if line_end < 0:
                return
            size = int(self.raw[:line_end].split(b";")[0], 16)
            if size == 0:
                self.finish()
                return
            if len(self.raw) < line_end + 2 + size + 2:
                return
            self.sse += self.raw[line_end + 2 : line_end + 2 + size]
            del self.raw[: line_end + 2 + size + 2]
            self.events()

    def events(self) -> None:
        while True:
            found = EVENT_END.search(self.sse)
            if found is None:
                return
            event = bytes(self.sse[: found.start()])
            del self.sse[: found.end()]
            if event.startswith(b":"):
                continue  # a comment (keep-alive ping)
            if b"event: error" in event:
                self.fail(f"error event: {event[:300]!r}")
                return
            data = event[event.find(b"data:") + 5 :]
            if not self.first.done():
                self.first.set_result(data)
                continue
            published = number_after(data, PUBLISHED)
            if published is None:
                continue  # WORKING, the final result, COMPLETED
            seq = int(number_after(data, SEQ) or 0)
            if self.last_seq is not None and seq != self.last_seq + 1:
                self.recorder.gaps += max(0, seq - self.last_seq - 1)
            self.last_seq = seq
            self.last_published = published
            now = time.time()
            self.last_arrival = now
            self.recorder.published.append(published)
            self.recorder.delays.append(now - published)
            self.recorder.arrivals.append(now)

    def fail(self, text: str) -> None:
        if not self.done:
            self.done = True
            self.recorder.error(text)
            if not self.first.done():
                self.first.set_exception(ConnectionError(text))
        if self.transport is not None:
            self.transport.close()

    def finish(self) -> None:
        if not self.done:
            self.done = True
            self.recorder.ended += 1

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.first.done():
            self.first.set_exception(ConnectionError(f"closed before the first event: {exc}"))
        if not self.closing and not self.done:
            self.done = True
            self.recorder.ended += 1

    def close(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.close()


def rpc(host: str, port: int, method: str, params: dict[str, Any]) -> bytes:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": uuid.uuid4().hex[:12], "method": method, "params": params},
        separators=(",", ":"),
    ).encode()
    head = (
        f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
        f"A2A-Version: 1.0\r\nA2A-Extensions: {EXTENSION_URI}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class Generator:
    def __init__(self) -> None:
        self.recorder = Recorder()

    async def stream(self, host: str, port: int, request: bytes) -> Stream:
        loop = asyncio.get_running_loop()
        protocol = Stream(request, self.recorder)
        await loop.create_connection(lambda: protocol, host, port)
        self.recorder.streams.append(protocol)
        await asyncio.wait_for(asyncio.shield(protocol.first), 60)
        return protocol

    async def task(self, command: dict[str, Any], gate: asyncio.Semaphore, index: int) -> None:
        host, port = command["host"], command["port"]
        request = command["request"]
        phases = command.get("phases")
        if phases is not None:  # this task's place on the grid (ticks.py)
            phase = (phases["first"] + index) * phases["step"]
            request = {**request, "arguments": {**request["arguments"], "phase": phase}}
        message = {
            "messageId": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "extensions": [EXTENSION_URI],
            "parts": [{"data": request}],
        }
        async with gate:
            starter = await self.stream(
                host, port, rpc(host, port, "SendStreamingMessage", {"message": message})
            )
            task_id = json.loads(starter.first.result())["result"]["task"]["id"]
            subscribe = rpc(host, port, "SubscribeToTask", {"id": task_id})
            await asyncio.gather(
                *(self.stream(host, port, subscribe) for _ in range(command["subscribers"] - 1))
            )

    async def open(self, command: dict[str, Any]) -> dict[str, Any]:
        began = time.monotonic()
        gate = asyncio.Semaphore(int(command.get("opening", 50)))
        results = await asyncio.gather(
            *(self.task(command, gate, i) for i in range(command["tasks"])), return_exceptions=True
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        return {
            "ok": not failed and not self.recorder.errors,
            "streams": sum(not s.done for s in self.recorder.streams),
            "failed": len(failed),
            "first_error": repr(failed[0]) if failed else self.recorder.first_error,
            "seconds": time.monotonic() - began,
        }

    def window(self, begin: float, end: float) -> dict[str, Any]:
        r = self.recorder
        delays = [
            round(d * 1000, 2)
            for p, d in zip(r.published, r.delays, strict=True)
            if begin <= p <= end
        ]
        silent = sum(
            1 for s in r.streams if not s.done and s.last_published < begin
        )  # no event published in the window reached it
        stalled = sum(1 for s in r.streams if not s.done and s.last_arrival < begin)
        return {
            "delays_ms": delays,
            "delivered": len(delays),
            "arrived": sum(1 for a in r.arrivals if begin <= a <= end),
            "stalled": stalled,
            "ended": r.ended,
            "errors": r.errors,
            "first_error": r.first_error,
            "gaps": r.gaps,
            "silent": silent,
            "open": sum(not s.done for s in r.streams),
        }

    def recent(self, since: float) -> dict[str, Any]:
        """The median delay of the deliveries that arrived since ``since`` (settling: has the
        server caught up with the opening?).  By arrival, not by publication: a server
        seconds behind still delivers, and the delay says how far behind it is."""
        r = self.recorder
        delays = sorted(
            d for a, d in zip(r.arrivals[-20_000:], r.delays[-20_000:], strict=True) if a >= since
        )
        median = delays[len(delays) // 2] * 1000 if delays else None
        return {"count": len(delays), "p50_ms": median}

    def close(self) -> None:
        for stream in self.recorder.streams:
            stream.close()


async def main() -> None:
    limit = raise_open_files()
    loop = asyncio.get_running_loop()
    generator = Generator()
    print(json.dumps({"ready": True, "open_files": limit}), flush=True)
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        command = json.loads(line)
        op = command.get("op")
        if op == "quit":
            break
        if op == "open":
            try:
                result = await generator.open(command)
            except Exception as exc:  # reported to streams.py, which stops the run
                result = {"ok": False, "first_error": f"{type(exc).__name__}: {exc}"}
        elif op == "recent":
            result = generator.recent(command["since"])
        elif op == "window":
            result = generator.window(command["begin"], command["end"])
        else:
            result = {"ok": False, "first_error": f"unknown op {op!r}"}
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
    generator.close()
    with contextlib.suppress(Exception):
        await asyncio.sleep(0.1)


if __name__ == "__main__":
    asyncio.run(main())
