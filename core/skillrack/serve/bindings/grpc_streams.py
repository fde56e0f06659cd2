"""gRPC streams whose messages are each event's protobuf bytes, encoded once for all streams.

a2a-sdk's ``GrpcHandler`` yields, for every stream of a task, its own
``to_stream_response`` copy of each event, which grpcio then serializes for
that stream alone; yet every stream of the task receives the very same event
object.  :class:`SharedStreamsHandler` yields the bytes instead, taken from
the server's :class:`~skillrack.serve.bindings.stream_events.EventEncodings`
(each status and artifact update serialized once, the bytes a2a-sdk's
message serializes to), and the servicer's response serializer
(:func:`~skillrack.serve.bindings.grpc_server.a2a_grpc_servicer`) sends bytes
as they are.  Errors are a2a-sdk's: the stream runs through
``_handle_stream``, as a2a-sdk's own streaming methods do.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

import grpc.aio
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import GrpcHandler
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import SendMessageRequest, SubscribeToTaskRequest

from skillrack.serve.bindings.stream_events import EventEncodings


def as_sent(answer: object) -> bytes:
    """A response as grpcio sends it: bytes as they are, a protobuf message serialized."""
    if isinstance(answer, bytes):
        return answer
    serialized: bytes = answer.SerializeToString()  # type: ignore[attr-defined]
    return serialized


class SharedStreamsHandler(GrpcHandler):
    """a2a-sdk's gRPC servicer; its streams' messages from the shared encodings, as bytes.

    Registered with :func:`as_sent` as the response serializer: a2a-sdk's
    generated registration would try to serialize the bytes again.
    """

    def __init__(
        self, request_handler: RequestHandler, encodings: EventEncodings | None = None
    ) -> None:
        super().__init__(request_handler)
        self.encodings = encodings if encodings is not None else EventEncodings()

    # Bytes where a2a-sdk declares StreamResponse messages: grpcio's serializer takes both.
    async def SendStreamingMessage(  # type: ignore[override]  # gRPC's name
        self, request: SendMessageRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:
        """a2a-sdk's ``SendStreamingMessage``, each event's bytes from the shared encodings."""

        async def _handler(server_context: ServerCallContext) -> AsyncIterable[bytes]:
            stream = self.request_handler.on_message_send_stream(request, server_context)
            async for event in stream:
                yield self.encodings.wire(event)

        async for item in self._handle_stream(request, context, _handler):
            yield item

    async def SubscribeToTask(  # type: ignore[override]  # gRPC's name
        self, request: SubscribeToTaskRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:
        """a2a-sdk's ``SubscribeToTask``, each event's bytes from the shared encodings."""

        async def _handler(server_context: ServerCallContext) -> AsyncIterable[bytes]:
            stream = self.request_handler.on_subscribe_to_task(request, server_context)
            async for event in stream:
                yield self.encodings.wire(event)

        async for item in self._handle_stream(request, context, _handler):
            yield item
