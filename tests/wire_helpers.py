"""Raw-HTTP helpers for the server tests: JSON-RPC and HTTP+JSON requests, no SDK in between."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from skillrack.requests import EXTENSION_URI

HEADERS = {"A2A-Version": "1.0", "A2A-Extensions": EXTENSION_URI}


def message(data: Any, *, task_id: str | None = None, parts: list[Any] | None = None) -> Any:
    msg: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": parts if parts is not None else [{"data": data}],
        "extensions": [EXTENSION_URI],
    }
    if task_id:
        msg["taskId"] = task_id
    return msg


def send(
    base: str,
    data: Any = None,
    *,
    binding: str = "JSONRPC",
    task_id: str | None = None,
    parts: list[Any] | None = None,
    configuration: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    params: dict[str, Any] = {"message": message(data, task_id=task_id, parts=parts)}
    if configuration:
        params["configuration"] = configuration
    hdrs = {**HEADERS, **(headers or {})}
    if binding == "JSONRPC":
        body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": params}
        return httpx.post(base + "/", json=body, headers=hdrs, timeout=30)
    return httpx.post(base + "/message:send", json=params, headers=hdrs, timeout=30)


def task_of(response: httpx.Response, binding: str = "JSONRPC") -> Any:
    body = response.json()
    if binding == "JSONRPC":
        assert "result" in body, body
        return body["result"]["task"]
    assert "task" in body, body
    return body["task"]


def invoke(base: str, data: Any, binding: str = "JSONRPC", **kwargs: Any) -> Any:
    return task_of(send(base, data, binding=binding, **kwargs), binding)


def rpc(base: str, method: str, params: Any, headers: dict[str, str] | None = None) -> Any:
    body = {"jsonrpc": "2.0", "id": "2", "method": method, "params": params}
    return httpx.post(
        base + "/", json=body, headers={**HEADERS, **(headers or {})}, timeout=30
    ).json()


def error_of(task: Any) -> Any:
    """The draft's error object from a Task's final status Message (exactly one Data Part)."""
    parts = task["status"]["message"]["parts"]
    assert len(parts) == 1 and set(parts[0]) >= {"data"}, parts
    return parts[0]["data"]["error"]


def request(skill: Any, arguments: Any, version: str, digest: str) -> dict[str, Any]:
    return {
        "skill": skill,
        "skill_version": version,
        "interface_digest": digest,
        "arguments": arguments,
    }
