"""Middleware in front of the A2A bindings: who is calling, how often, with what body.

:class:`AuthenticationGate` runs every authentication plugin (``authn.py``)
for every request except the Agent Card, answers a refused request with HTTP
401, a ``WWW-Authenticate`` challenge and the draft's ``authorization_failed``
code in the binding's error form, and puts the caller in the ASGI scope, where
the context builder hands it to a2a-sdk and the dispatcher.

:class:`RateLimit` caps requests per minute per caller (the authenticated
identity, else the client address) and answers HTTP 429 with
``resource_limit_exceeded``; the threshold is not disclosed.

Both answer in the binding's own form through :func:`binding_error`, as does
:class:`BodyGuard`, which reads each POST body once with a size cap and
refuses bodies that are not UTF-8 JSON, nest too deeply or carry too many
parts (JSON-RPC ``-32700``/``-32600``, REST 400/413, with the draft's code),
instead of a2a-sdk's ``-32603`` carrying the Python exception text.
:class:`ExtensionEcho` writes ``A2A-Extensions`` on the response when the
request activated the schema-interface extension (a2a-sdk never echoes it).
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from typing import Any

import pluggy
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.interface.limits import json_depth
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.context import Caller
from skillrack.serve.security.authn import RequestCredentials, authenticate

ACTIVATED_SCOPE_KEY = "skillrack.activated_extensions"

JSONRPC_PATH = "/"
CALLER_SCOPE_KEY = "skillrack.caller"
#: JSON-RPC has no code for authentication; -32000 is the first implementation-defined one.
JSONRPC_UNAUTHENTICATED = -32000

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
}


def error_info(code: ErrorCode) -> dict[str, Any]:
    return {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": code.value.upper(),
        "domain": "skillrack",
        "metadata": {"code": code.value},
    }


async def binding_error(
    scope: Scope,
    send: Send,
    *,
    status: int,
    jsonrpc_code: int,
    code: ErrorCode,
    message: str,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """An error before any task exists, in the binding's form, carrying the draft's code.

    JSON-RPC errors keep their HTTP status only for authentication (401) and
    rate limiting (429), where HTTP clients and proxies rely on it; other
    JSON-RPC errors answer 200, as JSON-RPC over HTTP does.
    """
    if scope["path"] == JSONRPC_PATH:
        payload: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": jsonrpc_code, "message": message, "data": [error_info(code)]},
        }
        http_status = status if status in (401, 429) else 200
    else:
        payload = {
            "error": {
                "code": status,
                "status": _STATUS_NAMES.get(status, "INVALID_ARGUMENT"),
                "message": message,
                "details": [error_info(code)],
            }
        }
        http_status = status
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": http_status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class AuthenticationGate:
    def __init__(self, app: ASGIApp, *, manager: pluggy.PluginManager, public: set[str]) -> None:
        self.app = app
        self.manager = manager
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        client = scope.get("client")
        outcome = await authenticate(
            self.manager,
            RequestCredentials(
                headers=headers, client_host=client[0] if client else None, path=scope["path"]
            ),
        )
        if outcome.caller is None:
            challenges = [(b"www-authenticate", c.encode("latin-1")) for c in outcome.challenges]
            await binding_error(
                scope,
                send,
                status=401,
                jsonrpc_code=JSONRPC_UNAUTHENTICATED,
                code=ErrorCode.AUTHORIZATION_FAILED,
                message=outcome.message,
                headers=challenges,
            )
            return
        scope[CALLER_SCOPE_KEY] = outcome.caller
        await self.app(scope, receive, send)


class RateLimit:
    """A sliding one-minute window per caller; cheap enough to run on every request."""

    def __init__(self, app: ASGIApp, *, per_minute: int, public: set[str]) -> None:
        self.app = app
        self.per_minute = per_minute
        self.public = public
        self._seen: dict[str, deque[float]] = {}

    def _key(self, scope: Scope) -> str:
        caller: Caller | None = scope.get(CALLER_SCOPE_KEY)
        if caller is not None and caller.authenticated:
            return f"id:{caller.tenant}/{caller.identity}"
        client = scope.get("client")
        return f"ip:{client[0] if client else '?'}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public:
            await self.app(scope, receive, send)
            return
        now = time.monotonic()
        window = self._seen.setdefault(self._key(scope), deque())
        while window and now - window[0] > 60:
            window.popleft()
        if len(window) >= self.per_minute:
            await binding_error(
                scope,
                send,
                status=429,
                jsonrpc_code=-32000,
                code=ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                message="too many requests",
                headers=[(b"retry-after", str(int(61 - (now - window[0]))).encode())],
            )
            return
        window.append(now)
        if len(self._seen) > 100_000:  # bound memory: forget idle callers
            for key in [k for k, w in self._seen.items() if not w or now - w[-1] > 60]:
                del self._seen[key]
        await self.app(scope, receive, send)


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


class ExtensionEcho:
    """Adds ``A2A-Extensions`` to the response when the request activated the extension."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        activated: set[str] = scope.setdefault(ACTIVATED_SCOPE_KEY, set())

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start" and EXTENSION_URI in activated:
                MutableHeaders(scope=message).append("A2A-Extensions", EXTENSION_URI)
            await send(message)

        await self.app(scope, receive, send_with_header)
