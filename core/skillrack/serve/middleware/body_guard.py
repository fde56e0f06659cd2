"""Every POST body read once, within limits, and refused unless it is UTF-8 I-JSON.

:class:`BodyGuard` reads the body with a size cap and refuses bodies that are
not UTF-8 JSON, nest too deeply or carry too many parts (JSON-RPC
``-32700``/``-32600``, REST 400/413, with the draft's code), instead of
a2a-sdk's ``-32603`` carrying the Python exception text.  It then replays the
body it read to the application, so the bindings parse what was checked.
"""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.interface.limits import json_depth
from skillrack.serve.middleware.binding_errors import binding_error


class BodyGuard:
    """Reads a POST body once, within limits, and refuses what is not UTF-8 JSON."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, max_depth: int, max_parts: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.max_parts = max_parts

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
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": data, "more_body": False}
            return await receive()

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
    async def _too_large(scope: Scope, send: Send, message: str) -> None:
        await binding_error(
            scope,
            send,
            status=413,
            jsonrpc_code=-32600,
            code=ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            message=message,
        )


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


def _parts(value: Any) -> int:
    """Parts of the Message in a JSON-RPC or HTTP+JSON request body (0 when there is none)."""
    if not isinstance(value, dict):
        return 0
    params = value.get("params", value)
    message = params.get("message") if isinstance(params, dict) else None
    parts = message.get("parts") if isinstance(message, dict) else None
    return len(parts) if isinstance(parts, list) else 0
