"""The baseline: a bare a2a-sdk agent answering like skillrack, with no checks at all.

``DefaultRequestHandler`` + ``InMemoryTaskStore`` + an ``AgentExecutor`` that
answers a request for ``evaluate_resource_condition`` with the same two
Artifacts skillrack returns (the ``resource-observation`` record and the
primary result) and ``describe_skill`` with the same prebuilt interface
document, through the same sequence of events (Task, WORKING for an
invocation, the Artifacts, COMPLETED), so both sides put the same work on
a2a-sdk.  ``ticker`` (``streams.py``; ``stream_plugin.py`` on skillrack's side)
publishes the same progressive results on the same schedule.  Nothing is
validated, authenticated, authorized or rate limited; no middleware.  The
card is served by a2a-sdk's own ``create_agent_card_routes`` from the very
card skillrack serves (read from ``--card``).

    python benchmarks/bare_agent.py --port 9001 --card card.json --describe describe.json

The OpenTelemetry switch (``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED``) is read
by a2a-sdk at import: the benchmark runs this agent at a2a-sdk's default
(unset) and, for the *tracing off on both sides* row, with it set to false.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCard, Part, Task, TaskState, TaskStatus
from google.protobuf import json_format, struct_pb2
from starlette.applications import Starlette
from ticks import next_tick

EXTENSION_URI = (
    "https://agentic-network-management.github.io/agent-schema-interfaces/"
    "extensions/schema-interface/v1"
)


def data_part(value: Any) -> Part:
    part = Part(media_type="application/json")
    part.data.CopyFrom(json_format.ParseDict(value, struct_pb2.Value()))
    return part


class BareExecutor(AgentExecutor):
    """Answers without looking at anything but the skill name."""

    def __init__(self, describe: dict[str, Any]) -> None:
        self.describe = {k: data_part(v) for k, v in describe.items()}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        request = json_format.MessageToDict(context.message.parts[0].data)
        await event_queue.enqueue_event(
            Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message],
            )
        )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if request.get("skill") == "ticker":
            await self.ticker(request["arguments"], updater)
            return
        if request.get("skill") == "describe_skill":
            await updater.add_artifact(
                [self.describe[request["arguments"]["skill_id"]]],
                artifact_id="result",
                name="describe_skill",
                extensions=[EXTENSION_URI],
            )
            await updater.complete()
            return
        await updater.start_work()
        arguments = request["arguments"]
        condition = arguments["condition"]
        record_id = f"observation-{context.task_id}"
        value = 26.0
        await updater.add_artifact(
            [
                data_part(
                    {
                        "resource_id": arguments["resource_id"],
                        "metric": condition["metric"],
                        "value": value,
                        "unit": condition["unit"],
                        "observed_at": "2026-01-01T00:00:00Z",
                        "record_id": record_id,
                    }
                )
            ],
            artifact_id=record_id,
            name="resource-observation",
            last_chunk=True,
            extensions=[EXTENSION_URI],
        )
        met = value >= condition["threshold"]
        await updater.add_artifact(
            [
                data_part(
                    {
                        "skill": "evaluate_resource_condition",
                        "result": {
                            "result": "condition_met" if met else "condition_not_met",
                            "observed_value": value,
                            "unit": condition["unit"],
                            "supporting_record_refs": [record_id],
                        },
                    }
                )
            ],
            artifact_id="result",
            name="evaluate_resource_condition",
            last_chunk=True,
            extensions=[EXTENSION_URI],
        )
        await updater.complete()

    @staticmethod
    async def ticker(arguments: dict[str, Any], updater: TaskUpdater) -> None:
        """skillrack's ``publish_progress`` events (stream_plugin.py), on the same schedule."""
        await updater.start_work()
        events, interval = int(arguments["events"]), float(arguments["interval"])
        phase = float(arguments["phase"]) if "phase" in arguments else None
        loop = asyncio.get_running_loop()
        start = loop.time()
        for seq in range(events):
            partial = {"seq": seq, "published": time.time()}
            await updater.add_artifact(
                [data_part({"skill": "ticker", "result": partial})],
                artifact_id="result",
                name="ticker",
                append=False,
                last_chunk=False,
                extensions=[EXTENSION_URI],
            )
            await asyncio.sleep(max(0.0, next_tick(start, seq, interval, phase) - loop.time()))
        await updater.add_artifact(
            [data_part({"skill": "ticker", "result": {"events": events}})],
            artifact_id="result",
            name="ticker",
            append=False,
            last_chunk=True,
            extensions=[EXTENSION_URI],
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(updater.new_agent_message([data_part({"canceled": True})]))


def build_server(card: AgentCard, describe: dict[str, Any]) -> Starlette:
    handler = DefaultRequestHandler(
        agent_executor=BareExecutor(describe),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    routes = create_agent_card_routes(card)
    routes += create_jsonrpc_routes(handler, rpc_url="/")
    routes += create_rest_routes(handler)  # last: its /{tenant} mount shadows later routes
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--card", type=Path, required=True, help="Agent Card JSON to serve")
    parser.add_argument(
        "--describe", type=Path, required=True, help="{skill_id: describe_skill result} JSON"
    )
    args = parser.parse_args()
    card = json_format.Parse(args.card.read_text(), AgentCard(), ignore_unknown_fields=True)
    describe = json.loads(args.describe.read_text())
    print(f"bare a2a-sdk agent {uuid.uuid4().hex[:8]} on 127.0.0.1:{args.port}", flush=True)
    uvicorn.run(
        build_server(card, describe),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
