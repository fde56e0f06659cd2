"""Every POST body read once, within limits, and refused unless it is UTF-8 I-JSON.

:class:`BodyGuard` reads the body with a size cap and refuses bodies that are
not UTF-8 JSON, nest too deeply or carry too many parts (JSON-RPC
``-32700``/``-32600``, REST 400/413, with the draft's code), instead of
a2a-sdk's ``-32603`` carrying the Python exception text.  It then replays the
body it read to the application, so the bindings parse what was checked, and
leaves the value it parsed of a JSON-RPC request in the scope
(``PARSED_BODY_KEY``, beside the body) for the JSON-RPC route, which takes it
out and reuses it when it reads the same bytes.

Two more refusals protect what a2a-sdk does next with the body.  Every value
it will hold as a protobuf ``Struct``/``Value`` (a Part's ``data`` and
``metadata``, the Message's and the request's ``metadata``) may nest at most
:data:`~skillrack.protocol.values.DATA_PART_DEPTH` levels: deeper, protobuf's
nesting limit fails the request inside a2a-sdk (an internal error, or a task
that is never created), so it is refused here first with
``resource_limit_exceeded`` (HTTP 413 / JSON-RPC -32600), naming the field.
And an integer outside +/-(2^53-1) anywhere in the body is refused with
``input_invalid`` (HTTP 400 / JSON-RPC -32602) and a JSON Pointer to it
(``ErrorInfo.metadata.pointer``): a Data Part holds doubles, so it would be
rounded silently and the skill would run on another number.

One exception to "refused unless JSON": an empty body on a task action
(``POST /tasks/{id}:cancel`` and ``POST /tasks/{id}:subscribe``, with or
without a ``/{tenant}`` prefix) is read as ``{}``.  A2A 1.0's HTTP+JSON binding
names the task in the path, and a2a-sdk's own client sends these two with no
body at all; every other route (``/message:send``, JSON-RPC at ``/``, ...)
carries its request in the body, so an empty one there stays an error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.interface.limits import json_depth
from skillrack.protocol.values import DATA_PART_DEPTH, SAFE_INTEGER, UnsafeNumber, check_numbers
from skillrack.serve.middleware.binding_errors import JSONRPC_PATH, binding_error
from skillrack.serve.scope import PARSED_BODY_KEY


class BodyGuard:
    """Reads a POST body once, within limits, and refuses what is not UTF-8 JSON."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        max_depth: int,
        max_parts: int,
        max_data_depth: int = DATA_PART_DEPTH,
        forms: str | None = None,
    ) -> None:
        self.app = app
        #: A path prefix whose POST bodies are HTML forms (the operator console): read
        #: within ``max_bytes`` like any other, but not required to be JSON.
        self.forms = forms
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.max_parts = max_parts
        #: Nesting of one Struct/Value field; never more than a Data Part carries.
        self.max_data_depth = min(max_data_depth, DATA_PART_DEPTH)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await self._too_large(scope, send, "the request body is too large")
                return
        data = bytes(body)
        if not data and _TASK_ACTION.fullmatch(scope["path"]):
            await self.app(scope, replaying(b"{}", receive), send)
            return
        if self.forms is not None and scope["path"].startswith(self.forms):
            await self.app(scope, replaying(data, receive), send)
            return
        value, problem = self._parse(data)
        if problem is not None:
            await binding_error(
                scope,
                send,
                status=400,
                jsonrpc_code=-32700,
                code=ErrorCode.INPUT_INVALID,
                message=problem,
            )
            return
        if _parts(value) > self.max_parts:
            await self._too_large(scope, send, "the message has too many parts")
            return
        rpc = scope["path"] == JSONRPC_PATH
        if data.count(b"{") + data.count(b"[") > self.max_data_depth:
            deep = struct_too_deep(value, rpc, self.max_data_depth)
            if deep is not None:
                await self._too_large(
                    scope,
                    send,
                    f"the value at {deep} nests more deeply than an A2A Data Part carries; "
                    "flatten it",
                    pointer=deep,
                )
                return
        if _LONG_NUMBER.search(data):
            try:
                check_numbers(value)
            except UnsafeNumber as exc:
                await binding_error(
                    scope,
                    send,
                    status=400,
                    jsonrpc_code=-32602,
                    code=ErrorCode.INPUT_INVALID,
                    message=f"the integer at {exc.pointer} is outside +/-{SAFE_INTEGER} (2^53-1) "
                    "and would be rounded; send it as a string",
                    pointer=exc.pointer,
                )
                return
        replay = replaying(data, receive)
        if rpc:  # parsed once: the JSON-RPC route takes it out of the scope and reuses it
            scope[PARSED_BODY_KEY] = (data, value, replay)
        # A stream keeps this frame for as long as it is open: only the bytes to replay stay.
        del body, message, value
        await self.app(scope, replay, send)

    def _parse(self, body: bytes) -> tuple[Any, str | None]:
        try:
            text = body.decode("utf-8")
            value = _STRICT_JSON.decode(text)
        except UnicodeDecodeError:
            return None, "the request body is not valid UTF-8"
        except RecursionError:
            return None, "the request body nests too deeply"
        except _NotIJson as exc:
            return None, str(exc)
        except ValueError:
            return None, "the request body is not JSON"
        # Nesting cannot exceed the number of opening brackets (some may sit in
        # strings): below the limit, the walk would find nothing.
        if (text.count("{") + text.count("[") > self.max_depth) and json_depth(
            value, self.max_depth
        ) > self.max_depth:
            return None, "the request body nests too deeply"
        if "\\u" in text and _has_lone_surrogate(value):
            return None, "the request body holds an unpaired surrogate (not Unicode text)"
        return value, None

    @staticmethod
    async def _too_large(
        scope: Scope, send: Send, message: str, pointer: str | None = None
    ) -> None:
        await binding_error(
            scope,
            send,
            status=413,
            jsonrpc_code=-32600,
            code=ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            message=message,
            pointer=pointer,
        )


