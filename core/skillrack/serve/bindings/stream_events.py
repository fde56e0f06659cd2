"""The JSON of a streamed event, written once however many streams carry it.

a2a-sdk's JSON-RPC dispatcher writes each event of an SSE stream for that
stream alone: ``to_stream_response`` (a copy of the event), ``MessageToDict``
(a walk of its descriptors), the JSON-RPC envelope, ``json.dumps``.  Yet the
streams of one task (its SendStreamingMessage and every SubscribeToTask)
receive the very same event object: a2a-sdk's event queue hands one object to
every sink.  A task watched by five clients paid for five conversions of
each event, the largest part of what delivering it costs.

:class:`SharedEvents` keeps the JSON text of the ``result`` member (the
``StreamResponse``) of recent events, by object identity; each stream wraps
it in its own envelope (its request id), as a2a-sdk's ``json_utils.dumps``
writes the envelope's dict, so the bytes on the wire are the ones a2a-sdk
writes.  Only status and artifact updates are kept: nothing changes them once
they are enqueued.  A Task or a Message (a stream's first event: a snapshot
of the task, with the history length that request asked for) is written for
its stream alone.  An entry keeps its event alive, so no other object can
take its identity while the entry lives; at most :data:`KEPT` entries are
kept, the oldest dropped first (a stream that far behind writes its event
anew, which costs time, never correctness).
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.events.event_queue import Event
from a2a.server.jsonrpc_models import InternalError, JSONRPCError
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.types import TaskArtifactUpdateEvent, TaskStatusUpdateEvent
from a2a.utils import proto_utils
from a2a.utils.errors import A2AError

from skillrack.protocol.proto_json import message_to_dict

logger = logging.getLogger(__name__)

#: Events whose text is kept.  The streams of a task write an event within a turn or two
#: of the event loop after it is dispatched to them, so a quarter of a second of events at
#: 1,000 a second is plenty; few enough to weigh little (an update and its text: ~1 kB).
KEPT = 256


def write_result(event: Event) -> str:
    """The JSON text of ``event`` as the ``result`` of a stream's JSON-RPC response."""
    return json.dumps(message_to_dict(proto_utils.to_stream_response(event)), ensure_ascii=False)


def envelope(request_id: str | int | None, result: str) -> str:
    """``json_utils.dumps(JSONRPC20Response(result=..., _id=request_id).data)``, around ``result``.

    That dict is ``{"result", "id", "jsonrpc"}`` in this order, written with
    ``json.dumps``' default separators.
    """
    written_id = json.dumps(request_id, ensure_ascii=False)
    return f'{{"result": {result}, "id": {written_id}, "jsonrpc": "2.0"}}'


class SharedEvents:
    """The ``result`` text of recent events, by identity, written once for every stream."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._texts: OrderedDict[int, tuple[Event, str]] = OrderedDict()

    def text(self, event: Event, request_id: str | int | None) -> str:
        """The JSON-RPC response carrying ``event`` to the stream of ``request_id``."""
        if not isinstance(event, TaskStatusUpdateEvent | TaskArtifactUpdateEvent):
            return envelope(request_id, write_result(event))
        key = id(event)
        found = self._texts.get(key)
        if found is None or found[0] is not event:
            found = (event, write_result(event))
            self._texts[key] = found
            if len(self._texts) > self._kept:
                self._texts.popitem(last=False)
        return envelope(request_id, found[1])


async def written(
    events: AsyncGenerator[Event, None],
    first: Event | None,
    request_id: str | int | None,
    shared: SharedEvents,
) -> AsyncGenerator[str | dict[str, Any], None]:
    """a2a-sdk's stream of JSON-RPC responses, each event's text from ``shared``.

    An error a2a-sdk raises mid-stream is its error response dict, as a2a-sdk yields it.
    """
    try:
        if first is not None:
            yield shared.text(first, request_id)
        async for event in events:
            yield shared.text(event, request_id)
    except A2AError as exc:
        yield build_error_response(request_id, exc)


async def server_sent(
    items: AsyncGenerator[str | dict[str, Any], None], request_id: str | int | None
) -> AsyncGenerator[dict[str, str], None]:
    """The SSE events of a2a-sdk's ``event_generator``: text as it is, an error dict dumped."""
    try:
        async for item in items:
            if isinstance(item, str):
                yield {"data": item}
                continue
            event = {"data": json.dumps(item, ensure_ascii=False)}
            if "error" in item:
                event["event"] = "error"
            yield event
    except Exception as exc:  # as a2a-sdk's: the stream ends with an error event
        logger.exception("Unhandled error during JSON-RPC SSE stream")
        error: A2AError | JSONRPCError = (
            exc if isinstance(exc, A2AError | JSONRPCError) else InternalError(message=str(exc))
        )
        yield {
            "event": "error",
            "data": json.dumps(build_error_response(request_id, error), ensure_ascii=False),
        }
