"""The caller side of the fan-out benchmark: one client, many agents, a process of its own.

    python benchmarks/fanout_client.py skillrack   # one SkillClient
    python benchmarks/fanout_client.py a2a         # a2a-sdk's own client, one per agent

Reads JSON commands on stdin and answers each with one JSON line, so that
``fanout.py`` can read this process's CPU time and RSS from ``/proc`` around
the work and nothing else:

* ``{"op": "setup", "urls": [...], "request": {...}}``: get ready to call
  ``evaluate_resource_condition`` at every URL.  ``skillrack`` makes one
  :class:`~skillrack.client.skill_client.SkillClient` (which fetches cards and
  documents itself, during the calls); ``a2a`` resolves each agent's card
  once with a2a-sdk's ``A2ACardResolver`` and makes one client per agent with
  ``ClientFactory`` (each with its own ``httpx.AsyncClient``, a2a-sdk's
  default), then sends ``request`` (the request object with the skill version
  and digest the card advertises) as it is, validating nothing;
* ``{"op": "rounds", "rounds": R}``: R rounds, each calling every agent once,
  all concurrently; answers calls, failures, the first failure and seconds.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from typing import Any

import httpx

ARGUMENTS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
SKILL = "evaluate_resource_condition"


class SkillrackSide:
    def __init__(self, urls: list[str], request: dict[str, Any]) -> None:
        from skillrack.client.skill_client import SkillClient

        self.urls = urls
        self.client = SkillClient(timeout=300)

    async def call(self, url: str) -> None:
        result = await self.client.call(url, SKILL, ARGUMENTS)
        if result.result.get("result") != "condition_not_met":
            raise RuntimeError(f"unexpected result {result.result}")

    async def aclose(self) -> None:
        await self.client.aclose()


class A2aSide:
    """a2a-sdk 1.x: a card resolved once per agent, one client per agent, the request as is."""

    def __init__(self, urls: list[str], request: dict[str, Any]) -> None:
        self.urls = urls
        self.request = request
        self.clients: dict[str, Any] = {}

    async def setup(self) -> None:
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

        async with httpx.AsyncClient(timeout=60) as http:
            for url in self.urls:
                card = await A2ACardResolver(http, url).get_agent_card()
                factory = ClientFactory(ClientConfig(streaming=False))
                self.clients[url] = factory.create(card)

    async def call(self, url: str) -> None:
        from a2a.client import ClientCallContext
        from a2a.client.service_parameters import ServiceParametersFactory, with_a2a_extensions
        from a2a.types import Message, Part, Role, SendMessageRequest, TaskState
        from google.protobuf import json_format, struct_pb2

        from skillrack.protocol.messages import EXTENSION_URI

        part = Part(media_type="application/json")
        part.data.CopyFrom(json_format.ParseDict(self.request, struct_pb2.Value()))
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[part],
            extensions=[EXTENSION_URI],
        )
        context = ClientCallContext(
            service_parameters=ServiceParametersFactory.create(
                [with_a2a_extensions([EXTENSION_URI])]
            ),
            timeout=300,
        )
        task = None
        async for event in self.clients[url].send_message(
            SendMessageRequest(message=message), context=context
        ):
            if event.HasField("task"):
                task = event.task
        if task is None or task.status.state != TaskState.TASK_STATE_COMPLETED:
            raise RuntimeError(f"unexpected answer {task}")

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.close()


async def serve(kind: str) -> None:
    side: SkillrackSide | A2aSide | None = None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        command = json.loads(line)
        answer: dict[str, Any] = {"ok": True}
        if command["op"] == "setup":
            side = (SkillrackSide if kind == "skillrack" else A2aSide)(
                command["urls"], command["request"]
            )
            if isinstance(side, A2aSide):
                await side.setup()
        elif command["op"] == "rounds":
            assert side is not None
            calls = failures = 0
            first: str | None = None
            began = time.perf_counter()
            for _ in range(command["rounds"]):
                outcomes = await asyncio.gather(
                    *(side.call(url) for url in side.urls), return_exceptions=True
                )
                for outcome in outcomes:
                    calls += 1
                    if isinstance(outcome, BaseException):
                        failures += 1
                        first = first or f"{type(outcome).__name__}: {outcome}"
            answer.update(
                calls=calls,
                failures=failures,
                first_failure=first,
                seconds=time.perf_counter() - began,
            )
        elif command["op"] == "quit":
            break
        print(json.dumps(answer), flush=True)
    if side is not None:
        await side.aclose()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