#: The HTTP+JSON task actions whose request is all in the path (A2A 1.0 section 11):
#: ``[/{tenant}]/tasks/{id}:cancel`` and ``[/{tenant}]/tasks/{id}:subscribe``.
_TASK_ACTION = re.compile(r"(?:/[^/]+)?/tasks/[^/]+:(?:cancel|subscribe)")


def replaying(data: bytes, receive: Receive) -> Replay:
    """A ``receive`` that hands the application the body already read, then defers."""
    return Replay(data, receive)


class Replay:
    """The ``receive`` :func:`replaying` gives: ``data`` first, then the server's ``receive``.

    ``replayed`` tells whether ``data`` was handed out yet: while it was not,
    whoever holds this very ``receive`` knows the body it would read is
    ``data``, without reading it (the JSON-RPC route, :mod:`skillrack.serve.bindings.jsonrpc`).
    """

    __slots__ = ("_receive", "data", "replayed")

    def __init__(self, data: bytes, receive: Receive) -> None:
        self.data = data
        self._receive = receive
        self.replayed = False

    async def __call__(self) -> Message:
        if not self.replayed:
            self.replayed = True
            return {"type": "http.request", "body": self.data, "more_body": False}
        return await self._receive()


class _NotIJson(ValueError):
    """JSON that I-JSON (RFC 7493) and protobuf cannot carry."""


def _refuse_constant(name: str) -> Any:
    raise _NotIJson(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _NotIJson("a number in the request body is out of range")
    return number


def _representable_int(text: str) -> int:
    # Beyond a double's range the value cannot be carried at all (a2a-sdk would fail
    # with "int too large to convert to float"); refuse it as bad input instead.
    if len(text.lstrip("-")) > 308:
        raise _NotIJson("a number in the request body is out of range")
    return int(text)


#: ``json.loads(text, parse_constant=..., parse_float=..., parse_int=...)`` builds a
#: decoder per call; this one is built once (``decode`` of a ``str`` is what
#: ``loads`` does with it).
_STRICT_JSON = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_representable_int
)


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


#: Sixteen digits in a row: the shortest integer beyond 2^53-1 has them, so a body
#: without such a run holds no unsafe integer and is not walked.
_LONG_NUMBER = re.compile(rb"[0-9]{16}")


def _struct_fields(value: Any, rpc: bool) -> Iterator[tuple[str, Any]]:
    """The request's values a2a-sdk holds as protobuf Struct/Value, with their pointers.

    ``params`` of a JSON-RPC request, the whole body of an HTTP+JSON one: its
    ``metadata``, its Message's ``metadata``, and each Part's ``data`` and
    ``metadata`` (SendMessage; other requests have at most ``metadata``).
    """
    base, params = (
        ("/params", value.get("params"))
        if rpc and isinstance(value, dict)
        else (
            "",
            value,
        )
    )
    if not isinstance(params, dict):
        return
    yield f"{base}/metadata", params.get("metadata")
    message = params.get("message")
    if not isinstance(message, dict):
        return
    yield f"{base}/message/metadata", message.get("metadata")
    parts = message.get("parts")
    if isinstance(parts, list):
        for i, part in enumerate(parts):
            if isinstance(part, dict):
                yield f"{base}/message/parts/{i}/data", part.get("data")
                yield f"{base}/message/parts/{i}/metadata", part.get("metadata")


def struct_too_deep(value: Any, rpc: bool, limit: int) -> str | None:
    """The pointer of the first Struct/Value field nested deeper than ``limit``, if any.

    ``rpc``: ``value`` is a JSON-RPC request (the fields are under ``params``);
    else an HTTP+JSON body, or a gRPC request as ``MessageToDict`` gives it.
    """
    for pointer, field in _struct_fields(value, rpc):
        if isinstance(field, dict | list) and json_depth(field, limit) > limit:
            return pointer
    return None


def _parts(value: Any) -> int:
    """Parts of the Message in a JSON-RPC or HTTP+JSON request body (0 when there is none)."""
    if not isinstance(value, dict):
        return 0
    params = value.get("params", value)
    message = params.get("message") if isinstance(params, dict) else None
    parts = message.get("parts") if isinstance(message, dict) else None
    return len(parts) if isinstance(parts, list) else 0
