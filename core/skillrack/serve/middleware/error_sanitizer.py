"""Keep a2a-sdk's internal error text away from callers.

a2a-sdk 1.3 answers malformed requests with the Python or protobuf exception
text (``"'NoneType' object is not iterable"``, ``"Invalid request. Extra
fields: set(), ..."``) in JSON-RPC ``message``/``data`` and in REST error
messages.  That text describes skillrack's internals, not the caller's
mistake.  This middleware rewrites those error bodies (and only those: the
A2A errors such as ``TaskNotFoundError`` keep their messages) to a fixed
message per code, keeps machine-readable reasons and field names, and adds the
draft's ``input_invalid`` code where the binding allows it.  It also answers
unknown routes and methods with JSON instead of plain text.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.serve.middleware.binding_errors import error_info
from skillrack.serve.scope import OWN_ERROR as OWN_ERROR

JSONRPC_MESSAGES = {
    -32700: "the request body is not valid JSON",
    -32600: "invalid request",
    -32601: "method not found",
    -32602: "invalid parameters",
    -32603: "internal error",
}
REST_STATUSES = {"INVALID_ARGUMENT", "INTERNAL", "UNKNOWN"}
REST_MESSAGES = {
    400: "invalid request",
    404: "not found",
    405: "method not allowed",
    500: "internal error",
}
_PREFIX = b'{"error"'


def _clean_details(details: Any, add_code: bool) -> list[Any]:
    cleaned: list[Any] = []
    ours = False
    for entry in details if isinstance(details, list) else []:
        if not isinstance(entry, dict):
            continue
        kind = entry.get("@type", "")
        if entry.get("domain") == "skillrack":
            ours = True
            cleaned.append(entry)
        elif kind.endswith("google.rpc.ErrorInfo"):
            cleaned.append({k: entry[k] for k in ("@type", "reason", "domain") if k in entry})
        elif kind.endswith("google.rpc.BadRequest"):
            violations = [
                {"field": v.get("field", ""), "description": "invalid value"}
                for v in entry.get("fieldViolations", [])
                if isinstance(v, dict)
            ]
            cleaned.append({"@type": kind, "fieldViolations": violations})
    if add_code and not ours:
        cleaned.append(error_info(ErrorCode.INPUT_INVALID))
    return cleaned


def sanitize(payload: Any) -> Any:
    """The error body with internal text replaced; other bodies unchanged."""
    if not isinstance(payload, dict) or not isinstance(payload.get("error"), dict):
        return payload
    error = payload["error"]
    if "jsonrpc" in payload or "id" in payload:
        code = error.get("code")
        if code in JSONRPC_MESSAGES and not _ours(error.get("data")):
            error["message"] = JSONRPC_MESSAGES[code]
            error["data"] = _clean_details(error.get("data"), add_code=code != -32603)
    elif error.get("status") in REST_STATUSES and not _ours(error.get("details")):
        status = error.get("code")
        error["message"] = REST_MESSAGES.get(status, "invalid request")
        error["details"] = _clean_details(error.get("details"), add_code=status == 400)
    return payload


def is_error_body(body: bytes) -> bool:
    """Whether a response body (its first chunk) is an error object.

    a2a-sdk's 1.0 answers put ``error`` first; its 0.3 layer writes
    ``{"jsonrpc": "2.0", "id": ..., "error": ...}``, and a success has
    ``result`` there instead.  Inside a JSON string a quote is escaped, so
    ``"error":`` found before any ``"result":`` is the member itself.
    """
    if body.startswith(_PREFIX):
        return True
    if not body.startswith(b'{"jsonrpc"'):
        return False
    error, result = body.find(b'"error":'), body.find(b'"result":')
    return error != -1 and (result == -1 or error < result)


def _ours(details: Any) -> bool:
    if isinstance(details, dict):  # A2A 0.3: a2a-sdk's 0.3 layer passes ``data`` as given
        return details.get("origin") == OWN_ERROR["origin"]
    return isinstance(details, list) and any(
        isinstance(d, dict)
        and (
            d.get("domain") == "skillrack"
            or (isinstance(d.get("metadata"), dict) and d["metadata"].get("origin") == "skillrack")
        )
        for d in details
    )


def _content_type(start: Message) -> bytes:
    """The response's ``content-type`` (the last one given), read only for an error body."""
    content_type: bytes = dict(start["headers"]).get(b"content-type", b"")
    return content_type


class ErrorSanitizer:
    """Holds a JSON error body back, rewrites it with :func:`sanitize`, then sends it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        held: list[bytes] = []
        holding = False

        async def filtered(message: Message) -> None:
            nonlocal start, holding
            if message["type"] == "http.response.start":
                start = message
                return
            if start is not None and not holding:
                body = message.get("body", b"")
                holding = is_error_body(body) and b"json" in _content_type(start)
                if not holding:
                    await send(start)
                    start = None
                    await send(message)
                    return
            if not holding:
                await send(message)
                return
            held.append(message.get("body", b""))
            if message.get("more_body"):
                return
            assert start is not None
            raw = b"".join(held)
            try:
                body = json.dumps(sanitize(json.loads(raw))).encode()
            except ValueError:
                body = raw
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, filtered)
