"""The timed store wrapper and the recovery of interrupted tasks, on their own."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus
from google.protobuf import json_format
from prometheus_client import CollectorRegistry, generate_latest

from skillrack.serve.observability.metrics import Metrics
from skillrack.serve.stores.recovery import INTERRUPTED, fail_interrupted
from skillrack.serve.stores.timed import time_operations


class Store:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def get(self, task_id: str) -> str:
        self.calls.append(task_id)
        return task_id

    async def save(self, task: Any) -> None:
        raise RuntimeError("database down")


def _exposition(metrics: Metrics) -> str:
    registry: CollectorRegistry = metrics.registry
    return generate_latest(registry).decode()


async def test_each_operation_is_observed_and_failures_are_counted() -> None:
    metrics = Metrics()
    store = Store()
    time_operations(store, metrics)
    assert await store.get("t-1") == "t-1" and store.calls == ["t-1"]
    with pytest.raises(RuntimeError, match="database down"):
        await store.save(object())
    text = _exposition(metrics)
    assert 'skillrack_task_store_operation_duration_seconds_count{operation="get"} 1.0' in text
    assert 'skillrack_task_store_operation_duration_seconds_count{operation="save"} 1.0' in text
    assert 'skillrack_task_store_errors_total{operation="save"} 1.0' in text
    assert 'skillrack_task_store_errors_total{operation="get"} 0.0' in text


def test_an_interrupted_task_fails_with_the_drafts_error_object_and_keeps_its_history() -> None:
    question = Message(role=Role.ROLE_AGENT, message_id="m-1", parts=[Part(text="which one?")])
    task = Task(
        id="t-1",
        context_id="c-1",
        status=TaskStatus(state=TaskState.TASK_STATE_WORKING, message=question),
    )
    fail_interrupted(task)
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert [m.message_id for m in task.history] == ["m-1"]
    error = json_format.MessageToDict(task.status.message.parts[0].data)["error"]
    assert error["code"] == "output_invalid" and error["message"] == INTERRUPTED
    assert task.status.message.task_id == "t-1" and task.status.HasField("timestamp")
