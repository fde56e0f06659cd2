"""Errors before any task exists, in the binding's own form, carrying the draft's code.

Every middleware that refuses a request (authentication, rate limit, body
guard) and the error sanitizer answer through here, so that a caller reads
one shape per binding: a JSON-RPC error whose ``data`` holds a
``google.rpc.ErrorInfo`` naming the draft's code, or the HTTP+JSON error form
with the same ``ErrorInfo`` in ``details``.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Scope, Send

from skillrack.errors import ErrorCode

#: Where the JSON-RPC binding is mounted; every other path is HTTP+JSON, but MCP's.
JSONRPC_PATH = "/"
#: Where the MCP binding is served (``[server] mcp``): JSON-RPC too, with MCP's own methods.
#: Defined here, below the bindings, so that the middleware can tell its requests apart.
MCP_PATH = "/mcp"

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    408: "DEADLINE_EXCEEDED",
    413: "INVALID_ARGUMENT",
    421: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}
#: Statuses a JSON-RPC error keeps: they speak of the connection, the credential, the
#: request rate or the replica (503, draining), which HTTP clients and proxies act on, not
#: of the JSON-RPC call.
_HTTP_LEVEL = frozenset({401, 408, 421, 429, 503})


def status_name(status: int) -> str:
    """The gRPC status name (``google.rpc.Code``) of one of these HTTP statuses.

    HTTP+JSON errors carry it as ``error.status``; the gRPC binding answers with it.
    """
    return _STATUS_NAMES.get(status, "INVALID_ARGUMENT")


def error_info(code: ErrorCode, pointer: str | None = None) -> dict[str, Any]:
    """The ``google.rpc.ErrorInfo`` that carries one of the draft's codes in either binding.

    ``pointer``, when given, is a JSON Pointer into the request body to the
    value that was refused (its ``metadata.pointer``).
    """
    metadata = {"code": code.value}
    if pointer is not None:
        metadata["pointer"] = pointer
    return {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": code.value.upper(),
        "domain": "skillrack",
        "metadata": metadata,
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
    pointer: str | None = None,
) -> None:
    """An error before any task exists, in the binding's form, carrying the draft's code.

    JSON-RPC errors keep their HTTP status only for authentication (401), a
    request too slow to arrive (408), a Host the agent does not answer to
    (421), rate limiting (429) and a draining replica (503), where HTTP
    clients and proxies rely on it; other JSON-RPC errors answer 200, as JSON-RPC over HTTP does.
    MCP's endpoint answers the JSON-RPC error with every status: MCP's Streamable HTTP
    transport does so itself (400 for a body it cannot read), and its clients surface the
    error's message whatever the status.
    """
    mcp = scope["path"] == MCP_PATH
    if mcp or scope["path"] == JSONRPC_PATH:
        payload: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": jsonrpc_code,
                "message": message,
                "data": [error_info(code, pointer)],
            },
        }
        http_status = status if mcp or status in _HTTP_LEVEL else 200
    else:
        payload = {
            "error": {
                "code": status,
                "status": status_name(status),
                "message": message,
                "details": [error_info(code, pointer)],
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
