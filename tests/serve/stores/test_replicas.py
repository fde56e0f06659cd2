"""Two replicas of one agent, separate ``skillrack serve`` processes on one PostgreSQL database.

A task started on replica A is streamed (SubscribeToTask over SSE), and
cancelled through replica B, and ends CANCELED on both; a task waiting for
input on A is answered through B.  Both replicas (started with different
hash seeds) publish byte-identical Agent Card skill entries and extension
params and identical describe_skill documents and digests.

PostgreSQL is the machine's server on 127.0.0.1:5432 (trust authentication);
each run works in a database of its own, dropped afterwards.  The tests skip,
saying so, only when that server cannot be reached.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers.postgres import fresh_database
from helpers.served_process import probe_request, send, start

from skillrack.protocol.messages import EXTENSION_URI
from skillrack.testing.serve import CARD_PATH, get_task, rpc, stream, wait_for_state

#: Two served processes on PostgreSQL: seconds per test.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A fresh database on the local PostgreSQL, as a --store URL."""
    with fresh_database() as url:
        yield url


@pytest.fixture(scope="module")
def replicas(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """Replicas A and B, started together (so they race to create the tables)."""
    started = [
        start(
            tmp_path_factory.mktemp(name),
            args=("--store", pg_url),
            env={"PYTHONHASHSEED": seed},
        )
        for name, seed in (("replica-a", "1"), ("replica-b", "2"))
    ]
    try:
        ready = [served.wait_ready() for served in started]
        for served in ready:
            assert "task store: postgresql" in served.output()
            assert "cluster mode" in served.output()
        yield ready[0].url, ready[1].url
    finally:
        for served in started:
            served.stop()


def _card(url: str) -> Any:
    return httpx.get(url + CARD_PATH, timeout=10).json()


def _extension(card: Any) -> Any:
    [extension] = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI]
    return extension


def _describe(url: str, skill_id: str) -> Any:
    task = send(url, {"skill": "describe_skill", "arguments": {"skill_id": skill_id}})
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    [artifact] = task["artifacts"]
    return artifact["parts"][0]["data"]["result"]


def test_replicas_assemble_identically(replicas: tuple[str, str]) -> None:
    a, b = replicas
    card_a, card_b = _card(a), _card(b)
    skills = json.dumps(card_a["skills"])
    assert skills == json.dumps(card_b["skills"])
    params = json.dumps(_extension(card_a)["params"])
    assert params == json.dumps(_extension(card_b)["params"])
    advertised = {
        s["skill_id"]: s["interface_digest"] for s in _extension(card_a)["params"]["skills"]
    }
    assert set(advertised) == {"ask", "ask_by", "crash", "echo", "ticker", "watch"}
    for skill_id, digest in advertised.items():
        from_a, from_b = _describe(a, skill_id), _describe(b, skill_id)
        assert json.dumps(from_a, sort_keys=True) == json.dumps(from_b, sort_keys=True)
        assert from_a["interface_digest"] == digest


def test_task_started_on_a_is_streamed_and_cancelled_through_b(replicas: tuple[str, str]) -> None:
    a, b = replicas
    task = send(a, probe_request(a, "ticker", {"ticks": 300, "interval": 0.1}), immediately=True)
    wait_for_state(a, task["id"], {"TASK_STATE_WORKING"})
    assert get_task(b, task["id"])["status"]["state"] == "TASK_STATE_WORKING"

    seen: list[Any] = []
    canceled: list[Any] = []

    def cancel_through_b() -> None:
        canceled.append(rpc(b, "CancelTask", {"id": task["id"]}))

    canceller = threading.Thread(target=cancel_through_b)
    for event in stream(b, "SubscribeToTask", {"id": task["id"]}):
        seen.append(event)
        ticks = [e for e in seen if "artifactUpdate" in e]
        if len(ticks) == 3 and not canceller.is_alive() and not canceled:
            canceller.start()
    canceller.join(timeout=30)

    assert "task" in seen[0] and seen[0]["task"]["id"] == task["id"]  # B's snapshot first
    progress = [
        e["artifactUpdate"]["artifact"]["parts"][0]["data"]["result"]["tick"]
        for e in seen
        if "artifactUpdate" in e
    ]
    assert len(progress) >= 3 and progress == sorted(progress)  # A's work, relayed by B
    assert seen[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert canceled[0]["result"]["status"]["state"] == "TASK_STATE_CANCELED", canceled
    # A notices at its next write and stops; neither replica ever shows anything else.
    for url in (a, b, a):
        assert wait_for_state(url, task["id"], set(), timeout=1)["status"]["state"] == (
            "TASK_STATE_CANCELED"
        )


def test_input_asked_on_a_is_answered_through_b(replicas: tuple[str, str]) -> None:
    a, b = replicas
    task = send(a, probe_request(a, "ask", {}))
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    answered = send(b, {"window": "tonight"}, task_id=task["id"])
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED", answered
    assert get_task(a, task["id"])["status"]["state"] == "TASK_STATE_COMPLETED"
    listed = rpc(a, "ListTasks", {"pageSize": 100})["result"]["tasks"]
    assert task["id"] in {t["id"] for t in listed}


def test_replicas_agree_on_when_a_card_version_was_published(pg_url: str, tmp_path: Any) -> None:
    """The card's Last-Modified: the first replica's recorded time, read by every other."""
    from skillrack.serve.stores.storage import open_storage, parse_store

    spec = parse_store(pg_url, tmp_path)
    etag = f'"{uuid.uuid4().hex}"'

    async def run() -> list[int]:
        a = open_storage(spec, owner_resolver=lambda context: "")
        b = open_storage(spec, owner_resolver=lambda context: "")
        try:
            await asyncio.gather(a.start(), b.start())
            return list(
                await asyncio.gather(a.first_published(etag, 1_000), b.first_published(etag, 2_000))
            )
        finally:
            await a.close()
            await b.close()

    times = asyncio.run(run())
    assert times[0] == times[1] and times[0] in {1_000, 2_000}
