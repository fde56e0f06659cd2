"""Each encoding of a streamed event, made once however many streams carry it.

a2a-sdk's dispatchers encode each event of a stream for that stream alone:
``to_stream_response`` (a copy of the event), then ``MessageToDict`` (a walk
of its descriptors) and ``json.dumps`` for JSON-RPC (inside its envelope) and
HTTP+JSON (an SSE event's data), or ``SerializeToString`` for gRPC.  Yet the
streams of one task (its SendStreamingMessage and every SubscribeToTask, on
any binding) receive the very same event object: a2a-sdk's event queue hands
one object to every sink.  A task watched by five clients paid for five
encodings of each event, the largest part of what delivering it costs.

:class:`EventEncodings` keeps, by object identity, the encodings of recent
events: the JSON text of the ``StreamResponse`` (JSON-RPC's ``result``
member, which each stream wraps in its own envelope, its request id, as
a2a-sdk's ``json_utils.dumps`` writes the envelope's dict; and HTTP+JSON's
SSE ``data`` as it is, which a2a-sdk writes with the same ``json_utils.dumps``)
and its protobuf bytes (gRPC's message); each is made when a stream first
asks for it, so the bytes on the wire are the ones a2a-sdk writes.  One
instance serves every binding of a server
(:func:`skillrack.serve.server.build_server`), so a task watched over
JSON-RPC and HTTP+JSON pays one JSON text.  Only status and artifact updates
are kept: nothing changes them once they are enqueued.  A Task or a Message
(a stream's first event: a snapshot of the task, with the history length
that request asked for) is encoded for its stream alone.  An entry keeps its
event alive, so no other object can take its identity while the entry lives;
at most :data:`KEPT` entries are kept, the oldest dropped first (a stream that
far behind encodes its event anew, which costs time, never correctness).
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

#: Events whose encodings are kept.  The streams of a task write an event within a turn or
#: two of the event loop after it is dispatched to them, so a quarter of a second of events
#: at 1,000 a second is plenty; few enough to weigh little (an update and its encodings:
#: ~1 kB).
KEPT = 256


def write_result(event: Event) -> str:
    """The JSON text of ``event``'s ``StreamResponse``: JSON-RPC's ``result``, HTTP+JSON's data.

    a2a-sdk's HTTP+JSON dispatcher writes ``json_utils.dumps(MessageToDict(response))``,
    the same text.
    """
    return json.dumps(message_to_dict(proto_utils.to_stream_response(event)), ensure_ascii=False)


def write_wire(event: Event) -> bytes:
    """The protobuf bytes of ``event``'s ``StreamResponse``: gRPC's message."""
    return proto_utils.to_stream_response(event).SerializeToString()


def envelope(request_id: str | int | None, result: str) -> str:
    """``json_utils.dumps(JSONRPC20Response(result=..., _id=request_id).data)``, around ``result``.

    That dict is ``{"result", "id", "jsonrpc"}`` in this order, written with
    ``json.dumps``' default separators.
    """
    written_id = json.dumps(request_id, ensure_ascii=False)
    return f'{{"result": {result}, "id": {written_id}, "jsonrpc": "2.0"}}'


class _Encoded:
    """One kept event and the encodings made of it so far."""

    __slots__ = ("event", "json", "wire")

    def __init__(self, event: Event) -> None:
        self.event = event  # held: no other object takes its identity while this lives
        self.json: str | None = None
        self.wire: bytes | None = None


class EventEncodings:
    """The encodings of recent events, by identity, each made once for every stream."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._entries: OrderedDict[int, _Encoded] = OrderedDict()

    def _entry(self, event: Event) -> _Encoded | None:
        """``event``'s entry (made now if need be); None for an event encoded per stream."""
        if not isinstance(event, TaskStatusUpdateEvent | TaskArtifactUpdateEvent):
            return None
        key = id(event)
        entry = self._entries.get(key)
        if entry is None or entry.event is not event:
            entry = self._entries[key] = _Encoded(event)
            if len(self._entries) > self._kept:
                self._entries.popitem(last=False)
        return entry

    def json(self, event: Event) -> str:
        """The JSON text of ``event``'s ``StreamResponse`` (:func:`write_result`)."""
        entry = self._entry(event)
        if entry is None:
            return write_result(event)
        if entry.json is None:
            entry.json = write_result(event)
        return entry.json

    def wire(self, event: Event) -> bytes:
        """The protobuf bytes of ``event``'s ``StreamResponse`` (:func:`write_wire`)."""
        entry = self._entry(event)
        if entry is None:
            return write_wire(event)
        if entry.wire is None:
            entry.wire = write_wire(event)
        return entry.wire

    def text(self, event: Event, request_id: str | int | None) -> str:
        """The JSON-RPC response carrying ``event`` to the stream of ``request_id``."""
        return envelope(request_id, self.json(event))


async def written(
    events: AsyncGenerator[Event, None],
    first: Event | None,
    request_id: str | int | None,
    encodings: EventEncodings,
) -> AsyncGenerator[str | dict[str, Any], None]:
    """a2a-sdk's stream of JSON-RPC responses, each event's text from ``encodings``.

    An error a2a-sdk raises mid-stream is its error response dict, as a2a-sdk yields it.
    """
    try:
        if first is not None:
            yield encodings.text(first, request_id)
        async for event in events:
            yield encodings.text(event, request_id)
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
