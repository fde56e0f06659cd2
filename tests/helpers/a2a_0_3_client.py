"""An A2A 0.3 caller: a2a-sdk 0.3.x's own client, run in its own environment (not skillrack's).

``python a2a_0_3_client.py URL TRANSPORT STREAMING SKILL ARGUMENTS BAD_ARGUMENTS WEBHOOK``
reads the Agent Card with the 0.3 card resolver, builds the 0.3 client for
``TRANSPORT`` (``JSONRPC`` or ``HTTP+JSON``; ``STREAMING`` ``1`` or ``0``),
activates the schema-interface extension the 0.3 way (the
``X-A2A-Extensions`` header and ``Message.extensions``), and prints one JSON
object: the card as 0.3 reads it, the Task of ``describe_skill`` for
``SKILL``, the Task of ``SKILL`` called with ``ARGUMENTS`` and with
``BAD_ARGUMENTS`` (bound to the digest the card advertises), the error of
setting a push webhook at ``WEBHOOK``, and the extension headers of every
response.  The test (in skillrack's environment) judges it.

Imports only a2a-sdk 0.3 and httpx: it is never imported by the tests.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.types import (
    DataPart,
    Message,
    Part,
    PushNotificationConfig,
    Role,
    TaskPushNotificationConfig,
)

EXTENSION = (
    "https://agentic-network-management.github.io/agent-schema-interfaces/"
    "extensions/schema-interface/v1"
)


async def main(
    url: str, transport: str, streaming: str, skill: str, arguments: str, bad: str, webhook: str
) -> dict[str, Any]:
    echoed: list[dict[str, str]] = []
    errors: list[Any] = []  # the bodies of HTTP errors (the 0.3 REST client keeps only the status)

    async def record(response: httpx.Response) -> None:
        echoed.append({k: v for k, v in response.headers.items() if "a2a-extensions" in k})
        if response.status_code >= 400:
            errors.append(json.loads(await response.aread()))

    async with httpx.AsyncClient(
        timeout=30, headers={"X-A2A-Extensions": EXTENSION}, event_hooks={"response": [record]}
    ) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        [extension] = [e for e in card.capabilities.extensions or [] if e.uri == EXTENSION]
        digests = {s["skill_id"]: s["interface_digest"] for s in extension.params["skills"]}
        config = ClientConfig(
            httpx_client=http, streaming=streaming == "1", supported_transports=[transport]
        )
        client = ClientFactory(config).create(card)

        async def call(data: dict[str, Any]) -> Any:
            message = Message(
                role=Role.user,
                message_id=str(uuid.uuid4()),
                parts=[Part(root=DataPart(data=data))],
                extensions=[EXTENSION],
            )
            last: Any = None
            async for event in client.send_message(message):
                last = event[0] if isinstance(event, tuple) else event
            return last.model_dump(mode="json", by_alias=True, exclude_none=True)

        def request(arguments: str) -> dict[str, Any]:
            return {
                "skill": skill,
                "skill_version": "1.0",
                "interface_digest": digests[skill],
                "arguments": json.loads(arguments),
            }

        described = await call({"skill": "describe_skill", "arguments": {"skill_id": skill}})
        answered = await call(request(arguments))
        refused = await call(request(bad))
        push: Any = None
        try:
            await client.set_task_callback(
                TaskPushNotificationConfig(
                    task_id=answered["id"],
                    push_notification_config=PushNotificationConfig(url=webhook, token="t"),
                )
            )
        except A2AClientJSONRPCError as exc:
            push = exc.error.model_dump(mode="json", exclude_none=True)
        except A2AClientHTTPError as exc:
            push = {"status": exc.status_code, "body": errors[-1]}
        await client.close()
    return {
        "card": {
            "protocolVersion": card.protocol_version,
            "url": card.url,
            "preferredTransport": card.preferred_transport,
            "digests": digests,
        },
        "describe": described,
        "answer": answered,
        "refused": refused,
        "push": push,
        "echoed": echoed,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:8]))))
