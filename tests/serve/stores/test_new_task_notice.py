"""NewTaskNotice tells the store about every new task's id, whoever made the id."""

from __future__ import annotations

import asyncio
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.types import Message, Part, Role, SendMessageRequest

from skillrack.serve.stores.new_task_notice import NewTaskNotice


class _Store:
    def __init__(self) -> None:
        self.noted: list[str] = []

    def note_new(self, task_id: str, context: ServerCallContext) -> None:
        self.noted.append(task_id)


def _request(task_id: str = "") -> SendMessageRequest:
    message = Message(message_id="m", role=Role.ROLE_USER, parts=[Part(text="hi")])
    if task_id:
        message.task_id = task_id
    return SendMessageRequest(message=message)


def _build(store: _Store, params: SendMessageRequest, **given: Any) -> str | None:
    notice = NewTaskNotice(store)  # type: ignore[arg-type]
    built = asyncio.run(notice.build(ServerCallContext(), params, **given))
    return built.task_id


def test_an_id_a2a_sdk_generates_is_noted() -> None:
    store = _Store()
    task_id = _build(store, _request())
    assert task_id and store.noted == [task_id]


def test_an_id_the_blocking_path_gives_for_a_new_task_is_noted() -> None:
    store = _Store()
    task_id = _build(store, _request(), task_id="made-here", context_id="c")
    assert task_id == "made-here" and store.noted == ["made-here"]


def test_the_task_a_message_names_is_not_new() -> None:
    store = _Store()
    _build(store, _request("t-1"), task_id="t-1")
    assert store.noted == []
