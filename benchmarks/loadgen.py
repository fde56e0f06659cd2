"""The load generator: a process of its own, driven by ``run.py`` over stdin/stdout.

It speaks HTTP/1.1 over keep-alive connections with a minimal client written on
asyncio streams (no httpx): on a 2-vCPU machine the client shares the CPU with
the server, and every microsecond it spends is one the server does not get, on
both sides alike.  Each of ``concurrency`` connections sends its next request as
soon as the previous answer is read; bodies are prebuilt, with a fresh
``messageId`` spliced in per request.  Every answer is checked (HTTP status and
a marker that only a correct answer contains); a window with a wrong answer is
reported as failed, never averaged in.

Protocol: one JSON command per line on stdin, one JSON result per line on stdout.

    {"op": "run", "host": "127.0.0.1", "port": 9000, "scenario": "invoke",
     "concurrency": 8, "duration": 3.0, "warmup": 0.5, "max_requests": null}
    -> {"ok": true, "requests": 1234, "all_requests": 1400, "seconds": 3.0, "rps": 411.3,
        "p50_ms": 1.9, "p99_ms": 4.1, "errors": 0, "first_error": null}
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import sys
import time
from typing import Any

EXTENSION_URI = (
    "https://agentic-network-management.github.io/agent-schema-interfaces/"
    "extensions/schema-interface/v1"
)
DIGEST = "sha256:4dedea3f7ddf19e94d9fd0b30886624f50afb5aadc1b407508a05dd3c40f380d"
MARK = "@@MID@@"

_INVOKE = {
    "skill": "evaluate_resource_condition",
    "skill_version": "1.0",
    "interface_digest": DIGEST,
    "arguments": {
        "resource_id": "network-resource-123",
        "condition": {
            "metric": "utilization",
            "operator": "gte",
            "threshold": 80,
            "unit": "percent",
        },
    },
}
_DESCRIBE = {"skill": "describe_skill", "arguments": {"skill_id": "evaluate_resource_condition"}}


def _send_message(request_object: dict[str, Any]) -> str:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {
                    "messageId": MARK,
                    "role": "ROLE_USER",
                    "extensions": [EXTENSION_URI],
                    "parts": [{"data": request_object}],
                }
            },
        },
        separators=(",", ":"),
    )


#: scenario -> (method, path, body template or None, marker a correct answer holds)
SCENARIOS: dict[str, tuple[str, str, str | None, bytes]] = {
    "invoke": ("POST", "/", _send_message(_INVOKE), b'"TASK_STATE_COMPLETED"'),
    "describe": ("POST", "/", _send_message(_DESCRIBE), b'"interface_digest"'),
    "card": ("GET", "/.well-known/agent-card.json", None, b'"supportedInterfaces"'),
}


class Requests:
    """Prebuilt request bytes; only the message id changes from one request to the next."""

    def __init__(self, scenario: str, host: str, port: int) -> None:
        method, path, template, self.marker = SCENARIOS[scenario]
        self.counter = itertools.count()
        self.prefix = self.suffix = b""
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Accept: application/json\r\n"
            f"A2A-Version: 1.0\r\nA2A-Extensions: {EXTENSION_URI}\r\n"
        )
        self.fixed: bytes | None = None
        if template is None:
            self.fixed = (head + "\r\n").encode()
            return
        self.head = (head + "Content-Type: application/json\r\nContent-Length: ").encode()
        before, after = template.split(MARK)
        self.prefix, self.suffix = before.encode(), after.encode()
        self.id_prefix = f"m-{time.monotonic_ns():x}-".encode()

    def next(self) -> bytes:
        if self.fixed is not None:
            return self.fixed
        body = self.prefix + self.id_prefix + str(next(self.counter)).encode() + self.suffix
        return self.head + str(len(body)).encode() + b"\r\n\r\n" + body


class BadAnswer(Exception):
    pass


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes, marker: bytes
) -> None:
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, _, rest = head.partition(b"\r\n")
    length = None
    chunked = False
    for line in rest.split(b"\r\n"):
        name, _, value = line.partition(b":")
        lowered = name.strip().lower()
        if lowered == b"content-length":
            length = int(value)
        elif lowered == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        body = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            body += await reader.readexactly(size + 2)
            if size == 0:
                break
    elif length is not None:
        body = bytearray(await reader.readexactly(length))
    else:
        raise BadAnswer(f"no length: {head!r}")
    if b" 200 " not in status_line or marker not in body:
        raise BadAnswer(f"{status_line.decode(errors='replace')}: {bytes(body[:300])!r}")


async def run(command: dict[str, Any]) -> dict[str, Any]:
    host, port = command["host"], command["port"]
    requests = Requests(command["scenario"], host, port)
    concurrency = int(command["concurrency"])
    duration = float(command["duration"])
    warmup = float(command.get("warmup", 0.0))
    max_requests = command.get("max_requests")
    latencies: list[float] = []
    errors: list[str] = []
    issued = 0
    completed = 0
    answered = 0
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + duration if max_requests is None else float("inf")

    async def client() -> None:
        nonlocal issued, completed, answered
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while not errors:
                began = time.perf_counter()
                if began >= stop_at:
                    return
                if max_requests is not None:
                    if issued >= max_requests:
                        return
                    issued += 1
                try:
                    await _exchange(reader, writer, requests.next(), requests.marker)
                except (BadAnswer, asyncio.IncompleteReadError, ConnectionError) as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")
                    return
                ended = time.perf_counter()
                answered += 1
                if began >= measure_from:
                    latencies.append(ended - began)
                    completed += ended <= stop_at
        finally:
            writer.close()

    await asyncio.gather(*(client() for _ in range(concurrency)))
    seconds = duration if max_requests is None else time.perf_counter() - start
    if max_requests is not None:
        completed = len(latencies)
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000

    return {
        "ok": not errors and bool(latencies),
        "requests": completed,
        "all_requests": answered,
        "seconds": seconds,
        "rps": completed / seconds if seconds > 0 else 0.0,
        "p50_ms": statistics.median(ordered) * 1000 if ordered else float("nan"),
        "p99_ms": pct(0.99),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
    }


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        if command.get("op") == "quit":
            return
        try:
            result = asyncio.run(run(command))
        except Exception as exc:  # reported to run.py, which stops the benchmark
            result = {"ok": False, "errors": 1, "first_error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
